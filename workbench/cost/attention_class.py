"""Fused-attention implementation classes: why one flash-style kernel outruns another.

Every fused attention kernel runs the same loop (see :mod:`workbench.scheduling.attention`); per
key/value block of a query tile it does two GEMMs (``S = Q K^T``, ``O += P V``) and, between them,
the online softmax: one exponential per score on the special-function units, a few FP32 lane ops
per score (scale and subtract the row max, max, row sum, the conversion to 16 bit) and the
rescale of the output accumulator (``d`` multiplies per row per block). What differs between
implementations is how much of that softmax time hides under the matrix engine, and which MMA
instructions feed the engine:

============  ==================================  =====================================
class         MMA path                            softmax
============  ==================================  =====================================
``fa2``       warp-level, synchronous (mma.sync)  serial within a warp; other warps of
              (FlashAttention-2, CK on ROCm)      the core hide part of it
``fa3``       asynchronous (wgmma), ping-pong     overlapped with another warpgroup's
              warpgroups (FlashAttention-3)       GEMMs; the first block's is exposed
``serial``    asynchronous (Triton on Hopper)     not overlapped: block = GEMMs + softmax
============  ==================================  =====================================

A block costs ``t_mm + softmax_exposed * t_softmax``. The two fitted fractions below come from
calibration rows of the published corpus (workbench/fidelity/data/published.yaml); every other
attention row is held out and tests them. ``t_mm`` runs at the matrix engine's solved math rate
(workbench/cost/efficiency.py), so a change to the GEMM model moves these fits: rerun
scripts/fit_attention_classes.py and copy its figures.

The backward pass (training) runs five block GEMMs against the forward's two (``S = Q K^T``
recomputed, ``dV += P^T dO``, ``dP = dO V^T``, ``dK += dS^T Q``, ``dQ += dS K``: FlashAttention-2,
arXiv:2307.08691, Algorithm 2), :data:`BACKWARD_FLOPS` = 2.5 forwards of FLOPs, with ``dQ``
accumulated across thread blocks through memory and more state held per block: it runs at a
lower fraction of the engine than the forward. Each class states that fraction
(``backward_efficiency``: backward efficiency over forward efficiency, from its source), so a
backward costs ``forward time x 2.5 / backward_efficiency`` (:func:`backward_factor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.attention import packed_group

__all__ = [
    "BACKWARD_FLOPS",
    "CLASSES",
    "SOFTMAX_LANE_OPS",
    "AttentionClass",
    "attention_class",
    "backward_factor",
    "class_for_software",
    "fused_attention_times",
]

# NOTE: per score: one FFMA (scale, subtract the row max), one FMNMX (row max), one FADD (row
# sum), half a conversion (two scores packed per cvt to bf16x2/f16x2); the output rescale adds
# d / bc multiplies per score (FlashAttention-2, arXiv:2307.08691, Algorithm 1, lines 8-10).
SOFTMAX_LANE_OPS = 3.5
#: Backward over forward FLOPs of fused attention: five block GEMMs against two [V]
#: (FlashAttention-2, arXiv:2307.08691, Section 4.1: "we multiply the forward pass FLOPs by 2.5").
BACKWARD_FLOPS = 2.5
#: Backward over forward efficiency where no class is named (``generic``: TPU Pallas, Gaudi
#: FusedSDPA, NPUs): assumption, no published breakdown; the backward runs as the forward does.
GENERIC_BACKWARD_EFFICIENCY = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionClass:
    """One class of fused-attention implementation.

    Attributes:
        name: ``fa2``, ``fa3`` or ``serial``.
        warp_mma: The GEMMs are warp-level synchronous MMAs; on an engine built for
            asynchronous MMA (Hopper) they run at the profile's warp-level rate
            (``software.attention_warp_mma_fraction``, else ``legacy_mma_fraction``).
        softmax_exposed: Fraction of a block's softmax time (exp + FP32 lane ops, seconds)
            not hidden under the GEMMs, 0..1.
        fill_exposed: The first block's softmax and the last block's P V GEMM of each work item
            cannot overlap anything of that item (pipeline fill and drain of an overlapped
            schedule); an unoverlapped class pays them in its blocks already.
        source: Where the fraction comes from.
        backward_efficiency: The backward pass's fraction of the engine over the forward's
            (0, 1]: its time is ``BACKWARD_FLOPS / backward_efficiency`` forwards.
        backward_source: Where that ratio comes from.
    """

    name: str
    warp_mma: bool
    softmax_exposed: float
    fill_exposed: bool
    source: str
    backward_efficiency: float
    backward_source: str


CLASSES: dict[str, AttentionClass] = {
    "fa2": AttentionClass(
        name="fa2",
        warp_mma=True,
        # fitted: calibration row attn.fa2.a100.peak (FlashAttention-2 paper, 230 TFLOP/s
        # forward on A100, arXiv:2307.08691 section 4.1), solved by
        # scripts/fit_attention_classes.py; a warp's softmax is serial with its own MMAs, the
        # other warps of the sub-partition hide the rest.
        softmax_exposed=0.247,
        fill_exposed=False,
        source="fitted to calibration row attn.fa2.a100.peak",
        # [V] FlashAttention-2 (arXiv:2307.08691) Section 1: "up to 73% of the theoretical max
        # throughput in the forward pass, and up to 63% ... in the backward pass" (A100):
        # 63 / 73.
        backward_efficiency=63.0 / 73.0,
        backward_source="FlashAttention-2 arXiv:2307.08691 Section 1: 63% backward vs 73% forward",
    ),
    "fa3": AttentionClass(
        name="fa3",
        warp_mma=False,
        # fitted: calibration row attn.fa3.h100.s16k (pytorch/benchmark ff65cb67, flash_v3
        # 620.7 TFLOP/s at 1 x 16 x 16384 x 128), solved by scripts/fit_attention_classes.py.
        # Ping-pong and intra-warpgroup pipelining hide most of the softmax; FlashAttention-3's
        # own ablation (arXiv:2407.08608 Table 2: 661 TFLOP/s with both, 570-582 without one)
        # says neither hides all of it.
        softmax_exposed=0.500,
        fill_exposed=True,
        source="fitted to calibration row attn.fa3.h100.s16k",
        # [S]/[D] FlashAttention-3 (arXiv:2407.08608) Figure 6: backward ~581 TFLOP/s at head
        # dim 128, 16k, no mask (a summary of the figure; the paper: "1.5-1.75x faster than
        # FlashAttention-2 in the backward pass"), against its forward 648 TFLOP/s at the same
        # shape (Figure 5; corpus row attn.fa3paper.fa3.h100.dense.d128.s16384).
        backward_efficiency=581.0 / 648.0,
        backward_source="FlashAttention-3 arXiv:2407.08608 Figures 5-6: 581 bwd vs 648 fwd",
    ),
    "serial": AttentionClass(
        name="serial",
        warp_mma=False,
        # NOTE: no warp specialization: a program's softmax waits for its S GEMM and its P V
        # GEMM waits for the softmax (Triton tutorial fused attention, Triton 3.0 on Hopper).
        softmax_exposed=1.0,
        fill_exposed=False,
        source="mechanism: no overlap of softmax and MMA",
        # [D] from [V]: FlashAttention-2 (arXiv:2307.08691) Section 4.1: FlashAttention-2 is
        # "around 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around
        # 2x faster in the backward pass", so Triton's backward/forward efficiency is FA2's
        # (63/73) x 1.4 / 2 (the middle of 1.3-1.5).
        backward_efficiency=63.0 / 73.0 * 1.4 / 2.0,
        backward_source="FlashAttention-2 arXiv:2307.08691 Section 4.1: vs Triton 1.3-1.5x "
        "forward, 2x backward",
    ),
}


def attention_class(name: str) -> AttentionClass:
    """The class called ``name`` (``fa2``, ``fa3``, ``serial``).

    >>> attention_class("fa3").warp_mma
    False
    """
    try:
        return CLASSES[name]
    except KeyError:
        known = ", ".join(CLASSES)
        raise WorkbenchError(f"attention kernel {name!r}: expected one of {known}") from None


def backward_factor(name: str | None) -> float:
    """Fused attention's backward time over its forward time for class ``name``.

    ``BACKWARD_FLOPS / backward_efficiency``: 2.5 forwards of FLOPs at the class's backward
    efficiency; ``generic`` (or None) runs at the forward's (:data:`GENERIC_BACKWARD_EFFICIENCY`).

    >>> round(backward_factor("fa2"), 3), backward_factor("generic")
    (2.897, 2.5)
    """
    if name in (None, "generic"):
        return BACKWARD_FLOPS / GENERIC_BACKWARD_EFFICIENCY
    return BACKWARD_FLOPS / attention_class(name).backward_efficiency


def class_for_software(software: str) -> str | None:
    """The attention class of a named implementation, or None if the name says nothing.

    Args:
        software: A stack name as a benchmark reports it ("FA3", "FA2 (ROCm CK)",
            "Triton tutorial flash attention v2", ...).

    Returns:
        ``fa2``, ``fa3``, ``serial`` or None.

    >>> class_for_software("Triton tutorial flash attention v2"), class_for_software("FA3")
    ('serial', 'fa3')
    """
    s = software.lower().replace("-", "").replace(" ", "")
    if "fa3" in s or "flashattention3" in s or "flash_v3" in s:
        return "fa3"
    if "triton" in s:
        return "serial"
    if "fa2" in s or "flashattention2" in s or "composablekernel" in s or "(rocmck)" in s:
        return "fa2"
    return None


def fused_attention_times(
    kernel: Kernel, hw: Hardware, ms, kind: str, t_mm, t_l, active
) -> tuple[np.ndarray, np.ndarray]:
    """Hardware-scheduled fused attention (GPU/NPU): the implementation class sets the block.

    Per key/value block (seconds, per core): the two GEMMs ``t_mm`` (at the warp-level MMA
    rate for a warp-MMA class), plus the exposed part of the online softmax (exp on the
    special-function units, :data:`SOFTMAX_LANE_OPS` + d/bc FP32 lane ops per score), hidden
    behind the K/V load when the pipeline has stages. Per work item (query tile): Q in and O
    out at the core's share of the off-chip bandwidth, plus two off-chip latencies; an
    overlapped class also pays its pipeline fill and drain (the first block's softmax, the
    last block's P V GEMM).
    Work items run in waves over the cores.

    Args:
        kernel: A fused-attention kernel.
        hw: Hardware that schedules its own tiles (``scheduling: hardware_scheduled``).
        ms: Its :class:`~workbench.scheduling.attention.AttentionMapspace`.
        kind: Class name (``fa2``, ``fa3``, ``serial``).
        t_mm: Both GEMMs of one block at the engine's derated rate, seconds per candidate.
        t_l: One block's K/V load at the core's share of the next level, seconds.
        active: Cores busy per candidate.

    Returns:
        ``(compute_s, pipeline_s)`` per candidate: the cores' busy time (GEMMs and exposed
        softmax) and the tile pipeline's time, seconds.
    """
    p = kernel.attention
    assert p is not None
    cls = attention_class(kind)
    cores = hw.matrix_engine.cores
    lat = hw.offchip.latency_s
    sfu_core = (hw.vector_unit.special_function_ops_per_s or hw.vector_flops("fp32")) / cores
    lane_ops_core = hw.vector_flops("fp32") / 2 / cores  # an FMA lane op is 2 FLOPs
    scores = ms.br * ms.bc
    t_sm = scores / sfu_core + scores * (SOFTMAX_LANE_OPS + p.head_dim / ms.bc) / lane_ops_core
    warp = 1.0
    if cls.warp_mma:
        sw = hw.software.attention_warp_mma_fraction
        warp = sw if sw is not None else hw.matrix_engine.legacy_mma_fraction
    t_mm = t_mm / warp
    work = t_mm + cls.softmax_exposed * t_sm
    hidden = np.maximum(np.maximum(work, t_l), lat / np.maximum(ms.stages - 1, 1))
    t_block = np.where(ms.stages >= 2, hidden, work + t_l + lat)
    t_block = t_block + hw.matrix_engine.kstep_overhead_s
    # NOTE: a work item's Q is first read from off-chip memory and its O leaves for it; every
    # core does the same at the same point of its item, so each gets its share of the
    # off-chip bandwidth (FlashAttention keeps one query tile per core: its SRAM is full).
    dram_core = hw.offchip.sustained_bytes_per_s / active
    rows = np.minimum(ms.br, p.q_len * packed_group(p, hw))  # a decode tile's real rows
    t_io = 2.0 * rows * p.head_dim * p.elem_bytes / dram_core + 2 * lat
    t_fill = t_io + (((1.0 - cls.softmax_exposed) * t_sm + t_mm / 2) if cls.fill_exposed else 0.0)
    per_item = ms.blocks / ms.items * t_block + t_fill
    waves = -(-ms.items // active)
    pipeline = np.maximum(waves * per_item, ms.max_blocks * t_block + t_fill) + 2 * lat
    # NOTE: the engine's busy time: both GEMMs at the class's MMA rate and the exposed softmax
    # (arithmetic on the same cores), so a softmax-held pipeline reads as compute-bound.
    compute = ms.blocks * work / active
    return compute, pipeline
