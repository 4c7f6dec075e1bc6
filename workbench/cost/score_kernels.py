"""Scoring fused-attention and row-wise (vector) mapspaces.

Attention: per (query tile, KV block) the two GEMMs, the online softmax and the K/V loads; GPU
classes (FA2/CK, FA3, Triton's serial kernel) are costed by
:func:`workbench.cost.attention_class.fused_attention_times`, the generic class and hosts here.
Row kernels (norms, softmax, elementwise): vector work at the engine's rate over the cores the
rows occupy, against their traffic.
"""

from __future__ import annotations

import numpy as np

from workbench.cost.attention_class import fused_attention_times
from workbench.cost.host import call_slowdown, row_rate, transpose_s, vector_rate
from workbench.cost.scored import Scored, finish, memory_times, next_level, with_issue
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["issue_free", "score_attention", "score_rows"]


def issue_free(hw: Hardware) -> bool:
    """Whether the hardware schedules its own tiles (no software tile issue: GPUs, NPUs)."""
    return hw.overheads.tile_issue_s == 0


def score_attention(kernel: Kernel, hw: Hardware, ms, kind: str, peak: float) -> Scored:
    """Times of every candidate of an attention mapspace (class ``kind``, rate ``peak`` FLOP/s)."""
    p = kernel.attention
    assert p is not None
    cores = hw.matrix_engine.cores
    peak_core = peak / cores
    vec_core = hw.vector_flops("fp32") / cores
    sfu = hw.vector_unit.special_function_ops_per_s or hw.vector_flops("fp32")
    nxt = next_level(hw)
    lat = hw.offchip.latency_s
    active = np.minimum(ms.items, cores)
    bw_core = nxt.sustained_bytes_per_s / active
    t_mm = 4.0 * ms.br * ms.bc * p.head_dim / peak_core
    if issue_free(hw) and kind != "generic":
        t_l = 2.0 * ms.bc * p.head_dim * p.kv_bytes / bw_core
        compute, pipeline = fused_attention_times(kernel, hw, ms, kind, t_mm, t_l, active)
        return finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    # NOTE: "generic" class (stacks with no published breakdown) and software-scheduled
    # hosts: the online softmax (one exp on the special-function units, ~5 FLOPs on the
    # vector unit per score) sits between the two GEMMs of a block, not overlapped with them
    # (a host's "fa3" overlaps them: the longer of the two). GPU classes: see
    # workbench/cost/attention_class.py.
    t_sm = ms.br * ms.bc * (1.0 / (sfu / cores) + 5.0 / vec_core)
    block_issue = hw.overheads.attention_block_issue_s
    host = hw.overheads.tile_issue_s > 0 and block_issue > 0
    if host:
        # NOTE: calibrated host: the online softmax's passes (max, subtract, exp, sum per
        # score) run at the engine's measured softmax rate (5 FLOPs per score).
        # The block's scores are rows of bc keys: the softmax rate at that row length.
        by_length = row_rate(hw, "softmax", ms.bc)
        rate = by_length if by_length is not None else vector_rate(kernel, hw, "softmax")
        t_sm = ms.br * ms.bc * 5.0 / (rate / cores)
    t_l = 2.0 * ms.bc * p.head_dim * p.kv_bytes / bw_core
    if hw.overheads.tile_issue_s > 0:
        # NOTE: software-scheduled host: library calls run the exact (edge) block, not the
        # padded tile; the true matrix work replaces the padded one (GPU/TPU: unchanged).
        # A calibrated host engine computes whole visible blocks (the causal mask is applied
        # to computed scores), so there only the ragged edges are not work.
        true = float(kernel.matmul_flops) / np.maximum(ms.padded_flops, 1)
        if host:
            true = (p.q_len / (-(-p.q_len // ms.br) * ms.br)) * (
                p.kv_len / (-(-p.kv_len // ms.bc) * ms.bc)
            )
        t_mm, t_sm = t_mm * np.minimum(true, 1.0), t_sm * np.minimum(true, 1.0)
        # A block's two products are small library calls: they run at the calibrated rate of
        # a call of their size (the cube with the same work), not at the large-call peak.
        t_mm = t_mm * call_slowdown(hw, np.cbrt(ms.br * ms.bc * p.head_dim))
    legacy = hw.matrix_engine.legacy_mma_fraction if kind == "fa2" else 1.0
    if hw.overheads.tile_issue_s == 0:
        t_mm = t_mm / legacy
    work = np.maximum(t_mm, t_sm) if kind == "fa3" and not host else t_mm + t_sm
    hidden = np.maximum(np.maximum(work, t_l), lat / np.maximum(ms.stages - 1, 1))
    t_block = (
        np.where(ms.stages >= 2, hidden, work + t_l + lat)
        + hw.matrix_engine.kstep_overhead_s
        + hw.overheads.tile_issue_s
    )
    per_core = ms.blocks * t_block / active
    longest = ms.max_blocks * t_block
    pipeline = np.maximum(per_core, longest) + 2 * lat
    compute = ms.padded_flops / (peak_core * cores) / (legacy if issue_free(hw) else 1.0)
    issue = hw.overheads.tile_issue_s
    if host:
        # NOTE: calibrated host (GPU/TPU unchanged): the engine runs every head of a
        # (query tile, KV block) pair in one step, so fixed costs are per engine block and per
        # query tile, not per head block.
        bh = p.batch * p.heads
        engine_blocks = ms.blocks / bh
        q_tiles = ms.items / (bh * ms.split)
        issue_s = engine_blocks * block_issue + q_tiles * hw.overheads.attention_qtile_issue_s
        pipeline = ms.blocks * (t_block - issue) / active + issue_s + 2 * lat
        compute = compute * np.minimum(true, 1.0)
        sc = finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
        return with_issue(sc, issue_s)
    sc = finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    return with_issue(sc, np.maximum(ms.blocks / active, ms.max_blocks) * issue)


def score_rows(kernel: Kernel, hw: Hardware, ms) -> Scored:
    """Times of every candidate of a row-wise mapspace."""
    cores = hw.matrix_engine.cores
    util = np.minimum(1.0, ms.tiles / cores)
    flops = kernel.flops if kernel.engine != "matrix" else kernel.vector_flops
    # NOTE: host: a layout transform's strided copy at its calibrated rate (0 elsewhere).
    compute = flops / (vector_rate(kernel, hw) * util) + transpose_s(kernel, hw)
    # NOTE: assumption: one core can draw up to 4x its fair share of a level's bandwidth.
    bw_util = np.minimum(1.0, 4.0 * ms.tiles / cores)
    traffic = ms.traffic
    mem = {k: v / bw_util for k, v in memory_times(hw, traffic).items()}
    issue = ms.tiles * ms.passes * hw.overheads.tile_issue_s / np.minimum(ms.tiles, cores)
    pipeline = compute + hw.offchip.latency_s * ms.passes + issue
    sync = ms.barriers * hw.overheads.barrier_s
    sc = finish(kernel, hw, traffic, compute, pipeline, ms.fits, mem=mem, penalty=sync)
    return with_issue(sc, issue)
