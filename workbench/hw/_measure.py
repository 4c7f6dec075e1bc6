"""Host micro-benchmarks for calibration: cache sizes, matmul rates, copy bandwidth, clock.

Each function times one thing with NumPy and returns SI figures (seconds, FLOP/s, bytes/s);
:mod:`workbench.hw.calibrate` turns them into a hardware profile.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["CacheLevel", "cache_levels", "cpu_clock", "now"]

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
_CLOCK: list[Callable[[], float]] = [time.perf_counter]


def now() -> float:
    """The calibration clock, seconds: wall time, or this thread's CPU time in :func:`cpu_clock`."""
    return _CLOCK[-1]()


@contextlib.contextmanager
def cpu_clock(enabled: bool = True) -> Iterator[None]:
    """Time micro-benchmarks in this thread's CPU time inside the block (when ``enabled``).

    ``time.thread_time`` (``CLOCK_THREAD_CPUTIME_ID``) counts only the time this thread ran,
    so the time other processes hold the core is left out, while cache and memory-bandwidth
    contention (which slow the thread down as it runs) stay in. It is the execution time of
    the work on a core of its own, what the cost model predicts; it is exact for single-
    threaded work only (NumPy with one BLAS thread), so callers enable it only then.
    """
    if not enabled:
        yield
        return
    _CLOCK.append(time.thread_time)
    try:
        yield
    finally:
        _CLOCK.pop()


def _best_time(fn: Callable[[], object], *, repeat: int, min_time_s: float) -> float:
    """Best per-call time over ``repeat`` rounds, each long enough to time reliably, seconds."""
    fn()
    number = 1
    while True:
        t0 = now()
        for _ in range(number):
            fn()
        elapsed = now() - t0
        if elapsed >= min_time_s or number >= 1 << 20:
            break
        number *= 2 if elapsed <= 0 else max(2, min(10, int(min_time_s / elapsed) + 1))
    best = elapsed / number
    for _ in range(repeat - 1):
        t0 = now()
        for _ in range(number):
            fn()
        best = min(best, (now() - t0) / number)
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


#: Rows of the skinny-call probes, and the (K, N) of their B operand (2 MiB of float32: a
#: typical tile's panel, within a core's L2-L3 range).
SKINNY_ROWS = (1, 2, 4, 8, 16, 32, 64, 128)
SKINNY_KN = (256, 2048)


def _skinny_flops(m: int, *, repeat: int, min_time_s: float) -> float:
    """fp32 FLOP/s of one (m x K) @ (K x N) library call with K, N = SKINNY_KN."""
    k, n = SKINNY_KN
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = np.empty((m, n), dtype=np.float32)
    t = _best_time(lambda: np.matmul(a, b, out=out), repeat=repeat, min_time_s=min_time_s)
    return 2.0 * m * k * n / t


def _call_overheads(samples: int) -> list[float]:
    """Per-call times of a 16-element add, seconds (one sample per call batch of 64)."""
    a = np.ones(16, dtype=np.float32)
    out = np.empty_like(a)
    np.add(a, a, out=out)
    times = []
    for _ in range(samples):
        t0 = now()
        for _ in range(64):
            np.add(a, a, out=out)
        times.append((now() - t0) / 64)
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
