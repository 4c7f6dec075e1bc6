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
attention row is held out and tests them.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import WorkbenchError

__all__ = ["CLASSES", "SOFTMAX_LANE_OPS", "AttentionClass", "attention_class", "class_for_software"]

# NOTE: per score: one FFMA (scale, subtract the row max), one FMNMX (row max), one FADD (row
# sum), half a conversion (two scores packed per cvt to bf16x2/f16x2); the output rescale adds
# d / bc multiplies per score (FlashAttention-2, arXiv:2307.08691, Algorithm 1, lines 8-10).
SOFTMAX_LANE_OPS = 3.5


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
    """

    name: str
    warp_mma: bool
    softmax_exposed: float
    fill_exposed: bool
    source: str


CLASSES: dict[str, AttentionClass] = {
    "fa2": AttentionClass(
        name="fa2",
        warp_mma=True,
        # fitted: calibration row attn.fa2.a100.peak (FlashAttention-2 paper, 230 TFLOP/s
        # forward on A100, arXiv:2307.08691 section 4.1), solved by
        # scripts/fit_attention_classes.py; a warp's softmax is serial with its own MMAs, the
        # other warps of the sub-partition hide the rest.
        softmax_exposed=0.426,
        fill_exposed=False,
        source="fitted to calibration row attn.fa2.a100.peak",
    ),
    "fa3": AttentionClass(
        name="fa3",
        warp_mma=False,
        # fitted: calibration row attn.fa3.h100.s16k (pytorch/benchmark ff65cb67, flash_v3
        # 620.7 TFLOP/s at 1 x 16 x 16384 x 128), solved by scripts/fit_attention_classes.py.
        # Ping-pong and intra-warpgroup pipelining hide most of the softmax; FlashAttention-3's
        # own ablation (arXiv:2407.08608 Table 2: 661 TFLOP/s with both, 570-582 without one)
        # says neither hides all of it.
        softmax_exposed=0.495,
        fill_exposed=True,
        source="fitted to calibration row attn.fa3.h100.s16k",
    ),
    "serial": AttentionClass(
        name="serial",
        warp_mma=False,
        # NOTE: no warp specialization: a program's softmax waits for its S GEMM and its P V
        # GEMM waits for the softmax (Triton tutorial fused attention, Triton 3.0 on Hopper).
        softmax_exposed=1.0,
        fill_exposed=False,
        source="mechanism: no overlap of softmax and MMA",
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
