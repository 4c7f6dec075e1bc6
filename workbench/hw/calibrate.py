"""Measure this machine as an accelerator and write it as a hardware profile.

``calibrate()`` times a few microbenchmarks with NumPy and turns them into a :class:`Hardware`
that the mapper uses like any other profile:

* matrix engine: achieved square-matmul FLOP/s per dtype (fp32, fp16; fp64 is timed as a
  reference and recorded in ``assumptions`` because the workbench has no fp64 dtype);
* memory levels: copy bandwidth at working sets swept across the cache sizes the OS reports
  (``/sys/devices/system/cpu/cpu0/cache``), so each cache level and DRAM gets its own figure;
* overheads: the per-call cost of a tiny NumPy op stands in for a kernel launch; its spread
  gives the runtime-variance figures.

Everything measured is a lower bound on what the silicon can do (NumPy and its BLAS stand between
us and the hardware); that is the point: it is what *this* software stack achieves here.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from workbench.hw.schema import SCHEMA_VERSION, Hardware

__all__ = ["CacheLevel", "cache_levels", "calibrate", "write_profile"]

_CACHE_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")
# NOTE: used only when the OS reports nothing; typical x86 server core (assumption).
_FALLBACK_CACHES = ((1, 48 * 1024, True), (2, 1024 * 1024, True), (3, 32 * 1024 * 1024, False))


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheLevel:
    """One data cache level as the OS reports it.

    Attributes:
        level: 1, 2, 3 ...
        size_bytes: Capacity, bytes (per core when ``per_core``).
        per_core: Private to one core (True) or shared by several.
        source: Where the figure came from (sysfs path or 'assumption').
    """

    level: int
    size_bytes: int
    per_core: bool
    source: str


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(text.rstrip("KMGB").strip()) * scale


def cache_levels(sysfs: Path = _CACHE_SYSFS) -> tuple[CacheLevel, ...]:
    """Data and unified caches of cpu0, innermost first, from sysfs (fallback: assumptions).

    Args:
        sysfs: The ``cpu0/cache`` folder to read.

    Returns:
        One :class:`CacheLevel` per level, sizes in bytes.
    """
    found: dict[int, CacheLevel] = {}
    for index in sorted(sysfs.glob("index*")) if sysfs.is_dir() else ():
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _parse_size((index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind not in ("Data", "Unified") or size <= 0:
            continue
        # NOTE: hyper-threads share L1/L2, so "per core" is judged by level, not by the CPU list.
        per_core = level <= 2 or ("," not in shared and "-" not in shared)
        found[level] = CacheLevel(
            level=level, size_bytes=size, per_core=per_core, source=str(index)
        )
    if found:
        return tuple(found[k] for k in sorted(found))
    return tuple(
        CacheLevel(level=lv, size_bytes=s, per_core=p, source="assumption")
        for lv, s, p in _FALLBACK_CACHES
    )


# --- timing ---------------------------------------------------------------------------------
def _best_time(fn: Callable[[], object], *, repeat: int, min_time_s: float) -> float:
    """Best per-call time over ``repeat`` rounds, each long enough to time reliably, seconds."""
    fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time_s or number >= 1 << 20:
            break
        number *= 2 if elapsed <= 0 else max(2, min(10, int(min_time_s / elapsed) + 1))
    best = elapsed / number
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def _matmul_flops(dtype: str, n: int, *, repeat: int, min_time_s: float) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    for _ in range(3):  # warm up the BLAS thread pool
        np.matmul(a, b, out=out)
    t = _best_time(lambda: np.matmul(a, b, out=out), repeat=repeat, min_time_s=min_time_s)
    return 2.0 * n**3 / t


def _call_overheads(samples: int) -> list[float]:
    """Per-call times of a 16-element add, seconds (one sample per call batch of 64)."""
    a = np.ones(16, dtype=np.float32)
    out = np.empty_like(a)
    np.add(a, a, out=out)
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(64):
            np.add(a, a, out=out)
        times.append((time.perf_counter() - t0) / 64)
    return times


def _copy_bandwidth(
    working_set_bytes: int, overhead_s: float, *, repeat: int, min_time_s: float
) -> float:
    """Copy bandwidth (read + write bytes / s) with source + destination = working set."""
    n = max(working_set_bytes // 16, 256)  # two float64 arrays
    src = np.ones(n)
    dst = np.empty(n)
    t = _best_time(lambda: np.copyto(dst, src), repeat=repeat, min_time_s=min_time_s)
    return 16.0 * n / max(t - overhead_s, t * 0.1)


def _triad_bandwidth(n: int, *, repeat: int, min_time_s: float) -> float:
    """STREAM triad ``a = b + s*c`` bandwidth counted as 3 arrays x 8 bytes per element, B/s."""
    a, b, c = np.empty(n), np.ones(n), np.ones(n)

    def triad() -> None:
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    return 24.0 * n / _best_time(triad, repeat=repeat, min_time_s=min_time_s)


def _clock_hz() -> tuple[float, str]:
    path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    try:
        return float(path.read_text()) * 1e3, str(path)
    except (OSError, ValueError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) * 1e6, "/proc/cpuinfo"
    except (OSError, ValueError, IndexError):
        pass
    return 2.0e9, "assumption"


# --- the profile ----------------------------------------------------------------------------
# Horowitz ISSCC 2014 / Han arXiv:1506.02626 45 nm figures, unscaled (assumption for the host).
_PJ_PER_FLOP = {"fp32": 2.3, "fp16": 0.75}
_PJ_PER_BYTE = {"register": 0.25, 1: 1.25, 2: 2.5, 3: 12.5, "dram": 160.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plan:
    matmul_n: tuple[tuple[str, int], ...]
    overhead_samples: int
    repeat: int
    min_time_s: float
    dram_min_bytes: int


_QUICK = _Plan(
    matmul_n=(("float64", 128), ("float32", 192), ("float16", 48)),
    overhead_samples=40,
    repeat=3,
    min_time_s=0.01,
    dram_min_bytes=16 * 1024**2,
)
_FULL = _Plan(
    matmul_n=(("float64", 768), ("float32", 1024), ("float16", 192)),
    overhead_samples=400,
    repeat=5,
    min_time_s=0.1,
    dram_min_bytes=128 * 1024**2,
)


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    # NOTE: pass `disable` only when asked to, so TQDM_DISABLE in the environment still works.
    kwargs: dict[str, Any] = {} if enabled else {"disable": True}
    return tqdm(total=total, desc="calibrate", unit="step", **kwargs)


def _memory_levels(
    caches: tuple[CacheLevel, ...], bandwidths: list[float], cores: int, dram: float
) -> list[dict[str, object]]:
    target = next((c for c in caches if c.level == 2 and c.per_core), caches[0])
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
                "scope": "per_core" if cache.per_core else "shared",
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


def calibrate(*, quick: bool = False, progress: bool = True, name: str = "host") -> Hardware:
    """Measure this machine and return it as a hardware profile.

    Args:
        quick: Small problem sizes and short timings (a few seconds); for tests.
        progress: Show a tqdm progress bar (``TQDM_DISABLE=1`` also hides it).
        name: Profile name.

    Returns:
        A validated :class:`Hardware`; figures are achieved rates in SI units (FLOP/s, bytes/s,
        seconds), not datasheet peaks.
    """
    plan = _QUICK if quick else _FULL
    caches = cache_levels()
    cores = os.cpu_count() or 1
    timing: dict[str, Any] = {"repeat": plan.repeat, "min_time_s": plan.min_time_s}
    sizes = [c.size_bytes // 2 for c in caches]
    dram_ws = max(plan.dram_min_bytes, (2 if quick else 4) * caches[-1].size_bytes)
    bar = _progress(2 + len(plan.matmul_n) + len(sizes) + 1, progress)
    with bar:
        overheads = _call_overheads(plan.overhead_samples)
        launch_s, variance = _variance(overheads)
        bar.update()
        flops = {}
        for dtype, n in plan.matmul_n:
            flops[dtype] = _matmul_flops(dtype, n, **timing)
            bar.update()
        bandwidths = []
        for ws in (*sizes, dram_ws):
            bandwidths.append(_copy_bandwidth(ws, launch_s, **timing))
            bar.update()
        triad = _triad_bandwidth(dram_ws // 24, **timing)
        vec_n = max(sizes[min(1, len(sizes) - 1)] // 8, 256)
        vec = np.ones(vec_n, np.float32)
        vec_t = _best_time(lambda: np.multiply(vec, vec, out=vec), **timing)
        bar.update()
    # NOTE: outer levels cannot be faster than inner ones; noise is clipped inward.
    for i in range(len(bandwidths) - 2, -1, -1):
        bandwidths[i] = max(bandwidths[i], bandwidths[i + 1])
    clock, clock_src = _clock_hz()
    return _profile(
        name=name,
        cores=cores,
        clock=clock,
        flops=flops,
        vector=cores * vec_n / vec_t,
        levels=_memory_levels(caches, bandwidths, cores, bandwidths[-1]),
        launch_s=launch_s,
        variance=variance,
        notes=(
            f"fp64 matmul reference {flops['float64'] / 1e9:.3g} GFLOP/s (no workbench dtype)",
            f"STREAM triad at {dram_ws / 2**20:.0f} MiB: {triad / 1e9:.3g} GB/s (single thread)",
            f"clock from {clock_src}; cache sizes from "
            + ", ".join(f"L{c.level} {c.source}" for c in caches),
        ),
        quick=quick,
    )


def _profile(
    *,
    name: str,
    cores: int,
    clock: float,
    flops: dict[str, float],
    vector: float,
    levels: list[dict[str, object]],
    launch_s: float,
    variance: dict[str, float],
    notes: tuple[str, ...],
    quick: bool,
) -> Hardware:
    when = datetime.now(UTC).isoformat(timespec="seconds")
    data = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "vendor": "this host",
        "description": f"measured by workbench calibrate{' --quick' if quick else ''} at {when}",
        "matrix_engine": {
            "cores": cores,
            "native_tile_m": 8,
            "native_tile_n": 8,
            "native_tile_k": 8,
            "clock_hz": clock,
            "peak_flops_per_s": {"fp32": flops["float32"], "fp16": flops["float16"]},
        },
        "vector_unit": {"peak_flops_per_s": {"fp32": vector}},
        "memory": levels,
        "interconnect": {
            "links": 0,
            "link_bandwidth_bytes_per_s": 0.0,
            "latency_s": 0.0,
            "topology": "none",
        },
        "overheads": {
            "kernel_launch_s": launch_s,
            "graph_launch_s": launch_s,
            "barrier_s": launch_s,
        },
        "power": {"tdp_w": 15.0 * cores, "idle_w": 4.5 * cores, "energy_pj_per_flop": _PJ_PER_FLOP},
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
            "peaks are achieved NumPy matmul rates (BLAS, all threads); bf16/fp8/int8 unsupported",
            "fp16 matmul runs without BLAS in NumPy, so its figure is far below the silicon's",
            "cache bandwidth: single-thread copy x cores for per-core levels; shared levels and "
            "DRAM are single-thread figures; per-call overhead subtracted; registers 2x L1",
            "native tile 8x8x8, power 15 W per core, energy 45 nm figures: assumptions",
            "kernel launch = median time of a 16-element NumPy add; graph launch and barrier "
            "assumed equal to it",
        ),
    }
    return Hardware.model_validate(data)


def write_profile(hw: Hardware, path: Path | str) -> Path:
    """Write ``hw`` as YAML atomically (temp file in the same folder, then ``os.replace``).

    Returns:
        The path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    header = f"# Hardware profile written by `workbench calibrate` (schema v{SCHEMA_VERSION}).\n"
    body = yaml.safe_dump(hw.model_dump(mode="json"), sort_keys=False, width=100)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(header + body, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
