"""Scoring fused-attention and row-wise (vector) mapspaces.

Attention: per (query tile, KV block) the two GEMMs, the online softmax and the K/V loads; GPU
classes (FA2/CK, FA3, Triton's serial kernel) are costed by
:func:`workbench.cost.attention_class.fused_attention_times`, the generic block loop here (every
class on a software-issued profile, :mod:`workbench.cost.issue`).
Row kernels (norms, softmax, elementwise): vector work at the engine's rate over the cores the
rows occupy, against their traffic.
"""

from __future__ import annotations

import numpy as np

from workbench.cost.attention_class import fused_attention_times
from workbench.cost.issue import tile_issue
from workbench.cost.scored import Scored, finish, memory_times, next_level, with_issue
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["score_attention", "score_rows"]


def score_attention(kernel: Kernel, hw: Hardware, ms, kind: str, peak: float) -> Scored:
    """Times of every candidate of an attention mapspace (class ``kind``, rate ``peak`` FLOP/s).

    Per (query tile, KV block), seconds on one core::

        t_mm     = 4 br bc d / peak per core                   (QK^T and PV)
        t_l      = 2 bc d x K/V bytes / bandwidth per active core
        step     = t_mm + softmax (or their max: the strategy's attention_block_s)
        t_block  = max(step, t_l, latency / (stages - 1)) + K-step overhead + tile issue
        pipeline = max(blocks x t_block / active, longest item x t_block) + 2 latency

    Classes with a published breakdown go to
    :func:`workbench.cost.attention_class.fused_attention_times`; the softmax, the real work of
    a block and the issue time come from the profile's :class:`~workbench.cost.issue.TileIssue`.
    """
    p = kernel.attention
    assert p is not None
    ti = tile_issue(hw)
    cores = hw.matrix_engine.cores
    peak_core = peak / cores
    nxt = next_level(hw)
    lat = hw.offchip.latency_s
    active = np.minimum(ms.items, cores)
    bw_core = nxt.sustained_bytes_per_s / active
    t_mm = 4.0 * ms.br * ms.bc * p.head_dim / peak_core
    t_l = 2.0 * ms.bc * p.head_dim * p.kv_bytes / bw_core
    # NOTE: the generic block loop: the online softmax sits between the two GEMMs of a block,
    # not overlapped with them unless the strategy says so (workbench/cost/issue.py).
    work = ti.attention_block_s(kernel, hw, ms, kind, t_mm)
    if work is None:
        compute, pipeline = fused_attention_times(kernel, hw, ms, kind, t_mm, t_l, active)
        return finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    hidden = np.maximum(np.maximum(work, t_l), lat / np.maximum(ms.stages - 1, 1))
    t_block = (
        np.where(ms.stages >= 2, hidden, work + t_l + lat)
        + hw.matrix_engine.kstep_overhead_s
        + hw.overheads.tile_issue_s
    )
    compute = ms.padded_flops / (peak_core * cores)
    pipeline, compute, issue_s = ti.attention_pipeline(kernel, hw, ms, t_block, active, compute)
    sc = finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    return with_issue(sc, issue_s)


def score_rows(kernel: Kernel, hw: Hardware, ms) -> Scored:
    """Times of every candidate of a row-wise mapspace, seconds.

    Per candidate::

        compute  = vector FLOPs / (vector rate x busy cores share) + transpose
        pipeline = compute + latency x passes + passes x tile issue per core
        exec     = max(pipeline, level traffic / (bandwidth x draw share)) + barriers
    """
    cores = hw.matrix_engine.cores
    util = np.minimum(1.0, ms.tiles / cores)
    flops = kernel.flops if kernel.engine != "matrix" else kernel.vector_flops
    compute = tile_issue(hw).row_compute_s(kernel, hw, flops, util)
    # NOTE: assumption: one core can draw up to 4x its fair share of a level's bandwidth.
    bw_util = np.minimum(1.0, 4.0 * ms.tiles / cores)
    traffic = ms.traffic
    mem = {k: v / bw_util for k, v in memory_times(hw, traffic).items()}
    issue = ms.tiles * ms.passes * hw.overheads.tile_issue_s / np.minimum(ms.tiles, cores)
    pipeline = compute + hw.offchip.latency_s * ms.passes + issue
    sync = ms.barriers * hw.overheads.barrier_s
    sc = finish(kernel, hw, traffic, compute, pipeline, ms.fits, mem=mem, penalty=sync)
    return with_issue(sc, issue)
