"""Small vector-engine workloads: one row-wise op, or a chain of elementwise ops.

The engine probes (:mod:`workbench.execution.probe`) and the validation suite
(:mod:`workbench.tuning`) time these on their own; each wraps them in its own graph.
"""

from __future__ import annotations

from workbench.ir import ops as O

__all__ = ["ROW_OPS", "elementwise_chain", "row_op"]

#: The row-wise ops by name: each normalises or reduces one row of ``cols`` elements.
ROW_OPS: dict[str, type[O.LayerNorm | O.RMSNorm | O.Softmax]] = {
    "layernorm": O.LayerNorm,
    "rmsnorm": O.RMSNorm,
    "softmax": O.Softmax,
}


def row_op(kind: str, rows: int, cols: int, dtype: str = "fp32") -> O.Op:
    """One row-wise op (``layernorm``, ``rmsnorm``, ``softmax``) named ``kind`` over ``x``.

    >>> row_op("softmax", 4, 8).shape
    (4, 8)
    """
    return ROW_OPS[kind](name=kind, inputs=("x",), shape=(rows, cols), dtype=dtype)


def elementwise_chain(
    rows: int, cols: int, kinds: tuple[str, ...], dtype: str = "fp32"
) -> tuple[O.Op, ...]:
    """Elementwise ops ``e0, e1, ...`` applied in turn to ``x``; ``add``/``mul`` also read ``y``.

    >>> [(op.name, op.inputs) for op in elementwise_chain(2, 2, ("silu", "mul"))]
    [('e0', ('x',)), ('e1', ('e0', 'y'))]
    """
    ops: list[O.Op] = []
    prev = "x"
    for i, kind in enumerate(kinds):
        inputs = (prev, "y") if kind in ("add", "mul") else (prev,)
        ops.append(
            O.Elementwise(name=f"e{i}", inputs=inputs, op=kind, shape=(rows, cols), dtype=dtype)
        )
        prev = f"e{i}"
    return tuple(ops)
