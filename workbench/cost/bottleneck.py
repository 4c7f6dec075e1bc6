"""Bottleneck class of a kernel and the figures that prove it.

Rules, in order:

1. ``capacity``: the tile overflows the per-core SRAM (only a forced tile can): its spill
   traffic is the evidence.
2. ``interconnect``: a collective (time on links).
3. ``overhead``: launch overhead is larger than the execution itself.
4. ``sync``: barrier time is larger than the execution.
5. ``bandwidth:<next level>`` (per core) when the tile pipeline is slower than every level's
   aggregate transfer time and the engine computes less than 60% of it: tile loads and their
   latency, not the aggregate bandwidth, hold the engine back.
6. ``compute`` when the tile pipeline (its engine busy at least 60% of it) is slower than
   every level's transfer, or the compute time alone is; else ``bandwidth:<level>`` for the
   slowest level. The sentences compare the same quantities the class was decided on, so they
   never contradict it; a compute-bound kernel held at the board's power roof
   (:func:`workbench.cost.model.power_floor_s`) says so, with the rate the budget sustains.
"""

from __future__ import annotations

from workbench._format import fmt_bytes, fmt_rate, fmt_si, fmt_time
from workbench.cost.issue import tile_issue
from workbench.cost.model import Bottleneck, Cost, engine_flops
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["classify"]


def classify(kernel: Kernel, tiling: Tiling, cost: Cost, hw: Hardware) -> tuple[str, str]:
    """Return ``(class, evidence sentence)`` for one kernel's cost.

    Args:
        kernel: The kernel.
        tiling: Its chosen tiling.
        cost: Its cost (time parts filled in).
        hw: Hardware, for ridge points and bandwidths.

    Returns:
        The class and one sentence with the figures that prove it; when a launch gap adds to
        the execution, the sentence ends with it, so that the figures add up to the kernel's
        time (``busy 17% of 2 us`` in a 3.5 us kernel names the 1.5 us launch).
    """
    cls, why = _classify(kernel, tiling, cost, hw)
    if cost.launch_s > 0 and cls != "overhead":
        total = cost.exec_s + cost.launch_s + cost.sync_s
        why += f"; plus launch {fmt_time(cost.launch_s)} = {fmt_time(total)} in all"
    return cls, why


def _classify(kernel: Kernel, tiling: Tiling, cost: Cost, hw: Hardware) -> tuple[str, str]:
    if tiling.sram_bytes > tiling.sram_capacity_bytes:
        return "capacity", (
            f"capacity-bound: tile {tiling.shape} x{tiling.stages} stages needs "
            f"{tiling.sram_bytes / 1024:.0f} KiB > {hw.sram.name} "
            f"{tiling.sram_capacity_bytes / 1024:.0f} KiB; spills {fmt_bytes(tiling.spill_bytes)}"
            f" to the next level ({fmt_time(cost.exec_s)} execution)"
        )
    if kernel.kind == "collective":
        bw = hw.interconnect.bandwidth_bytes_per_s
        return "interconnect", (
            f"interconnect-bound: {fmt_bytes(kernel.link_bytes)} per chip over "
            f"{fmt_si(bw, 'B/s')} links ({kernel.chips} chips) = {fmt_time(cost.network_s)}"
        )
    if cost.launch_s > cost.exec_s:
        return "overhead", (
            f"overhead-bound: launch {fmt_time(cost.launch_s)} > execution {fmt_time(cost.exec_s)}"
        )
    if cost.sync_s > cost.exec_s:
        return "sync", (
            f"sync-bound: {_syncs(kernel.barriers, tiling.barriers)} "
            f"{fmt_time(cost.sync_s)} > execution {fmt_time(cost.exec_s)}"
        )
    level, mem_s = max(cost.memory_s, key=lambda p: p[1], default=("", 0.0))
    intensity = kernel.flops / kernel.bytes if kernel.bytes else float("inf")
    nxt = hw.memory[hw.memory.index(hw.sram) + 1]
    pipeline_bound = cost.pipeline_s > mem_s
    if pipeline_bound and cost.compute_s < 0.6 * cost.pipeline_s:
        return str(Bottleneck.bandwidth(nxt.name)), (
            f"{nxt.name}-bandwidth-bound (per core): tile loads from {nxt.name} and their "
            f"latency leave the engine busy only {cost.compute_s / cost.pipeline_s:.0%} of "
            f"{fmt_time(cost.pipeline_s)} ({tiling.tiles} tiles on {hw.matrix_engine.cores} "
            f"cores, tile {tiling.shape}, {tiling.stages} stages)"
        )
    if pipeline_bound or cost.compute_s >= mem_s:
        fmt = kernel.compute_dtype
        peak = hw.peak_flops(fmt) if kernel.engine == "matrix" else hw.vector_flops(fmt)
        achieved = kernel.flops / cost.exec_s if cost.exec_s else 0.0
        ridge = peak / hw.offchip.sustained_bytes_per_s
        return "compute", (
            f"compute-bound on the {kernel.engine} engine: intensity {intensity:.3g} FLOP/B vs "
            f"{hw.offchip.name} ridge {ridge:.3g} FLOP/B; {fmt_rate(achieved)} = "
            f"{achieved / peak:.0%} of {fmt} peak (wave efficiency "
            f"{tiling.wave_efficiency:.0%}); tile pipeline {fmt_time(cost.pipeline_s)} >= "
            f"slowest transfer ({level} {fmt_time(mem_s)})"
        ) + _power_capped(kernel, tiling, cost, hw)
    lvl = hw.level(level)
    moved = cost.bytes_at(level)
    return str(Bottleneck.bandwidth(level)), (
        f"{level}-bandwidth-bound: moves {fmt_bytes(moved)} at "
        f"{fmt_si(lvl.sustained_bytes_per_s, 'B/s')} sustained = {fmt_time(mem_s)} >= tile "
        f"pipeline {fmt_time(cost.pipeline_s)} (compute {fmt_time(cost.compute_s)}); "
        f"intensity {intensity:.3g} FLOP/B"
    )


def _power_capped(kernel: Kernel, tiling: Tiling, cost: Cost, hw: Hardware) -> str:
    """``"; held at the power cap ..."`` where the board's power roof sets the time, else ``""``."""
    flops = engine_flops(kernel, tiling)
    roof = float(tile_issue(hw).power_floor_s(kernel, hw, flops))
    if roof <= 0 or roof < 0.999 * cost.exec_s:
        return ""
    budget = hw.power.tdp_w - hw.power.idle_w
    return (
        f"; held at the board's power cap: {budget:.3g} W above idle sustains "
        f"{fmt_rate(flops / roof)} at this format (the clock falls below boost)"
    )


def _syncs(drains: int, grid: int) -> str:
    """``1 device-wide sync after it (its next launch exposed)``, ``2 grid barrier(s)``, or both."""
    parts = [f"{grid} grid barrier(s)"] if grid else []
    if drains:
        parts.append(f"{drains} device-wide sync(s) after it (its next launch exposed)")
    return " + ".join(parts) or "0 barrier(s)"
