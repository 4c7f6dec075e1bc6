"""Row kernels: softmax, LayerNorm, RMSNorm and reductions, tiled by rows, in two variants.

Both variants tile rows by ``row_tile``; they differ in how a row's statistics are gathered:

- ``"two_pass"``: read the whole row for each statistic (softmax: max, then sum of exp;
  LayerNorm: mean, then variance of the centred row), then write.
- ``"online"``: one pass over column tiles of ``col_tile`` keeps running statistics
  (softmax: running max and rescaled sum; LayerNorm: Welford / Chan merge of count, mean and M2;
  RMSNorm and reductions: running sum of squares, sum or max), then one write pass.

Loop nest (online softmax)::

    for r0 in range(0, rows, row_tile):
        m = -inf; l = 0
        for c0 in range(0, n, col_tile):
            m_new = max(m, rowmax(x[r0:, c0:])); l = l * exp(m - m_new) + rowsum(exp(x - m_new))
            m = m_new
        y[r0:] = exp(x[r0:] - m) / l
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from workbench.execution.backend import Backend, as_operand, resolve_backend
from workbench.execution.errors import ExecutionError, check_sizes
from workbench.execution.trace import Trace, tile_start, tile_stop
from workbench.ir.ops import LAYERNORM_FLOPS, RMSNORM_FLOPS, SOFTMAX_FLOPS

__all__ = ["ROW_METHODS", "layernorm", "reduce", "rmsnorm", "softmax"]

ROW_METHODS = ("two_pass", "online")
_REDUCE_KINDS = ("sum", "mean", "max")


def _col_tiles(n: int, col_tile: int) -> range:
    return range(0, n, col_tile)


def _softmax_tile(x: Any, method: str, col_tile: int, xp: Any) -> Any:
    # NOTE: with one column chunk the online form is the two-pass form (one exp per element).
    if method == "two_pass" or col_tile >= x.shape[1]:
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    m = xp.full((x.shape[0], 1), -xp.inf, dtype=xp.float32)
    l_sum = xp.zeros_like(m)
    for c0 in _col_tiles(x.shape[1], col_tile):
        blk = x[:, c0 : c0 + col_tile]
        m_new = xp.maximum(m, blk.max(axis=-1, keepdims=True))
        l_sum = l_sum * xp.exp(m - m_new) + xp.exp(blk - m_new).sum(axis=-1, keepdims=True)
        m = m_new
    return xp.exp(x - m) / l_sum


def _moments(x: Any, method: str, col_tile: int, xp: Any) -> tuple[Any, Any]:
    """(mean, biased variance) per row; online merges column tiles with Chan's formula."""
    if method == "two_pass":
        mean = x.mean(axis=-1, keepdims=True)
        return mean, ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    count = 0
    mean = xp.zeros((x.shape[0], 1), dtype=xp.float32)
    m2 = xp.zeros_like(mean)
    for c0 in _col_tiles(x.shape[1], col_tile):
        blk = x[:, c0 : c0 + col_tile]
        nb = blk.shape[1]
        mean_b = blk.mean(axis=-1, keepdims=True)
        m2_b = ((blk - mean_b) ** 2).sum(axis=-1, keepdims=True)
        total = count + nb
        delta = mean_b - mean
        mean = mean + delta * xp.float32(nb / total)
        m2 = m2 + m2_b + delta * delta * xp.float32(count * nb / total)
        count = total
    return mean, m2 / xp.float32(count)


def _mean_square(x: Any, method: str, col_tile: int, xp: Any) -> Any:
    if method == "two_pass":
        return (x * x).mean(axis=-1, keepdims=True)
    acc = xp.zeros((x.shape[0], 1), dtype=xp.float32)
    for c0 in _col_tiles(x.shape[1], col_tile):
        blk = x[:, c0 : c0 + col_tile]
        acc += (blk * blk).sum(axis=-1, keepdims=True)
    return acc / xp.float32(x.shape[1])


def _reduce_tile(x: Any, kind: str, method: str, col_tile: int, xp: Any) -> Any:
    if method == "two_pass":
        return getattr(x, kind)(axis=-1)
    if kind == "max":
        acc = xp.full((x.shape[0],), -xp.inf, dtype=xp.float32)
        for c0 in _col_tiles(x.shape[1], col_tile):
            acc = xp.maximum(acc, x[:, c0 : c0 + col_tile].max(axis=-1))
        return acc
    acc = xp.zeros((x.shape[0],), dtype=xp.float32)
    for c0 in _col_tiles(x.shape[1], col_tile):
        acc += x[:, c0 : c0 + col_tile].sum(axis=-1)
    return acc / xp.float32(x.shape[1]) if kind == "mean" else acc


def _run_rows(
    x: Any,
    tile_fn: Callable[[Any, Any], Any],
    *,
    kernel: str,
    flops_per_elem: int,
    row_tile: int,
    col_tile: int,
    method: str,
    reduced: bool,
    backend: Backend | str | None,
    trace: Trace | None,
) -> Any:
    """Shared row-tiling driver: flatten to (rows, n), apply tile_fn per row tile, reshape."""
    if method not in ROW_METHODS:
        raise ExecutionError(f"{kernel}: method must be one of {ROW_METHODS}, got {method!r}")
    check_sizes(kernel, row_tile=row_tile, col_tile=col_tile)
    bk = resolve_backend(backend)
    xp = bk.xp
    src = as_operand(xp, x, kernel, "x")
    if src.ndim == 0 or src.shape[-1] == 0:
        raise ExecutionError(f"{kernel}: need at least one element along the last axis")
    n = src.shape[-1]
    rows = math.prod(src.shape[:-1])
    flat = src.reshape(rows, n)
    out = xp.empty((rows,) if reduced else (rows, n), dtype=xp.float32)
    for i, r0 in enumerate(range(0, rows, row_tile)):
        t0 = tile_start(trace, bk)
        out[r0 : r0 + row_tile] = tile_fn(flat[r0 : r0 + row_tile], xp)
        nr = min(row_tile, rows - r0)
        tile_stop(
            trace,
            bk,
            t0,
            kernel=kernel,
            tile_index=(i,),
            bytes_touched=4 * nr * (n + (1 if reduced else n)),
            flops=flops_per_elem * nr * n,
        )
    return out.reshape(src.shape[:-1] if reduced else src.shape)


