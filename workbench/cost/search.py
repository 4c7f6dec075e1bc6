"""Search: evaluate a kernel's whole mapspace with the cost model and keep the best.

Every candidate of a mapspace is costed at once with NumPy array arithmetic; the fastest
candidate that fits SRAM wins (a forced tile is kept even if it spills, and is then
capacity-bound). :func:`rank` returns the top-k for runtime autotuning.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from workbench.cost.attention_class import fused_attention_times
from workbench.cost.bottleneck import classify
from workbench.cost.collective import collective_cost
from workbench.cost.efficiency import math_efficiency
from workbench.cost.host import (
    accumulate_s,
    call_slowdown,
    dram_stream_s,
    gather_s,
    host_class,
    row_rate,
    skinny_slowdown,
    transpose_s,
    vector_rate,
)
from workbench.cost.model import Cost, energy, launch_and_sync
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.options import MapOptions
from workbench.scheduling.attention import attention_mapspace
from workbench.scheduling.gemm import GemmMapspace, gemm_mapspace
from workbench.scheduling.rows import row_mapspace
from workbench.scheduling.tiling import Tiling

__all__ = ["Scored", "rank", "schedule"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored:
    """Times of every candidate of one mapspace (arrays) and the chosen index."""

    compute_s: np.ndarray
    pipeline_s: np.ndarray
    exec_s: np.ndarray
    memory_s: dict[str, np.ndarray]
    key: np.ndarray  # sort key: execution time, spilling candidates after every fitting one
    issue_s: np.ndarray | float = 0.0  # software tile-issue time inside pipeline_s (hosts)

    def top(self, k: int) -> np.ndarray:
        """Indices of the ``k`` best candidates, best first (ties keep mapspace order)."""
        key = self.key.ravel()
        if k == 1:
            return np.array([int(np.argmin(key))])
        if k < key.size:
            part = np.argpartition(key, k - 1)[:k]
            return part[np.lexsort((part, key[part]))]
        return np.argsort(key, kind="stable")


def _at(values: np.ndarray | float, shape: tuple[int, ...], i: int) -> float:
    """Candidate ``i`` (a flat index) of an array that broadcasts to the mapspace ``shape``."""
    return np.broadcast_to(values, shape).flat[i]


def _peak(kernel: Kernel, hw: Hardware) -> float:
    if kernel.engine == "matrix":
        fmt = kernel.compute_dtype
        return hw.peak_flops(fmt) * math_efficiency(hw, _exec_s, fmt)
    return hw.vector_flops(kernel.dtype)


def _exec_s(kernel: Kernel, hw: Hardware) -> float:
    """Device time of ``kernel``'s best fitting candidate, seconds (solves the math rate)."""
    _, sc = _mapspace(kernel, hw, MapOptions())
    return float(np.min(sc.key))


