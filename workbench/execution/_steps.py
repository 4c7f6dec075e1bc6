"""Fused elementwise steps of a mapped kernel (epilogues and chains), applied tile by tile.

A kernel's ``ops`` name the graph ops it fuses. Each elementwise op after the head becomes one
:class:`Step`: its kind, and the names of the extra operands it reads (a residual, a gate, a bias
vector). Operands are pre-shaped by :func:`~workbench.execution._inputs.make_inputs` to broadcast
against the kernel's 2-D output view ``(R, C)`` (or ``(batch, m, n)``):

* ``(R, C)`` (or ``(batch, m, n)``): a full tensor, sliced ``[rows, cols]``;
* ``(C,)``: one value per column (a bias along the last axis), sliced ``[cols]``;
* ``(R, 1)``: one value per row (a channel that is not the last axis), sliced ``[rows]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workbench.execution.elementwise import ACTIVATIONS, activate
from workbench.execution.errors import ExecutionError
from workbench.execution.quant import round_to_format
from workbench.ir.graph import Graph
from workbench.ir.ops import Dequantize, Elementwise, Linear, Op, Quantize

__all__ = ["Step", "apply_steps", "fused_steps", "slice_operand"]

_ROPE_COS, _ROPE_SIN = math.cos(0.5), math.sin(0.5)


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One fused elementwise step.

    Attributes:
        kind: An elementwise kind (``relu``, ``add``, ``bias``, ``affine`` ...), ``quantize`` or
            ``dequantize``.
        operands: Names of the extra inputs it reads (keys of the inputs mapping).
        chain_first: The running value is the op's first input (matters for sub, div, swiglu).
        to: Target format of a ``quantize`` step.
    """

    kind: str
    operands: tuple[str, ...] = ()
    chain_first: bool = True
    to: str = ""


def _step(op: Op, chain: str) -> Step:
    if isinstance(op, Quantize):
        return Step(kind="quantize", to=op.to)
    if isinstance(op, Dequantize):
        return Step(kind="dequantize")
    if not isinstance(op, Elementwise):
        raise ExecutionError(f"{op.name}: {op.kind} cannot run as a fused elementwise step")
    if op.op == "bias":
        return Step(kind="bias", operands=(f"{op.name}.bias",))
    if op.op == "affine":
        return Step(kind="affine", operands=(f"{op.name}.scale", f"{op.name}.shift"))
    others = tuple(i for i in op.inputs if i != chain)
    return Step(kind=op.op, operands=others, chain_first=op.inputs[0] == chain)


def fused_steps(graph: Graph, names: tuple[str, ...], *, head: Op | None) -> tuple[Step, ...]:
    """The steps of the ops ``names`` applied after ``head`` (or as a chain when head is None).

    Args:
        graph: The graph the kernel came from.
        names: The kernel's op names after its head (or all of them for a chain).
        head: The head op (a Linear's bias becomes the first step), or None.

    Returns:
        Steps in order.
    """
    steps: list[Step] = []
    if isinstance(head, Linear) and head.bias:
        steps.append(Step(kind="bias", operands=(f"{head.name}.bias",)))
    chain = head.name if head is not None else None
    for name in names:
        op = graph.op(name)
        if chain is None:
            chain = op.inputs[0] if op.inputs else name
        steps.append(_step(op, chain))
        chain = op.name
    return tuple(steps)


def slice_operand(x: Any, rows: slice, cols: slice) -> Any:
    """The part of a pre-shaped operand that lines up with output tile ``[rows, cols]``."""
    if x.ndim == 1:
        return x[cols]
    if x.ndim == 2 and x.shape[1] == 1:
        return x[rows]
    if x.ndim == 2:
        return x[rows, cols]
    return x[..., rows, cols]


def _binary(kind: str, a: Any, b: Any, xp: Any) -> Any:
    if kind == "add":
        return a + b
    if kind == "sub":
        return a - b
    if kind == "mul":
        return a * b
    if kind == "div":
        return a / b
    return ACTIVATIONS["silu"](a, xp) * b  # swiglu


def _rope(y: Any, xp: Any) -> Any:
    """Rotate adjacent column pairs by a fixed angle (the cost and shape of RoPE)."""
    if y.shape[-1] % 2:
        return y * xp.float32(_ROPE_COS)
    pairs = y.reshape(*y.shape[:-1], -1, 2)
    swapped = xp.stack((-pairs[..., 1], pairs[..., 0]), axis=-1).reshape(y.shape)
    return y * xp.float32(_ROPE_COS) + swapped * xp.float32(_ROPE_SIN)


def _quantize(y: Any, to: str, xp: Any) -> Any:
    """Round a tile to ``to`` with one dynamic scale per tile (value returned dequantized)."""
    if to in ("int8", "int4"):
        top = 127.0 if to == "int8" else 7.0
        amax = float(xp.abs(y).max()) if y.size else 0.0
        scale = xp.float32((amax / top) or 1.0)
        return xp.clip(xp.rint(y / scale), -top, top) * scale
    return round_to_format(y, to, xp)


def apply_steps(y: Any, steps: tuple[Step, ...], ops: dict[str, Any], xp: Any) -> Any:
    """Apply ``steps`` to one tile ``y``; ``ops`` holds the tile's slices of the operands."""
    for st in steps:
        args = [ops[name] for name in st.operands]
        if st.kind in ("identity", "dequantize"):
            continue
        if st.kind in ACTIVATIONS:
            y = activate(st.kind, y, xp)
        elif st.kind == "bias":
            y = y + args[0]
        elif st.kind == "affine":
            y = y * args[0] + args[1]
        elif st.kind == "scale":
            y = y * xp.float32(0.125)
        elif st.kind == "clip":
            y = xp.clip(y, xp.float32(-6.0), xp.float32(6.0))
        elif st.kind == "rope":
            y = _rope(y, xp)
        elif st.kind == "quantize":
            y = _quantize(y, st.to, xp)
        else:
            a, b = (y, args[0]) if st.chain_first else (args[0], y)
            y = _binary(st.kind, a, b, xp)
    return y
