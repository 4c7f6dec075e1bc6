"""Fusion planning: which graph ops run together in one kernel.

The planner walks ops in execution order and attaches an elementwise op (or a quantize) to the
group that produced its input when a rule allows it:

* ``gemm_epilogue``: after a Linear/MatMul/Conv2d (bias, activation, RoPE, residual add, gate
  product, quantize run on the output tile before it is stored);
* ``norm_elementwise``: after a LayerNorm/RMSNorm;
* ``elementwise_chain``: after another elementwise op.

An op joins a group only when the group's output has exactly one consumer (otherwise the
intermediate must be written anyway) and every other input of the op is ready before the group
runs. A binary op joins the latest-starting producer group, so both operands are available.
Row-wise fusions that would overflow the per-core SRAM are refused, with the reason recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.hw.schema import Hardware
from workbench.ir.dtypes import bytes_for
from workbench.ir.graph import Graph
from workbench.ir.ops import (
    Conv2d,
    Dequantize,
    Elementwise,
    LayerNorm,
    Linear,
    MatMul,
    Op,
    Quantize,
    RMSNorm,
)
from workbench.options import MapOptions

__all__ = ["Group", "plan_fusion"]

_GEMM = (Linear, MatMul, Conv2d)
_NORM = (LayerNorm, RMSNorm)
_POINTWISE = (Elementwise, Quantize, Dequantize)


@dataclass(slots=True)
class Group:
    """A set of ops that will become one kernel (mutable while planning only).

    Attributes:
        ops: The ops, head first.
        rules: Fusion rules applied.
        saved_bytes: Off-chip bytes avoided (each fused intermediate: written once, read once).
        extra_read_bytes: Bytes of other operands the fused ops read (residual, gate, bias).
        notes: Refusals and decisions to show in the mapping sheet.
    """

    ops: list[Op]
    rules: list[str] = field(default_factory=list)
    saved_bytes: int = 0
    extra_read_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def head(self) -> Op:
        """The op that defines the kernel's kind."""
        return self.ops[0]

    @property
    def tail(self) -> Op:
        """The op whose output the kernel writes."""
        return self.ops[-1]


def _rule_for(group: Group) -> str | None:
    head = group.head
    if isinstance(head, _GEMM):
        return "gemm_epilogue"
    if isinstance(head, _NORM):
        return "norm_elementwise"
    if isinstance(head, _POINTWISE):
        return "elementwise_chain"
    return None


def _row_footprint(group: Group, op: Op, dtype_bytes: float) -> float:
    """Bytes of one row of every operand live in a fused row kernel (for the SRAM check)."""
    cols = op.output_shape()[-1]
    operands = 1 + sum(len(o.inputs) for o in (*group.ops, op))
    return operands * cols * dtype_bytes


def plan_fusion(graph: Graph, hw: Hardware, options: MapOptions) -> list[Group]:
    """Group the graph's ops into kernels according to the enabled fusion rules.

    Args:
        graph: The operator graph (topologically ordered).
        hw: Hardware, for the SRAM capacity of row-wise fusion.
        options: Which rules are enabled.

    Returns:
        Groups in execution order (each group runs where its head op was).
    """
    groups: list[Group] = []
    group_of: dict[str, int] = {}
    sram = hw.sram.capacity_bytes
    for op in graph.ops:
        target = _fusion_target(op, graph, groups, group_of, options)
        if target is not None:
            group = groups[target]
            rule = _rule_for(group)
            dtype_bytes = bytes_for(1000, op.dtype) / 1000
            if rule != "gemm_epilogue" and _row_footprint(group, op, dtype_bytes) > sram:
                group.notes.append(
                    f"{rule} of {op.name} refused: a fused row needs "
                    f"{_row_footprint(group, op, dtype_bytes) / 1024:.0f} KiB > "
                    f"{hw.sram.name} {sram / 1024:.0f} KiB"
                )
            else:
                _attach(group, op, graph, rule or "")
                group_of[op.name] = target
                continue
        groups.append(Group(ops=[op]))
        group_of[op.name] = len(groups) - 1
    return groups


def _fusion_target(
    op: Op, graph: Graph, groups: list[Group], group_of: dict[str, int], options: MapOptions
) -> int | None:
    """Index of the group ``op`` may join, or None."""
    if not isinstance(op, _POINTWISE):
        return None
    candidates = [group_of[i] for i in op.inputs if i in group_of]
    if not candidates:
        return None
    target = max(candidates)
    group = groups[target]
    rule = _rule_for(group)
    if rule is None or not options.fusion_enabled(rule):
        return None
    if group.tail.name not in op.inputs or len(graph.consumers(group.tail.name)) != 1:
        return None
    return target


def _attach(group: Group, op: Op, graph: Graph, rule: str) -> None:
    inter = group.tail.output_tensor()
    group.saved_bytes += 2 * inter.nbytes
    for t in op.input_tensors():
        if t.name != inter.name:
            group.extra_read_bytes += t.nbytes
    group.extra_read_bytes += sum(w.nbytes for w in op.weight_tensors())
    group.ops.append(op)
    if rule not in group.rules:
        group.rules.append(rule)