def _memory_times(hw: Hardware, traffic: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {
        lvl.name: traffic[lvl.name] / lvl.sustained_bytes_per_s
        for lvl in hw.memory
        if lvl.name in traffic
    }


def _next_level(hw: Hardware):
    s = hw.memory.index(hw.sram)
    return hw.memory[s + 1]


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


def _score_gemm(kernel: Kernel, hw: Hardware, ms: GemmMapspace) -> Scored:
    p = kernel.gemm
    assert p is not None
    cores = hw.matrix_engine.cores
    peak_core = _peak(kernel, hw) / cores
    if misaligned(kernel, hw):
        # NOTE: TMA needs 16-byte aligned strides (cuTensorMapEncodeTiled), so the library
        # falls back to a warp-level MMA kernel without bulk async copies.
        peak_core = peak_core * hw.matrix_engine.legacy_mma_fraction
    nxt = _next_level(hw)
    lat = hw.offchip.latency_s
    active = np.minimum(ms.tiles, cores)
    bw_core = _core_bandwidth(hw, nxt.sustained_bytes_per_s, active)
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
    t_tile = t_tile + t_skew + _split_fixup_s(hw, ms, rows, cols, bw_core)
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
    sc = _finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    return _with_issue(sc, issue_s)


def _core_bandwidth(hw: Hardware, level_bytes_per_s: float, active) -> np.ndarray:
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


def _split_fixup_s(hw: Hardware, ms: GemmMapspace, rows, cols, bw_core) -> np.ndarray:
    """Per-tile time of the split-K reduction, seconds (0 without split-K).

    Split-K slices of an output tile run on different cores; each writes its fp32 partial tile
    to a workspace, and the slice that finishes last waits on the tile's semaphore, reads the
    other partials back and reduces them (CUTLASS "serial" split-K / stream-K fixup): one wait
    of the next level's latency plus (split - 1) partial tiles written and read by one core.
    """
    if hw.overheads.tile_issue_s > 0:
        return np.zeros(1)
    lat = _next_level(hw).latency_s
    partial = 2.0 * rows * cols * 4.0 * (ms.split - 1) / bw_core
    return np.where(ms.split > 1, lat + partial, 0.0)


def _score_attention(kernel: Kernel, hw: Hardware, ms, kind: str = "fa2") -> Scored:
    p = kernel.attention
    assert p is not None
    cores = hw.matrix_engine.cores
    peak_core = _peak(kernel, hw) / cores
    vec_core = hw.vector_flops("fp32") / cores
    sfu = hw.vector_unit.special_function_ops_per_s or hw.vector_flops("fp32")
    nxt = _next_level(hw)
    lat = hw.offchip.latency_s
    active = np.minimum(ms.items, cores)
    bw_core = nxt.sustained_bytes_per_s / active
    t_mm = 4.0 * ms.br * ms.bc * p.head_dim / peak_core
    if issue_free(hw) and kind != "generic":
        t_l = 2.0 * ms.bc * p.head_dim * p.kv_bytes / bw_core
        compute, pipeline = fused_attention_times(kernel, hw, ms, kind, t_mm, t_l, active)
        return _finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
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
        sc = _finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
        return _with_issue(sc, issue_s)
    sc = _finish(kernel, hw, ms.traffic, compute, pipeline, ms.fits)
    return _with_issue(sc, np.maximum(ms.blocks / active, ms.max_blocks) * issue)


def issue_free(hw: Hardware) -> bool:
    """Whether the hardware schedules its own tiles (no software tile issue: GPUs, NPUs)."""
    return hw.overheads.tile_issue_s == 0


def _score_rows(kernel: Kernel, hw: Hardware, ms) -> Scored:
    cores = hw.matrix_engine.cores
    util = np.minimum(1.0, ms.tiles / cores)
    flops = kernel.flops if kernel.engine != "matrix" else kernel.vector_flops
    # NOTE: host: a layout transform's strided copy at its calibrated rate (0 elsewhere).
    compute = flops / (vector_rate(kernel, hw) * util) + transpose_s(kernel, hw)
    # NOTE: assumption: one core can draw up to 4x its fair share of a level's bandwidth.
    bw_util = np.minimum(1.0, 4.0 * ms.tiles / cores)
    traffic = ms.traffic
    mem = {k: v / bw_util for k, v in _memory_times(hw, traffic).items()}
    issue = ms.tiles * ms.passes * hw.overheads.tile_issue_s / np.minimum(ms.tiles, cores)
    pipeline = compute + hw.offchip.latency_s * ms.passes + issue
    sync = ms.barriers * hw.overheads.barrier_s
    sc = _finish(kernel, hw, traffic, compute, pipeline, ms.fits, mem=mem, penalty=sync)
    return _with_issue(sc, issue)


def _with_issue(sc: Scored, issue_s: np.ndarray | float) -> Scored:

    return replace(sc, issue_s=issue_s)


def _finish(kernel, hw, traffic, compute, pipeline, fits, mem=None, penalty=0.0) -> Scored:
    mem = mem if mem is not None else _memory_times(hw, traffic)
    exec_s = pipeline.copy()
    for t in mem.values():
        exec_s = np.maximum(exec_s, t)
    stream = dram_stream_s(kernel, hw)
    if stream > 0:
        # NOTE: host only: streaming from DRAM adds to the calls (see dram_stream_s).
        exec_s = np.maximum(exec_s, pipeline + stream)
    # Spilling candidates sort after every fitting one.
    key = exec_s + penalty + np.where(fits, 0.0, 1e9)
    return Scored(compute_s=compute, pipeline_s=pipeline, exec_s=exec_s, memory_s=mem, key=key)


def _floor(kernel: Kernel, hw: Hardware, ms):
    """Off-chip traffic is never below the kernel's compulsory bytes (e.g. a KV-cache append)."""
    off = hw.offchip.name
    # NOTE: an input the previous kernel left in the shared cache is read there, not off-chip.
    cached = float(kernel.cached_input_bytes)
    ms.traffic[off] = np.maximum(ms.traffic[off] - cached, float(kernel.bytes) - cached)
    return ms


def _mapspace(kernel: Kernel, hw: Hardware, options: MapOptions):
    override = options.tile_for(kernel.name)
    if kernel.gemm is not None:
        ms = _floor(kernel, hw, gemm_mapspace(kernel, hw, override=override, search=options.search))
        sc = _score_gemm(kernel, hw, ms)
        # NOTE: a decision no cost depends on leaves its axis out of the key: restore it.
        return ms, replace(sc, key=np.broadcast_to(sc.key, ms.shape))
    if kernel.attention is not None:
        ms = attention_mapspace(kernel, hw, override=override, search=options.search)
        ms = _floor(kernel, hw, ms)
        kind = options.attention_kernel or hw.software.attention_kernel
        return ms, _score_attention(kernel, hw, ms, kind)
    ms = _floor(kernel, hw, row_mapspace(kernel, hw))
    return ms, _score_rows(kernel, hw, ms)


def _tiling(kernel: Kernel, hw: Hardware, ms, sc: Scored, i: int) -> Tiling:
    sh = sc.key.shape
    cores = hw.matrix_engine.cores

    def pick(values: np.ndarray | float) -> float:
        return _at(values, sh, i)

    def spread(tiles: int) -> dict[str, Any]:
        waves = -(-tiles // cores)
        return {"tiles": tiles, "waves": waves, "wave_efficiency": tiles / (waves * cores)}

    common: dict[str, Any] = {
        "sram_capacity_bytes": hw.sram.capacity_bytes,
        "traffic": tuple((k, float(pick(v))) for k, v in ms.traffic.items()),
        "compute_s": float(pick(sc.compute_s)),
        "pipeline_s": float(pick(sc.pipeline_s)),
        "candidates": ms.size,
        "sram_bytes": int(pick(ms.sram_bytes)),
    }
    if kernel.gemm is not None:
        return Tiling(
            tile_m=int(pick(ms.tm)),
            tile_n=int(pick(ms.tn)),
            tile_k=int(pick(ms.tk)),
            stages=int(pick(ms.stages)),
            split_k=int(pick(ms.split)),
            raster="mn" if pick(ms.raster) == 0 else "nm",
            dataflow=GemmMapspace.dataflow_name(int(pick(ms.dataflow))),
            register_bytes=int(pick(ms.register_bytes)),
            padded_flops=int(pick(ms.padded_flops)),
            spill_bytes=float(pick(ms.spill)),
            source=ms.source,
            **spread(int(pick(ms.tiles))),
            **common,
        )
    if kernel.attention is not None:
        return Tiling(
            tile_m=int(pick(ms.br)),
            tile_n=int(pick(ms.bc)),
            tile_k=kernel.attention.head_dim,
            stages=int(pick(ms.stages)),
            split_k=int(pick(ms.split)),
            register_bytes=int(pick(ms.register_bytes)),
            padded_flops=int(pick(ms.padded_flops)),
            spill_bytes=float(pick(ms.spill)),
            source=ms.source,
            **spread(int(pick(ms.items))),
            **common,
        )
    return Tiling(
        tile_m=int(pick(ms.rows_per_tile)),
        tile_n=int(pick(ms.cols_per_tile)),
        tile_k=1,
        split_k=int(pick(ms.split)),
        passes=int(pick(ms.passes)),
        barriers=int(pick(ms.barriers)),
        padded_flops=kernel.flops,
        source="search",
        **spread(int(pick(ms.tiles))),
        **common,
    )


def _cost(
    kernel: Kernel, hw: Hardware, options: MapOptions, ms, sc: Scored, i: int, tiling: Tiling
) -> Cost:
    sh = sc.key.shape
    mem = tuple((k, float(_at(v, sh, i))) for k, v in sc.memory_s.items())
    exec_s = float(_at(sc.exec_s, sh, i))
    barriers = kernel.barriers + tiling.barriers
    launch_s, sync_s = launch_and_sync(exec_s, barriers, hw, options.launch)
    total = exec_s + launch_s + sync_s
    compute = float(_at(sc.compute_s, sh, i))
    stall = max(0.0, exec_s - compute)
    traffic = dict(tiling.traffic)
    e = energy(
        hw,
        dtype=kernel.compute_dtype if kernel.engine == "matrix" else "fp32",
        matmul_flops=tiling.padded_flops if kernel.gemm or kernel.attention else 0,
        vector_flops=kernel.vector_flops,
        traffic=traffic,
        link_bytes=kernel.link_bytes,
        seconds=total,
    )
    cost = Cost(
        compute_s=compute,
        pipeline_s=float(_at(sc.pipeline_s, sh, i)),
        memory_s=mem,
        traffic=tiling.traffic,
        exec_s=exec_s,
        launch_s=launch_s,
        sync_s=sync_s,
        total_s=total,
        stall_s=stall,
        energy_j=e,
    )
    cls, evidence = classify(kernel, tiling, cost, hw)
    issue_s = float(_at(sc.issue_s, sh, i))
    if hw.overheads.tile_issue_s > 0 and cls not in ("capacity", "sync"):
        # NOTE: only software-scheduled hosts (tile_issue_s > 0) reach here.
        cls, evidence = host_class(kernel, hw, total, launch_s + issue_s)
    return _with_class(cost, cls, evidence)


def _with_class(cost: Cost, cls: str, evidence: str) -> Cost:

    return replace(cost, bottleneck=cls, evidence=evidence)


def schedule(kernel: Kernel, hw: Hardware, options: MapOptions) -> tuple[Tiling, Cost]:
    """Choose the tiling of ``kernel`` and predict its cost.

    Precedence: a forced tile from ``options.tiles`` beats the search, and the search beats the
    default heuristic (``options.search == "heuristic"``).

    Args:
        kernel: The kernel.
        hw: Target hardware.
        options: Overrides (tiles, search mode, launch mode).

    Returns:
        The chosen :class:`Tiling` and its :class:`Cost`.
    """
    return rank(kernel, hw, options, k=1)[0]


def rank(
    kernel: Kernel, hw: Hardware, options: MapOptions, k: int = 5
) -> list[tuple[Tiling, Cost]]:
    """The ``k`` best candidates of ``kernel``'s mapspace by predicted time, best first.

    Args:
        kernel: The kernel.
        hw: Target hardware.
        options: Overrides.
        k: How many candidates to return.

    Returns:
        ``(Tiling, Cost)`` pairs, fastest first (candidates that fit SRAM first).
    """
    if kernel.kind == "collective":
        return [collective_cost(kernel, hw, options.launch)]
    ms, sc = _mapspace(kernel, hw, options)
    out = []
    for i in sc.top(k):
        tiling = _tiling(kernel, hw, ms, sc, int(i))
        out.append((tiling, _cost(kernel, hw, options, ms, sc, int(i), tiling)))
    return out


def mapspace_size(kernel: Kernel, hw: Hardware, options: MapOptions) -> int:
    """Number of candidates in ``kernel``'s mapspace (for throughput benchmarks)."""
    if kernel.kind == "collective":
        return 1
    return _mapspace(kernel, hw, options)[0].size