def softmax(
    x: Any,
    *,
    row_tile: int = 64,
    col_tile: int = 1024,
    method: str = "online",
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Softmax over the last axis, tiled by rows (``method``: ``online`` or ``two_pass``).

    Args:
        x: Input (any shape; rows are all leading axes).
        row_tile: Rows per tile.
        col_tile: Columns per step of the online variant (elements).
        method: ``"online"`` (one statistics pass) or ``"two_pass"``.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per row tile, or None.

    Returns:
        float32 array of ``x``'s shape.
    """
    return _run_rows(
        x,
        lambda t, xp: _softmax_tile(t, method, col_tile, xp),
        kernel="softmax",
        flops_per_elem=SOFTMAX_FLOPS,
        row_tile=row_tile,
        col_tile=col_tile,
        method=method,
        reduced=False,
        backend=backend,
        trace=trace,
    )


def _affine(xp: Any, t: Any, x: Any, kernel: str, name: str) -> Any:
    """A norm's per-column scale or shift: None, or a float32 vector as long as ``x``'s rows."""
    if t is None:
        return None
    t = as_operand(xp, t, kernel, name)
    cols = getattr(x, "shape", (None,))[-1] if getattr(x, "ndim", 1) else None
    if t.ndim != 1 or (cols is not None and t.shape[0] != cols):
        raise ExecutionError(
            f"{kernel}: operand {name} must have shape ({cols},) (one per column of x), "
            f"got {tuple(t.shape)}"
        )
    return t


def layernorm(
    x: Any,
    gamma: Any = None,
    beta: Any = None,
    *,
    eps: float = 1e-5,
    row_tile: int = 64,
    col_tile: int = 1024,
    method: str = "online",
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """LayerNorm over the last axis (biased variance), tiled by rows; online uses Welford/Chan.

    Args:
        x: Input (any shape).
        gamma: Scale, shape (n,), or None.
        beta: Shift, shape (n,), or None.
        eps: Added to the variance.
        row_tile: Rows per tile.
        col_tile: Columns per step of the online variant (elements).
        method: ``"online"`` or ``"two_pass"``.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per row tile, or None.

    Returns:
        float32 array of ``x``'s shape.
    """
    xp = resolve_backend(backend).xp
    g = _affine(xp, gamma, x, "layernorm", "gamma")
    b = _affine(xp, beta, x, "layernorm", "beta")

    def tile(t: Any, xp: Any) -> Any:
        mean, var = _moments(t, method, col_tile, xp)
        y = (t - mean) / xp.sqrt(var + xp.float32(eps))
        y = y if g is None else y * g
        return y if b is None else y + b

    return _run_rows(
        x,
        tile,
        kernel="layernorm",
        flops_per_elem=LAYERNORM_FLOPS,
        row_tile=row_tile,
        col_tile=col_tile,
        method=method,
        reduced=False,
        backend=backend,
        trace=trace,
    )


def rmsnorm(
    x: Any,
    gamma: Any = None,
    *,
    eps: float = 1e-6,
    row_tile: int = 64,
    col_tile: int = 1024,
    method: str = "online",
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """RMSNorm over the last axis, tiled by rows (online: running sum of squares).

    Args:
        x: Input (any shape).
        gamma: Scale, shape (n,), or None.
        eps: Added to the mean square.
        row_tile: Rows per tile.
        col_tile: Columns per step of the online variant (elements).
        method: ``"online"`` or ``"two_pass"``.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per row tile, or None.

    Returns:
        float32 array of ``x``'s shape.
    """
    xp = resolve_backend(backend).xp
    g = _affine(xp, gamma, x, "rmsnorm", "gamma")

    def tile(t: Any, xp: Any) -> Any:
        y = t / xp.sqrt(_mean_square(t, method, col_tile, xp) + xp.float32(eps))
        return y if g is None else y * g

    return _run_rows(
        x,
        tile,
        kernel="rmsnorm",
        flops_per_elem=RMSNORM_FLOPS,
        row_tile=row_tile,
        col_tile=col_tile,
        method=method,
        reduced=False,
        backend=backend,
        trace=trace,
    )


def reduce(
    x: Any,
    kind: str,
    *,
    row_tile: int = 64,
    col_tile: int = 1024,
    method: str = "online",
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Sum, mean or max over the last axis, tiled by rows (online: running accumulator).

    Args:
        x: Input (any shape).
        kind: ``"sum"``, ``"mean"`` or ``"max"``.
        row_tile: Rows per tile.
        col_tile: Columns per step of the online variant (elements).
        method: ``"online"`` or ``"two_pass"``.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per row tile, or None.

    Returns:
        float32 array of ``x``'s shape without its last axis.
    """
    if kind not in _REDUCE_KINDS:
        raise ExecutionError(f"reduce: kind must be one of {_REDUCE_KINDS}, got {kind!r}")
    return _run_rows(
        x,
        lambda t, xp: _reduce_tile(t, kind, method, col_tile, xp),
        kernel=f"reduce.{kind}",
        flops_per_elem=1,
        row_tile=row_tile,
        col_tile=col_tile,
        method=method,
        reduced=True,
        backend=backend,
        trace=trace,
    )
