"""Scoring a GEMM mapspace: per-tile K-step pipeline, per-core load limit, split-K fix-up.

Per candidate (arrays over the mapspace), seconds::

    math     = 2 tm tn tk / peak per core + dequant            (dequant: weight-only, on chips)
    K-step   = max(math, loads from the next level, latency / (stages - 1))   (pipelined)
    K-step   = K-step x call slowdown + accumulator           (software-issued: exact slice)
    tile     = K-steps x (K-step + issue) + issue + prologue load + output store
               + fill skew + split-K fix-up
    pipeline = waves x tile + store drain + im2col gather + epilogue passes
    compute  = work / peak + waves x (K-steps x dequant + fill skew)

``issue`` is ``overheads.tile_issue_s`` (the cost of one tile step; 0 on chips that pay none);
every other term that only one kind of profile has comes from its
:class:`~workbench.cost.issue.TileIssue` (:class:`~workbench.cost.issue.GemmTerms`).

The math rate (``peak``, FLOP/s for the whole chip) is solved by the caller
(:func:`workbench.cost.efficiency.math_efficiency`) and shared evenly by the cores.
"""

from __future__ import annotations

import numpy as np

from workbench.cost.issue import tile_issue
from workbench.cost.scored import Scored, finish, next_level, with_issue
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.gemm import GemmMapspace

__all__ = ["core_bandwidth", "score_gemm", "split_fixup_s"]


def score_gemm(kernel: Kernel, hw: Hardware, ms: GemmMapspace, peak: float) -> Scored:
    """Times of every candidate of a GEMM mapspace at the chip's math rate ``peak`` (FLOP/s).

    Where tiles are issued by software or scheduled by the chip, the terms come from the
    profile's :class:`~workbench.cost.issue.TileIssue` (module docstring for the formula).
    """
    p = kernel.gemm
    assert p is not None
    ti = tile_issue(hw)
    cores = hw.matrix_engine.cores
    nxt = next_level(hw)
    lat = hw.offchip.latency_s
    active = np.minimum(ms.tiles, cores)
    bw_core = core_bandwidth(hw, nxt.sustained_bytes_per_s, active)
    rows = np.minimum(ms.tm, p.m)
    cols = np.minimum(ms.tn, p.n)
    terms = ti.gemm_terms(kernel, hw, ms, rows, cols, bw_core)
    peak_core = peak / cores
    if terms.misaligned:
        # NOTE: TMA needs 16-byte aligned strides (cuTensorMapEncodeTiled), so the library
        # falls back to a warp-level MMA kernel without bulk async copies.
        peak_core = peak_core * hw.matrix_engine.legacy_mma_fraction
    issue = hw.overheads.tile_issue_s  # NOTE: per tile step; 0 where the chip pays none
    t_extra = terms.dequant_s
    t_c = 2.0 * ms.tm * ms.tn * ms.tk / peak_core + t_extra
    t_skew = terms.fill_skew_s
    cluster = hw.matrix_engine.cluster_size
    t_l = (rows * p.a_bytes + cols * p.b_bytes / cluster) * ms.tk / bw_core
    hidden = np.maximum(np.maximum(t_c, t_l), lat / np.maximum(ms.stages - 1, 1))
    t_k = np.where(ms.stages >= 2, hidden, t_c + t_l + lat) + hw.matrix_engine.kstep_overhead_s
    work, t_k = ti.gemm_step(kernel, hw, ms, t_k, rows, cols)
    t_tile = ms.k_iters * (t_k + issue) + issue + (lat + t_l) + rows * cols * p.c_bytes / bw_core
    t_tile = t_tile + t_skew + terms.split_fixup_s
    pipeline = ms.waves * t_tile + terms.store_drain_s + terms.gather_s
    pipeline = pipeline + terms.epilogue_s
    issued = ms.waves * (ms.k_iters + 1) * issue
    pipeline, issue_s = _batched_issue(kernel, pipeline, issued, terms.issue_per_tile)
    compute = work / (peak_core * cores) + ms.waves * (ms.k_iters * t_extra + t_skew)
    sc = finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    return with_issue(sc, issue_s)


def _batched_issue(kernel: Kernel, pipeline, issued, per_tile: bool):
    """``(pipeline, issue seconds)`` once a batched GEMM's ``issued`` seconds of steps are issued.

    Where steps are issued once per (m, n) output tile (``GemmTerms.issue_per_tile``), every
    batch entry (head, conv group) of a tile runs in one call: ``issue = issued / batch``, and
    the pipeline trades ``issued`` for it. Else both are unchanged.
    """
    p = kernel.gemm
    assert p is not None
    if not per_tile or p.batch <= 1:
        return pipeline, issued
    issue_s = issued / p.batch
    return pipeline - issued + issue_s, issue_s


def core_bandwidth(hw: Hardware, level_bytes_per_s: float, active) -> np.ndarray:
    """Bytes/s one active core draws from the level above its SRAM.

    The active cores share the level's sustained bandwidth, but one core cannot pull more than
    its own port allows (``matrix_engine.core_load_bytes_per_clk`` x clock): an under-occupied
    GEMM (a 128-token prefill: a few dozen tiles on 132 SMs) does not get the whole chip's
    bandwidth through its few cores.
    """
    share = level_bytes_per_s / active
    me = hw.matrix_engine
    if me.core_load_bytes_per_clk > 0:
        share = np.minimum(share, me.core_load_bytes_per_clk * me.clock_hz)
    return share


def split_fixup_s(
    kernel: Kernel, hw: Hardware, ms: GemmMapspace, rows, cols, bw_core
) -> np.ndarray:
    """Per-tile time of the split-K reduction, seconds (0 without split-K).

    Split-K slices of an output tile run on different cores; each writes its fp32 partial tile
    to a workspace, and the slice that finishes last waits on the tile's semaphore, reads the
    other partials back and reduces them (CUTLASS "serial" split-K / stream-K fixup): one wait
    of the next level's latency plus (split - 1) partial tiles written and read by one core.
    A software-issued profile accumulates the slices in place (0).
    """
    return tile_issue(hw).gemm_terms(kernel, hw, ms, rows, cols, bw_core).split_fixup_s
