"""The records a :class:`~workbench.cost.issue.TileIssue` returns, and the formulas both share.

Part of :mod:`workbench.cost.issue`: a strategy answers once per kernel with a record of the
terms its mechanism adds (0 s, or ``False``, where the mechanism does not exist), and formulas
that both strategies apply are plain functions here, not methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from workbench.hw.schema import Hardware

__all__ = ["GemmTerms", "Streaming", "block_pipeline", "softmax_s"]

Array = np.ndarray


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmTerms:
    """What a GEMM's tiles pay beyond their main loop, per candidate where an array, seconds.

    Attributes:
        misaligned: Operand strides keep the GEMM off the engine's asynchronous-copy path, so
            it runs at ``matrix_engine.legacy_mma_fraction`` of the rate.
        dequant_s: Vector-unit dequantization of a weight-only B tile, per K-step.
        fill_skew_s: A systolic array's fill and drain, once per tile.
        split_fixup_s: The split-K reduction, per tile.
        store_drain_s: After the last wave, until its output stores have landed.
        gather_s: A conv's set-up and im2col gather, once per kernel.
        epilogue_s: The fused epilogue beyond the tiles' main loops, once per kernel.
        issue_per_tile: A batched GEMM issues its tile steps once per (m, n) output tile, not
            once per batch entry.
    """

    misaligned: bool
    dequant_s: Array | float
    fill_skew_s: float
    split_fixup_s: Array
    store_drain_s: float
    gather_s: float
    epilogue_s: float
    issue_per_tile: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Streaming:
    """How a kernel's traffic adds to its time, seconds.

    Attributes:
        ramp_s: Per memory level name, what a kernel bound by that level's bandwidth adds to
            its bytes' streaming time (first request's latency, last stores' drain).
        serial_s: Streaming the issuing core does itself, which adds to the pipeline instead of
            hiding behind it.
    """

    ramp_s: Mapping[str, float]
    serial_s: float


def softmax_s(hw: Hardware, ms) -> Array:
    """``br x bc x (1 / SFU rate + 5 / vector rate)`` per core, seconds.

    One exp on the special-function units and ~5 FLOPs on the vector unit per score.
    """
    cores = hw.matrix_engine.cores
    vec_core = hw.vector_flops("fp32") / cores
    sfu = hw.vector_unit.special_function_ops_per_s or hw.vector_flops("fp32")
    return ms.br * ms.bc * (1.0 / (sfu / cores) + 5.0 / vec_core)


def block_pipeline(hw: Hardware, ms, t_block, active, compute):
    """``(pipeline, compute, issue)`` seconds of an attention loop whose blocks issue one by one.

    ``pipeline = max(blocks x t_block / active, longest item x t_block) + 2 x latency``: blocks
    spread over the active cores, the longest item at least; each block issues
    ``overheads.tile_issue_s`` (inside ``t_block``), ``issue`` counts it per core.
    """
    lat = hw.offchip.latency_s
    per_core = ms.blocks * t_block / active
    longest = ms.max_blocks * t_block
    pipeline = np.maximum(per_core, longest) + 2 * lat
    issue = hw.overheads.tile_issue_s
    return pipeline, compute, np.maximum(ms.blocks / active, ms.max_blocks) * issue
