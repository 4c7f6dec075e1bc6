"""Scoring a GEMM mapspace: per-tile K-step pipeline, per-core load limit, split-K fix-up.

Per candidate (arrays over the mapspace), seconds::

    K-step   = max(math, loads from the next level, latency / (stages - 1))   (pipelined)
    tile     = K-steps x K-step + prologue load + output store + split-K fix-up (+ skew)
    pipeline = waves x tile

The math rate (``peak``, FLOP/s for the whole chip) is solved by the caller
(:func:`workbench.cost.efficiency.math_efficiency`) and shared evenly by the cores.
"""

from __future__ import annotations

import numpy as np

from workbench.cost.host import accumulate_s, call_slowdown, gather_s, skinny_slowdown, vector_rate
from workbench.cost.scored import Scored, finish, next_level, with_issue
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.gemm import GemmMapspace

__all__ = ["core_bandwidth", "misaligned", "score_gemm", "split_fixup_s"]


def misaligned(kernel: Kernel, hw: Hardware) -> bool:
    """A matrix-engine GEMM whose operand strides keep it off the engine's asynchronous path."""
    p = kernel.gemm
    return (
        p is not None
        and kernel.engine == "matrix"
        and hw.matrix_engine.legacy_mma_fraction < 1
        and hw.overheads.tile_issue_s == 0
        and not p.strides_aligned
    )


def score_gemm(kernel: Kernel, hw: Hardware, ms: GemmMapspace, peak: float) -> Scored:
    """Times of every candidate of a GEMM mapspace at the chip's math rate ``peak`` (FLOP/s)."""
    p = kernel.gemm
    assert p is not None
    cores = hw.matrix_engine.cores
    peak_core = peak / cores
    if misaligned(kernel, hw):
        # NOTE: TMA needs 16-byte aligned strides (cuTensorMapEncodeTiled), so the library
        # falls back to a warp-level MMA kernel without bulk async copies.
        peak_core = peak_core * hw.matrix_engine.legacy_mma_fraction
    nxt = next_level(hw)
    lat = hw.offchip.latency_s
    active = np.minimum(ms.tiles, cores)
    bw_core = core_bandwidth(hw, nxt.sustained_bytes_per_s, active)
    rows = np.minimum(ms.tm, p.m)
    cols = np.minimum(ms.tn, p.n)
    t_c = 2.0 * ms.tm * ms.tn * ms.tk / peak_core
    issue = hw.overheads.tile_issue_s
    t_extra = 0.0
    if p.b_dequant_ops and issue == 0:
        # NOTE: weight-only formats: the vector unit (CUDA cores, VPU) dequantizes each K-step's
        # B tile before the matrix engine uses it; the same warps issue both, so it adds to the
        # step's compute (an FMA is 2 FLOPs of the vector peak, one instruction).
        t_extra = (
            np.minimum(ms.tn, p.n) * ms.tk * p.b_dequant_ops / (hw.vector_flops("fp32") / 2 / cores)
        )
        t_c = t_c + t_extra
    skew = hw.matrix_engine.fold_skew_cycles
    # NOTE: a systolic array fills before its first fold and drains after its last (rows +
    # cols - 2 cycles); the folds in between stream back to back (weights double-buffered, the
    # next wavefront entering as the last leaves), so a tile pays the skew once.
    t_skew = skew / hw.matrix_engine.clock_hz if skew and issue == 0 else 0.0
    cluster = hw.matrix_engine.cluster_size
    t_l = (rows * p.a_bytes + cols * p.b_bytes / cluster) * ms.tk / bw_core
    hidden = np.maximum(np.maximum(t_c, t_l), lat / np.maximum(ms.stages - 1, 1))
    t_k = np.where(ms.stages >= 2, hidden, t_c + t_l + lat) + hw.matrix_engine.kstep_overhead_s
    padded = ms.padded_flops
    if issue > 0:
        # NOTE: software-scheduled host (tile_issue_s > 0): a library call runs the exact
        # slice, so edge tiles cost their true work, not the padded native tile; every tile
        # issues its K-steps and one epilogue/store step.
        padded = np.broadcast_to(2.0 * p.batch * p.m * p.n * p.k, np.shape(padded))
        t_k = t_k * (padded / np.maximum(ms.padded_flops, 1))
        # A cube of the same work. The engine issues a tile's batch entries as one matmul
        # call, but NumPy runs a stacked matmul as one BLAS call per batch entry, so each runs
        # at the rate of one entry's size.
        call = np.cbrt(rows * cols * np.minimum(ms.tk, p.k))
        # A skinny call (few rows) runs at the rate of its row count, whatever its work.
        slow = np.maximum(call_slowdown(hw, call), skinny_slowdown(hw, rows))
        t_k = t_k * slow + accumulate_s(hw, rows * cols * 4.0)
    t_tile = ms.k_iters * (t_k + issue) + issue + (lat + t_l) + rows * cols * p.c_bytes / bw_core
    t_tile = t_tile + t_skew + split_fixup_s(hw, ms, rows, cols, bw_core)
    # NOTE: the kernel ends when the last wave's output stores have landed: one store latency
    # after its last tile (earlier waves' stores overlap the next wave's main loop).
    drain = lat if issue == 0 else 0.0
    pipeline = ms.waves * t_tile + drain + gather_s(kernel, hw)
    if issue > 0 and kernel.vector_flops:
        # NOTE: host: the fused epilogue (bias, activation, residual) runs as library passes
        # over each output tile after its matmul, at the calibrated elementwise rate; on an
        # accelerator it overlaps the next tile's main loop and costs no extra time.
        pipeline = pipeline + kernel.vector_flops / vector_rate(kernel, hw, "elementwise")
    issue_s = ms.waves * (ms.k_iters + 1) * issue
    if issue > 0 and p.batch > 1:
        # NOTE: software-scheduled host: the engine runs every batch entry (head, conv group)
        # of an output tile in one library call, so tile steps are issued once per tile of
        # the (m, n) grid, not once per batch entry.
        issue_s = issue_s / p.batch
        pipeline = pipeline - ms.waves * (ms.k_iters + 1) * issue + issue_s
    compute = padded / (peak_core * cores) + ms.waves * (ms.k_iters * t_extra + t_skew)
    sc = finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    return with_issue(sc, issue_s)


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


def split_fixup_s(hw: Hardware, ms: GemmMapspace, rows, cols, bw_core) -> np.ndarray:
    """Per-tile time of the split-K reduction, seconds (0 without split-K).

    Split-K slices of an output tile run on different cores; each writes its fp32 partial tile
    to a workspace, and the slice that finishes last waits on the tile's semaphore, reads the
    other partials back and reduces them (CUTLASS "serial" split-K / stream-K fixup): one wait
    of the next level's latency plus (split - 1) partial tiles written and read by one core.
    """
    if hw.overheads.tile_issue_s > 0:
        return np.zeros(1)
    lat = next_level(hw).latency_s
    partial = 2.0 * rows * cols * 4.0 * (ms.split - 1) / bw_core
    return np.where(ms.split > 1, lat + partial, 0.0)
