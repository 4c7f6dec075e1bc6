"""The collectives of a training step: where a group runs, and how long its calls take.

A collective whose group leaves a node (``hw.interconnect.scale_out``) runs over the node's NICs,
one ring per NIC; inside a node it runs on the chip-to-chip links as
:mod:`workbench.cost.collective` costs it.
"""

from __future__ import annotations

from workbench.cost.collective import all_gather_s, all_reduce_s
from workbench.hw.schema import Hardware

__all__ = ["net_s", "p2p_s", "spans_nodes"]


def spans_nodes(hw: Hardware, stride: int, group: int) -> bool:
    """Whether a group of ``group`` chips, ``stride`` chips apart, leaves one node."""
    so = hw.interconnect.scale_out
    return so is not None and stride * group > so.chips_per_node


def net_s(nbytes: float, chips: int, hw: Hardware, stride: int, kind: str) -> float:
    """All-reduce (``"ar"``) or reduce-scatter/all-gather (``"rs"``) of ``nbytes`` per chip, s."""
    if chips <= 1 or nbytes <= 0:
        return 0.0
    so = hw.interconnect.scale_out
    if so is not None and spans_nodes(hw, stride, chips):
        # NOTE: one NCCL ring per NIC; each chip's share of the node's NICs carries its ring.
        bw = so.bandwidth_bytes_per_s * so.sustained_fraction
        f = 2.0 if kind == "ar" else 1.0
        return f * (chips - 1) / chips * nbytes / bw + f * (chips - 1) * so.latency_s
    if kind == "ar":
        return all_reduce_s(nbytes, chips, hw)[0]
    return all_gather_s(nbytes, chips, hw)


def p2p_s(nbytes: float, hw: Hardware, tensor_parallel: int) -> float:
    """One pipeline send (or receive) of ``nbytes`` to the next stage, seconds."""
    ic = hw.interconnect
    if spans_nodes(hw, tensor_parallel, 2):
        so = ic.scale_out
        assert so is not None  # NOTE: spans_nodes checked it
        return nbytes / (so.bandwidth_bytes_per_s * so.sustained_fraction) + so.latency_s
    bw = ic.link_bandwidth_bytes_per_s * ic.sustained_fraction * max(ic.links, 1)
    return nbytes / bw + ic.latency_s if bw > 0 else float("inf")
