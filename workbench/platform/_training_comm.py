"""The collectives of a training step: where a group runs, and how long its calls take.

A group of ``N`` chips ``stride`` chips apart (a data-parallel group strides over the tensor- and
pipeline-parallel chips) that leaves its node (``hw.interconnect.scale_out``) has
``g = chips_per_node // stride`` of its chips on each node (at least 1). Every group of the job
runs its collective at the same time, so a group owns ``g`` of its node's NICs: NCCL builds one
ring per NIC (rail), each crossing one NIC a node, and together they use all of them. The bus
bandwidth across nodes is then the slower of the node's NVLink bus ``B`` and ``g x B_net``
(``B_net`` one NIC's sustained rate): NCCL's own multi-node model (NVIDIA/nccl
src/graph/tuning.cc at b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2, ring ``busBw = nChannels x
bwInter``; :func:`workbench.cost.nccl.nccl_collective_s`), used for every profile whose
fabric runs NCCL. Elsewhere the ring formula with that same bandwidth::

    all-reduce:                    2 (N-1)/N x S / min(B, g B_net) + 2 (N-1) x latency
    reduce-scatter / all-gather:     (N-1)/N x S / min(B, g B_net) +   (N-1) x latency

Inside a node a collective runs on the chip-to-chip links as :mod:`workbench.cost.collective`
costs it. Before issue 27 the ring across nodes took one chip's NIC (``B_net``) as the whole
bus bandwidth, 8x too little on an 8-GPU node with a NIC per GPU: a 16-GPU FSDP run's
collectives took longer than its compute.
"""

from __future__ import annotations

from workbench.cost.collective import all_gather_s, all_reduce_s
from workbench.cost.nccl import nccl_collective_s
from workbench.hw.schema import Hardware

__all__ = ["net_s", "p2p_s", "spans_nodes"]


def spans_nodes(hw: Hardware, stride: int, group: int) -> bool:
    """Whether a group of ``group`` chips, ``stride`` chips apart, leaves one node."""
    so = hw.interconnect.scale_out
    return so is not None and stride * group > so.chips_per_node


def _across_nodes_s(nbytes: float, chips: int, hw: Hardware, stride: int, kind: str) -> float:
    """A collective of a group that spans nodes (see the module docstring), seconds."""
    ic = hw.interconnect
    so = ic.scale_out
    assert so is not None  # NOTE: spans_nodes checked it
    g = max(1, so.chips_per_node // stride)
    nodes = -(-chips // g)
    nic = so.bandwidth_bytes_per_s * so.sustained_fraction
    bus = ic.links * ic.link_bandwidth_bytes_per_s * ic.sustained_fraction
    if ic.nccl_generation is not None and ic.topology == "switch":
        op = "all_reduce" if kind == "ar" else "all_gather"
        return nccl_collective_s(op, nbytes, chips, bus, ic.nccl_generation, False, nodes=nodes,
                                 net_bytes_per_s=nic).time_s  # fmt: skip
    bw = min(bus, g * nic) if bus > 0 else g * nic
    f = 2.0 if kind == "ar" else 1.0
    return f * (chips - 1) / chips * nbytes / bw + f * (chips - 1) * so.latency_s


def net_s(nbytes: float, chips: int, hw: Hardware, stride: int, kind: str) -> float:
    """All-reduce (``"ar"``) or reduce-scatter/all-gather (``"rs"``) of ``nbytes`` per chip, s.

    Args:
        nbytes: The tensor each chip holds (all-reduce) or the whole gathered output, bytes.
        chips: Chips in the group.
        hw: One chip's profile (its links and scale-out network).
        stride: Chips between two members of the group (``t x p`` for data parallelism).
        kind: ``"ar"`` or ``"rs"``.

    Returns:
        Seconds of one call (0 for one chip or no bytes).

    >>> from workbench.hw import load_hardware
    >>> h100 = load_hardware("h100-sxm")
    >>> one_nic = 15 / 16 * 26e9 / 45e9  # the whole bus on one 400 Gb/s NIC, as before
    >>> round(one_nic, 2), round(net_s(26e9, 16, h100, 1, "rs"), 3)  # 13B bf16, 2 nodes
    (0.54, 0.068)
    """
    if chips <= 1 or nbytes <= 0:
        return 0.0
    if spans_nodes(hw, stride, chips):
        return _across_nodes_s(nbytes, chips, hw, stride, kind)
    if kind == "ar":
        return all_reduce_s(nbytes, chips, hw)[0]
    return all_gather_s(nbytes, chips, hw)


def p2p_s(nbytes: float, hw: Hardware, tensor_parallel: int) -> float:
    """One pipeline send (or receive) of ``nbytes`` to the next stage, seconds.

    A send between nodes leaves through the sending chip's own NIC (``B_net``).
    """
    ic = hw.interconnect
    if spans_nodes(hw, tensor_parallel, 2):
        so = ic.scale_out
        assert so is not None  # NOTE: spans_nodes checked it
        return nbytes / (so.bandwidth_bytes_per_s * so.sustained_fraction) + so.latency_s
    bw = ic.link_bandwidth_bytes_per_s * ic.sustained_fraction * max(ic.links, 1)
    return nbytes / bw + ic.latency_s if bw > 0 else float("inf")
