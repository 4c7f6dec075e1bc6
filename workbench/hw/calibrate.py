"""Measure this machine as an accelerator and write it as a hardware profile.

``calibrate()`` times a few microbenchmarks with NumPy and turns them into a :class:`Hardware`
that the mapper uses like any other profile:

* matrix engine: achieved square-matmul FLOP/s per dtype (fp32, fp16; fp64 is timed as a
  reference and recorded in ``assumptions`` because the workbench has no fp64 dtype). The fp32
  rate is timed at tile-sized sides (the calls the tiled engine issues) and the native tile is the
  smallest side that reaches 40% of that rate. ``cores = 1``: the NumPy engine runs tiles one
  after another; the BLAS call inside each tile uses every thread, so the tile-sized rate is the
  per-core peak of this one "core";
* memory levels: copy bandwidth at working sets swept across the cache sizes the OS reports
  (``/sys/devices/system/cpu/cpu0/cache``), so each cache level and DRAM gets its own figure;
* overheads: ``tile_issue_s`` is the time to issue one tile step (one K-step or one tile's
  store) and ``kernel_launch_s`` the fixed cost of one kernel through the engine's entry point;
  both come from an ``engine`` probe (the execution layer passes the real engine's code path,
  :func:`workbench.execution.probe.probe_engine`); without one, a NumPy replica of the engine's
  K-step loop and a tiny NumPy op stand in. The spread of tiny-op calls gives the variance figures;
* vector unit: the effective rate of the engine's row/elementwise kernels under the library's
  FLOP convention (from the probe; fallback: one thread's in-cache multiply rate).

A CUDA device is measured by :func:`workbench.execution.gpu_probe.probe_gpu` and turned into a
profile by :func:`gpu_profile` (re-exported here from :mod:`workbench.hw.gpu_calibrate`).

Everything measured is a lower bound on what the silicon can do (NumPy and its BLAS stand between
us and the hardware); that is the point: it is what *this* software stack achieves here.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from workbench._files import write_text_safely
from workbench.hw._measure import (
    SKINNY_KN,
    SKINNY_ROWS,
    CacheLevel,
    _best_time,
    _call_overheads,
    _clock_hz,
    _copy_bandwidth,
    _matmul_flops,
    _skinny_flops,
    _triad_bandwidth,
    cache_levels,
)
from workbench.hw._merge import best_of
from workbench.hw.gpu_calibrate import NO_INTERCONNECT, gpu_profile
from workbench.hw.schema import SCHEMA_VERSION, Hardware

__all__ = [
    "CacheLevel",
    "best_of",
    "cache_levels",
    "calibrate",
    "gpu_profile",
    "write_profile",
]

_PJ_PER_FLOP = {"fp32": 2.3, "fp16": 0.75}
_PJ_PER_BYTE = {"register": 0.25, 1: 1.25, 2: 2.5, 3: 12.5, "dram": 160.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plan:
    matmul_n: tuple[tuple[str, int], ...]
    tile_sides: tuple[int, ...]
    overhead_samples: int
    repeat: int
    min_time_s: float
    dram_min_bytes: int


_QUICK = _Plan(
    matmul_n=(("float64", 128), ("float16", 48)),
    tile_sides=(16, 32, 64, 128, 256, 512),
    overhead_samples=40,
    repeat=7,
    min_time_s=0.004,
    dram_min_bytes=16 * 1024**2,
)
_FULL = _Plan(
    matmul_n=(("float64", 768), ("float16", 192)),
    tile_sides=(16, 32, 64, 128, 192, 256, 384, 512, 1024),
    overhead_samples=400,
    repeat=5,
    min_time_s=0.1,
    dram_min_bytes=128 * 1024**2,
)
#: Re-measurement between validation kernels (:func:`calibrate` with ``light=True``): the quick
#: sizes with fewer, shorter timing rounds (about 0.4 s of CPU on a 2-core x86 host).
_LIGHT = _Plan(
    matmul_n=(("float64", 96), ("float16", 32)),
    tile_sides=(16, 32, 64, 128, 256, 512),
    overhead_samples=16,
    repeat=3,
    min_time_s=0.001,
    dram_min_bytes=16 * 1024**2,
)
#: A side reaches the engine's rate when its matmul runs at this share of the best tile rate.
NATIVE_RATE_SHARE = 0.4

#: What an engine probe returns: ``tile_issue_s``, ``kernel_launch_s`` (seconds) and
#: ``vector_flops_per_s`` (FLOP/s) as floats, and ``notes`` (how each was measured).
EngineFigures = dict[str, Any]
EngineProbe = Callable[[Hardware, bool], EngineFigures]


def _tile_rates(sides: tuple[int, ...], **timing: Any) -> dict[int, float]:
    """fp32 square-matmul FLOP/s at each tile side (the calls the tiled engine issues)."""
    return {n: _matmul_flops("float32", n, **timing) for n in sides}


def native_side(rates: dict[int, float], share: float = NATIVE_RATE_SHARE) -> int:
    """Smallest side whose matmul reaches ``share`` of the best rate (the native tile).

    >>> native_side({16: 1e9, 32: 3e10, 64: 8e10, 128: 1.8e11})
    64
    """
    best = max(rates.values())
    return min(n for n, r in rates.items() if r >= share * best)


def _replica_issue_s(repeat: int) -> float:
    """Per-step time of the engine's K-step loop replicated in NumPy (fallback), seconds.

    64^3 at 8x8x8: per output tile, 8 K-steps (slice, matmul, accumulate) and one store; the
    time over 64 x (8 + 1) steps.
    """
    a = np.ones((64, 64), np.float32)
    out = np.empty_like(a)

    def run() -> None:
        for m0 in range(0, 64, 8):
            for n0 in range(0, 64, 8):
                ar, bc = a[m0 : m0 + 8], a[:, n0 : n0 + 8]
                acc = np.matmul(ar[:, 0:8], bc[0:8])
                for k0 in range(8, 64, 8):
                    acc += np.matmul(ar[:, k0 : k0 + 8], bc[k0 : k0 + 8])
                out[m0 : m0 + 8, n0 : n0 + 8] = acc

    return _best_time(run, repeat=repeat, min_time_s=0.005) / (64 * 9)


def _fallback_engine(launch_s: float, vector_s: float, repeat: int) -> EngineFigures:
    issue = _replica_issue_s(repeat)
    return {
        "tile_issue_s": issue,
        "kernel_launch_s": launch_s,
        "vector_flops_per_s": vector_s,
        "notes": (
            f"tile issue {issue * 1e6:.3g} us: NumPy replica of the engine's K-step loop "
            "(64^3 at 8x8x8, time / (tiles x (K-steps + 1)))",
            "kernel launch: median time of a 16-element NumPy add (no engine probe given)",
            "vector rate: one thread's in-cache float32 multiply, 1 FLOP per element "
            "(no engine probe given)",
        ),
    }


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    # NOTE: pass `disable` only when asked to, so TQDM_DISABLE in the environment still works.
    kwargs: dict[str, Any] = {} if enabled else {"disable": True}
    return tqdm(total=total, desc="calibrate", unit="step", **kwargs)


def _memory_levels(
    caches: tuple[CacheLevel, ...], bandwidths: list[float], cores: int, dram: float
) -> list[dict[str, object]]:
    # NOTE: the tiling target is the last-level cache: one NumPy tile is one BLAS call, which
    # blocks for L1/L2 itself; the tile's operands should stay cache-resident across the K loop.
    # With cores = 1 (tiles run one after another) that cache is the one "core's" SRAM.
    target = caches[-1]
    levels: list[dict[str, object]] = [
        {
            "name": "registers",
            "kind": "register",
            "scope": "per_core",
            "capacity_bytes": 16 * 32,  # assumption: 16 x 256-bit vector registers
            "bandwidth_bytes_per_s": 2.0 * bandwidths[0],  # assumption: 2x L1
            "energy_pj_per_byte": _PJ_PER_BYTE["register"],
        }
    ]
    for cache, bw in zip(caches, bandwidths, strict=False):
        kind = "sram" if cache is target else "cache"
        levels.append(
            {
                "name": f"l{cache.level}",
                "kind": kind,
                "scope": "per_core" if cache.per_core or cache is target else "shared",
                "capacity_bytes": cache.size_bytes,
                "bandwidth_bytes_per_s": bw * (cores if cache.per_core else 1),
                "energy_pj_per_byte": _PJ_PER_BYTE.get(cache.level, 12.5),
            }
        )
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    levels.append(
        {
            "name": "dram",
            "kind": "dram",
            "scope": "shared",
            "capacity_bytes": int(pages),
            "bandwidth_bytes_per_s": bandwidths[-1],
            "energy_pj_per_byte": _PJ_PER_BYTE["dram"],
        }
    )
    return levels


def _variance(overheads: list[float]) -> tuple[float, dict[str, float]]:
    median = statistics.median(overheads)
    slow = [t for t in overheads if t > 3 * median]
    variance = {
        "launch_jitter_s": statistics.pstdev(overheads),
        "slow_step_probability": len(slow) / len(overheads),
        "slow_step_factor": max(1.0, statistics.fmean(slow) / median) if slow else 1.0,
    }
    return median, variance


def calibrate(
    *,
    quick: bool = False,
    progress: bool = True,
    name: str = "host",
    engine: EngineProbe | None = None,
    light: bool = False,
) -> Hardware:
    """Measure this machine and return it as a hardware profile.

    Args:
        quick: Small problem sizes and short timings (a few seconds); for tests.
        light: The quick sizes with fewer, shorter timing rounds (about 0.4 s of CPU): the probe
            ``workbench validate`` re-runs between kernels so each kernel is predicted on rates
            measured next to it. Implies ``quick`` (also for the engine probe).
        progress: Show a tqdm progress bar (``TQDM_DISABLE=1`` also hides it).
        name: Profile name.
        engine: Probe of the execution engine, called with the profile measured so far and
            ``quick``; it returns the engine's tile issue, kernel launch and vector figures
            (see :data:`EngineFigures`). None: NumPy stand-ins (see the module docstring).

    Returns:
        A validated :class:`Hardware`; figures are achieved rates in SI units (FLOP/s, bytes/s,
        seconds), not datasheet peaks.
    """
    quick = quick or light
    plan = _LIGHT if light else _QUICK if quick else _FULL
    caches = cache_levels()
    timing: dict[str, Any] = {"repeat": plan.repeat, "min_time_s": plan.min_time_s}
    sizes = [c.size_bytes // 2 for c in caches]
    dram_ws = max(plan.dram_min_bytes, (2 if quick else 4) * caches[-1].size_bytes)
    bar = _progress(4 + len(plan.matmul_n) + len(sizes) + (engine is not None), progress)
    with bar:
        overheads = _call_overheads(plan.overhead_samples)
        launch_s, variance = _variance(overheads)
        bar.update()
        flops = {}
        for dtype, n in plan.matmul_n:
            flops[dtype] = _matmul_flops(dtype, n, **timing)
            bar.update()
        rates = _tile_rates(plan.tile_sides, **timing)
        flops["float32"] = max(rates.values())
        skinny = {m: _skinny_flops(m, **timing) for m in SKINNY_ROWS}
        bar.update()
        bandwidths = []
        for ws in (*sizes, dram_ws):
            bandwidths.append(_copy_bandwidth(ws, launch_s, **timing))
            bar.update()
        triad = _triad_bandwidth(dram_ws // 24, **timing)
        vec_n = max(sizes[min(1, len(sizes) - 1)] // 8, 256)
        vec = np.ones(vec_n, np.float32)
        vec_t = _best_time(lambda: np.multiply(vec, vec, out=vec), **timing)
        figures = _fallback_engine(launch_s, vec_n / vec_t, plan.repeat)
        bar.update()
        # NOTE: outer levels cannot be faster than inner ones; noise is clipped inward.
        for i in range(len(bandwidths) - 2, -1, -1):
            bandwidths[i] = max(bandwidths[i], bandwidths[i + 1])
        clock, clock_src = _clock_hz()
        native = native_side({n: r for n, r in rates.items() if n >= 16})
        rate_text = ", ".join(f"{n}: {r / 1e9:.3g}" for n, r in rates.items())
        args: dict[str, Any] = {
            "name": name,
            "clock": clock,
            "flops": flops,
            "native": native,
            "call_rates": rates,
            "skinny_rates": skinny,
            "levels": _memory_levels(caches, bandwidths, 1, bandwidths[-1]),
            "variance": variance,
            "notes": (
                f"fp64 matmul reference {flops['float64'] / 1e9:.3g} GFLOP/s (no workbench dtype)",
                "fp32 skinny matmul GFLOP/s by rows, (rows x "
                f"{SKINNY_KN[0]}) @ ({SKINNY_KN[0]} x {SKINNY_KN[1]}) ("
                + ", ".join(f"{m}: {r / 1e9:.3g}" for m, r in skinny.items())
                + ")",
                f"fp32 square matmul GFLOP/s by side ({rate_text}); peak = the best of them; "
                f"native tile {native} = smallest side reaching {NATIVE_RATE_SHARE:.0%} of it",
                f"STREAM triad at {dram_ws / 2**20:.0f} MiB: {triad / 1e9:.3g} GB/s "
                "(single thread)",
                f"clock from {clock_src}; cache sizes from "
                + ", ".join(f"L{c.level} {c.source}" for c in caches),
            ),
            "quick": quick,
        }
        if engine is not None:
            figures = engine(_profile(engine_figures=figures, **args), quick)
            bar.update()
    return _profile(engine_figures=figures, **args)


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "an unknown number"
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return str(pools[0]["num_threads"]) if pools else "an unknown number"


def _profile(
    *,
    name: str,
    clock: float,
    flops: dict[str, float],
    native: int,
    call_rates: dict[int, float],
    skinny_rates: dict[int, float],
    levels: list[dict[str, object]],
    engine_figures: EngineFigures,
    variance: dict[str, float],
    notes: tuple[str, ...],
    quick: bool,
) -> Hardware:
    when = datetime.now(UTC).isoformat(timespec="seconds")
    threads = os.cpu_count() or 1
    launch = float(engine_figures["kernel_launch_s"])
    data = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "vendor": "this host",
        "description": f"measured by workbench calibrate{' --quick' if quick else ''} at {when}",
        "scheduling": "software_issued",  # NOTE: NumPy issues every tile step as a library call
        "matrix_engine": {
            "cores": 1,
            "native_tile_m": native,
            "native_tile_n": native,
            "native_tile_k": native,
            "clock_hz": clock,
            "peak_flops_per_s": {"fp32": flops["float32"], "fp16": flops["float16"]},
            "call_rates": tuple(sorted(call_rates.items())),
            "skinny_call_rates": tuple(sorted(skinny_rates.items())),
        },
        "vector_unit": {
            "peak_flops_per_s": {"fp32": float(engine_figures["vector_flops_per_s"])},
            "kernel_flops_per_s": dict(engine_figures.get("kernel_flops_per_s", {})),
            "row_rates": dict(engine_figures.get("row_rates", {})),
            "gather_bytes_per_s": float(engine_figures.get("gather_bytes_per_s", 0.0)),
            "transpose_rates": tuple(engine_figures.get("transpose_rates", ())),
        },
        "memory": levels,
        "interconnect": dict(NO_INTERCONNECT),
        "overheads": {
            "kernel_launch_s": launch,
            "graph_launch_s": launch,
            "barrier_s": launch,
            "tile_issue_s": float(engine_figures["tile_issue_s"]),
            "attention_block_issue_s": float(engine_figures.get("attention_block_issue_s", 0.0)),
            "attention_qtile_issue_s": float(engine_figures.get("attention_qtile_issue_s", 0.0)),
            "conv_setup_s": float(engine_figures.get("conv_setup_s", 0.0)),
        },
        "power": {
            "tdp_w": 15.0 * threads,
            "idle_w": 4.5 * threads,
            "energy_pj_per_flop": _PJ_PER_FLOP,
        },
        "runtime_variance": variance,
        "software": {
            "maturity": 0.9,
            "fused_attention": False,
            "graph_capture": False,
            "notes": "assumption: NumPy with its BLAS; no fused attention, no graph replay",
        },
        "sources": (
            f"measured on this host by `workbench calibrate` at {when}",
            "Horowitz, ISSCC 2014; Han et al. arXiv:1506.02626 Fig. 1 (45 nm energy table)",
        ),
        "assumptions": (
            *notes,
            *engine_figures["notes"],
            f"cores = 1: the NumPy engine runs tiles one after another; each BLAS call uses "
            f"{_blas_threads()} of {threads} hardware threads, so the tile-sized matmul rate is "
            "this one core's peak",
            "vector peak is an effective rate: the engine's row/elementwise kernels' FLOPs "
            "(library convention) per second, not an ALU peak",
            "bf16/fp8/int8 unsupported; fp16 matmul runs without BLAS in NumPy, so its figure "
            "is far below the silicon's",
            "cache bandwidth: single-thread copy per level (one core); DRAM a single-thread "
            "copy; per-call overhead subtracted; registers 2x L1",
            f"power {15.0 * threads:.0f} W TDP (15 W per thread), energy 45 nm figures: "
            "assumptions",
            "graph launch and barrier assumed equal to the kernel launch (no graph replay)",
        ),
    }
    return Hardware.model_validate(data)


def write_profile(hw: Hardware, path: Path | str) -> Path:
    """Write ``hw`` as YAML safely (:func:`workbench._files.write_text_safely`; folders made).

    Returns:
        The path written.
    """
    target = Path(path)
    header = f"# Hardware profile written by `workbench calibrate` (schema v{SCHEMA_VERSION}).\n"
    dump = hw.model_dump(mode="json")
    # NOTE: the dump leaves out a default scheduling style; the file states it after the names.
    head = {k: dump[k] for k in ("schema_version", "name", "vendor", "description")}
    data = head | {"scheduling": hw.scheduling} | dump
    body = yaml.safe_dump(data, sort_keys=False, width=100)
    write_text_safely(target, header + body, what="hardware profile", make_parents=True)
    return target
