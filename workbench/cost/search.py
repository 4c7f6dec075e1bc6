"""Search: evaluate a kernel's whole mapspace with the cost model and keep the best.

Every candidate of a mapspace is costed at once with NumPy array arithmetic; the fastest
candidate that fits SRAM wins (a forced tile is kept even if it spills, and is then
capacity-bound). :func:`rank` returns the top-k for runtime autotuning.

The chosen candidate then meets the board's power roof (``engine FLOPs x pJ/FLOP / (TDP -
idle)``, :func:`workbench.cost.model.power_floor_s`): a kernel whose execution at the boost clock
is shorter than its roof would draw more than the board may spend, so it runs at the capped clock
and its compute, pipeline and execution take the roof's time (a compute-bound class); a longer
kernel draws less and keeps its clock. Candidates are ranked at the boost clock (the cap slows
every busy candidate alike, and the tiling that is fastest unthrottled stays the one chosen).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from workbench.cost.bottleneck import classify
from workbench.cost.collective import collective_cost
from workbench.cost.efficiency import math_efficiency
from workbench.cost.issue import tile_issue
from workbench.cost.model import Cost, energy, engine_flops, launch_and_sync
from workbench.cost.score_gemm import score_gemm
from workbench.cost.score_kernels import score_attention, score_rows
from workbench.cost.scored import Scored, at
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.options import MapOptions
from workbench.scheduling.attention import attention_mapspace
from workbench.scheduling.gemm import GemmMapspace, gemm_mapspace
from workbench.scheduling.rows import row_mapspace
from workbench.scheduling.tiling import Tiling

__all__ = ["Scored", "rank", "schedule"]


def _peak(kernel: Kernel, hw: Hardware) -> float:
    if kernel.engine == "matrix":
        fmt = kernel.compute_dtype
        return hw.peak_flops(fmt) * math_efficiency(hw, _exec_s, fmt)
    return hw.vector_flops(kernel.dtype)


def _exec_s(kernel: Kernel, hw: Hardware) -> float:
    """Device time of ``kernel``'s best fitting candidate, seconds (solves the math rate)."""
    _, sc = _mapspace(kernel, hw, MapOptions())
    return float(np.min(sc.key))


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
        sc = score_gemm(kernel, hw, ms, _peak(kernel, hw))
        # NOTE: a decision no cost depends on leaves its axis out of the key: restore it.
        return ms, replace(sc, key=np.broadcast_to(sc.key, ms.shape))
    if kernel.attention is not None:
        ms = attention_mapspace(kernel, hw, override=override, search=options.search)
        ms = _floor(kernel, hw, ms)
        kind = options.attention_kernel or hw.software.attention_kernel
        return ms, score_attention(kernel, hw, ms, kind, _peak(kernel, hw))
    ms = _floor(kernel, hw, row_mapspace(kernel, hw))
    return ms, score_rows(kernel, hw, ms)


def _tiling(kernel: Kernel, hw: Hardware, ms, sc: Scored, i: int) -> Tiling:
    sh = sc.key.shape
    cores = hw.matrix_engine.cores

    def pick(values: np.ndarray | float) -> float:
        return at(values, sh, i)

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


def _power_capped(kernel: Kernel, hw: Hardware, tiling: Tiling, exec_s: float) -> Tiling:
    """``tiling`` with its compute and pipeline at the board's power roof, where it binds.

    The roof binds where it is longer than the execution at the boost clock ``exec_s``
    (seconds); a kernel that takes longer than its roof draws less than the budget and keeps
    its clock, and its tiling is returned unchanged.
    """
    power = float(tile_issue(hw).power_floor_s(kernel, hw, engine_flops(kernel, tiling)))
    if power <= exec_s:
        return tiling
    return replace(
        tiling,
        compute_s=max(tiling.compute_s, power),
        pipeline_s=max(tiling.pipeline_s, power),
    )


def _cost(
    kernel: Kernel, hw: Hardware, options: MapOptions, ms, sc: Scored, i: int, tiling: Tiling
) -> Cost:
    sh = sc.key.shape
    mem = tuple((k, float(at(v, sh, i))) for k, v in sc.memory_s.items())
    exec_s = max(float(at(sc.exec_s, sh, i)), tiling.pipeline_s)
    launch_s, sync_s = launch_and_sync(
        exec_s,
        hw,
        launch=options.launch,
        host_s=options.launch_host_s,
        grid_barriers=tiling.barriers,
        drains=kernel.barriers,
    )
    total = exec_s + launch_s + sync_s
    compute = tiling.compute_s
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
        pipeline_s=tiling.pipeline_s,
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
    issue_s = float(at(sc.issue_s, sh, i))
    # NOTE: a software-issued profile classes from a time split (fixed: launch and issue).
    found = (cls, evidence)
    cls, evidence = tile_issue(hw).classify(kernel, hw, total, launch_s + issue_s, found)
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
        return [collective_cost(kernel, hw, options.launch, options.launch_host_s)]
    ms, sc = _mapspace(kernel, hw, options)
    out = []
    for i in sc.top(k):
        boost_s = float(at(sc.exec_s, sc.key.shape, int(i)))
        tiling = _power_capped(kernel, hw, _tiling(kernel, hw, ms, sc, int(i)), boost_s)
        out.append((tiling, _cost(kernel, hw, options, ms, sc, int(i), tiling)))
    return out


def mapspace_size(kernel: Kernel, hw: Hardware, options: MapOptions) -> int:
    """Number of candidates in ``kernel``'s mapspace (for throughput benchmarks)."""
    if kernel.kind == "collective":
        return 1
    return _mapspace(kernel, hw, options)[0].size
