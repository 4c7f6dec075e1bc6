"""Elementwise kinds and fused elementwise chains.

A fused chain applies several unary kinds to one tile before writing it back, so the tensor
crosses memory once instead of once per kind::

    for t in tiles(x):            # tiles of `tile` elements over the flattened tensor
        y = x[t]
        for kind in kinds: y = f_kind(y)
        out[t] = y

GELU uses the tanh approximation (the form the ``ELEMENTWISE_FLOPS`` table counts).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from workbench.execution.backend import Backend, as_operand, resolve_backend
from workbench.execution.errors import ExecutionError, check_sizes
from workbench.execution.trace import Trace, tile_start, tile_stop
from workbench.ir.ops import ELEMENTWISE_FLOPS

__all__ = ["ACTIVATIONS", "activate", "check_kinds", "elementwise_chain"]

_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu(x: Any, xp: Any) -> Any:
    return (
        0.5
        * x
        * (1.0 + xp.tanh(x.dtype.type(_GELU_C) * (x + x.dtype.type(0.044715) * (x * x * x))))
    )


def _sigmoid(x: Any, xp: Any) -> Any:
    return 1.0 / (1.0 + xp.exp(-x))


ACTIVATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "identity": lambda x, xp: x,
    "relu": lambda x, xp: xp.maximum(x, 0),
    "gelu": _gelu,
    "silu": lambda x, xp: x * _sigmoid(x, xp),
    "sigmoid": _sigmoid,
    "tanh": lambda x, xp: xp.tanh(x),
    "exp": lambda x, xp: xp.exp(x),
}


def check_kinds(kinds: tuple[str, ...], *, where: str) -> None:
    """Raise ExecutionError naming the first kind that is not in :data:`ACTIVATIONS`."""
    for kind in kinds:
        if kind not in ACTIVATIONS:
            raise ExecutionError(
                f"{where}: unknown elementwise kind {kind!r} (known: {', '.join(ACTIVATIONS)})"
            )


def activate(kind: str, x: Any, xp: Any) -> Any:
    """Apply one unary kind (a key of :data:`ACTIVATIONS`) to an array, keeping its dtype."""
    check_kinds((kind,), where="activate")
    return ACTIVATIONS[kind](x, xp).astype(x.dtype, copy=False)


def elementwise_chain(
    x: Any,
    kinds: tuple[str, ...],
    *,
    tile: int = 1 << 16,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Apply a chain of unary kinds in one pass over tiles of a tensor.

    Args:
        x: Input tensor (computed in float32).
        kinds: Unary kinds applied left to right (keys of :data:`ACTIVATIONS`).
        tile: Elements per tile of the flattened tensor.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per tile, or None.

    Returns:
        float32 array of ``x``'s shape.

    Example:
        >>> import numpy as np
        >>> y = elementwise_chain(np.array([-1.0, 2.0]), ("relu", "exp"), backend="numpy")
        >>> [round(float(v), 4) for v in y]
        [1.0, 7.3891]
    """
    check_kinds(kinds, where="elementwise_chain")
    check_sizes("elementwise_chain", tile=tile)
    bk = resolve_backend(backend)
    xp = bk.xp
    src = as_operand(xp, x, "elementwise", "x")
    flat = src.reshape(-1)
    out = xp.empty_like(flat)
    per_elem = sum(ELEMENTWISE_FLOPS[k] for k in kinds)
    for index, lo in enumerate(range(0, flat.size, tile)):
        t0 = tile_start(trace, bk)
        y = flat[lo : lo + tile]
        for kind in kinds:
            y = activate(kind, y, xp)
        out[lo : lo + tile] = y
        n = min(tile, flat.size - lo)
        tile_stop(
            trace,
            bk,
            t0,
            kernel="elementwise",
            tile_index=(index,),
            bytes_touched=8 * n,
            flops=per_elem * n,
        )
    return out.reshape(src.shape)
