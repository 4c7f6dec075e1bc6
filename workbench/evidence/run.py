"""What a measured run is: its kernels, its iterations, and the statistics over repeats.

A :class:`MeasuredRun` is what a profiler trace becomes (see
:func:`workbench.evidence.read_trace`). Times are seconds, from the trace's own clock (Kineto
microseconds and Nsight Systems nanoseconds are converted on read). Everything is a frozen
dataclass with tuple fields, and a run round-trips through :meth:`MeasuredRun.to_dict` /
:meth:`MeasuredRun.from_dict` (JSON-safe, schema-versioned, read defensively: a malformed dict is
a :class:`TraceError`, never a half-built run).

Statistics over repeats (one repeat = one ``ProfilerStep#N`` iteration):

- the first iteration is warm-up (allocator, autotuning, caches): it is reported apart
  (:attr:`MeasuredRun.warmup_s`) and the statistics are over the steady-state ones after it;
- the median iteration time is the sample median of the per-iteration wall times;
- the 95% interval is the distribution-free order-statistic interval for the median (binomial
  ranks, as in Conover, *Practical Nonparametric Statistics*): the widest ranks ``j`` and
  ``n + 1 - j`` with ``P(Binomial(n, 1/2) < j) <= 0.025``. It needs no normality assumption, which
  iteration times (warm-up, stragglers) rarely satisfy. With fewer than 6 repeats no pair of ranks
  reaches 95%; the interval is then ``(min, max)`` and :meth:`MeasuredRun.interval_coverage`
  says the coverage it actually has (``1 - 2 / 2**n``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import WorkbenchError

__all__ = [
    "CATEGORIES",
    "KINDS",
    "SCHEMA_VERSION",
    "WINDOW_RULE",
    "IterationStats",
    "MeasuredKernel",
    "MeasuredRun",
    "TraceError",
]

SCHEMA_VERSION = 1
CATEGORIES = (
    "gemm",
    "conv",
    "attention",
    "norm",
    "elementwise",
    "reduction",
    "copy",
    "collective",
    "embedding",
    "layout",
    "other",
)
#: How a step's window on the GPU timeline is drawn (:mod:`workbench.evidence.breakdown` draws
#: it; ``workbench trace`` states it).
WINDOW_RULE = (
    "a step runs on the GPU from its first kernel to the next step's first (its kernels: those "
    "its ProfilerStep launched); the last step ends where its own GPU work ends, left out if "
    "steps overlap on the GPU and it outlasts all others"
)
#: What the profiler recorded: a kernel launch, a memory copy or a memory set.
KINDS = ("kernel", "memcpy", "memset")
FORMATS = ("kineto", "nsys")


class TraceError(WorkbenchError):
    """A profiler trace (or a measured run's dict) is malformed: one line, file, what, where."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasuredKernel:
    """One GPU activity from a trace: a kernel, a memcpy or a memset.

    Attributes:
        name: The kernel's (demangled) name as the profiler recorded it.
        category: One of :data:`CATEGORIES`.
        rule: The classification rule that matched (``name~gemm``, ``activity:memcpy``...).
        start_s: Start on the trace's clock, s.
        duration_s: Duration, s (never negative).
        device: GPU index, or None when the trace does not say.
        stream: CUDA stream id, or None.
        rank: Distributed rank of the process that launched it, or None.
        iteration: The ``ProfilerStep#N`` index it falls in; None outside any step.
        grid: Launch grid (x, y, z) in blocks, or None.
        block: Block shape (x, y, z) in threads, or None.
        registers_per_thread: Registers per thread, or None.
        shared_memory_bytes: Shared memory per block, bytes, or None.
        correlation: The CUPTI correlation id linking it to its runtime launch, or None.
        kind: ``kernel``, ``memcpy`` or ``memset`` (what the profiler recorded).
        bytes: Bytes moved, for memcpy/memset when the trace says; else None.
        launch_start_s: Start of the host-side runtime call that launched it (``cudaLaunchKernel``,
            ``cudaMemcpyAsync``... linked by correlation id), on the trace's clock, s; None when
            the trace has no such call for it (and in records that predate the field).
        launch_duration_s: That runtime call's duration (host time spent launching), s; None
            likewise.
    """

    name: str
    category: str
    rule: str
    start_s: float
    duration_s: float
    device: int | None = None
    stream: int | None = None
    rank: int | None = None
    iteration: int | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = None
    correlation: int | None = None
    kind: str = "kernel"
    bytes: int | None = None
    launch_start_s: float | None = None
    launch_duration_s: float | None = None

    @property
    def end_s(self) -> float:
        """End on the trace's clock, s."""
        return self.start_s + self.duration_s

    @property
    def launch_delay_s(self) -> float | None:
        """Holistic Trace Analysis's launch delay: start minus the end of its runtime call, s.

        Clipped at 0, as HTA 0.5 does (``cuda_kernel_analysis.cuda_kernel_launch_stats``); None
        without a launch call.

        >>> MeasuredKernel(name="k", category="gemm", rule="r", start_s=1e-3, duration_s=1e-4,
        ...                launch_start_s=0.2e-3, launch_duration_s=0.3e-3).launch_delay_s
        0.0005
        """
        if self.launch_start_s is None or self.launch_duration_s is None:
            return None
        return max(self.start_s - self.launch_start_s - self.launch_duration_s, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class IterationStats:
    """One iteration (repeat) of a measured run, on its busiest device.

    Attributes:
        index: The ``ProfilerStep#N`` number (0 for an unannotated trace's single window).
        wall_s: Step period on the GPU timeline: from the iteration's first GPU activity to the
            next iteration's (the last one: to the end of its own GPU work); windows never
            overlap, s (:attr:`MeasuredRun.window_rule`).
        kernel_s: Union of kernel intervals in the window over all streams (overlap counted
            once), whichever step launched them, s.
        gap_s: Wall time with no GPU activity at all (launch gaps, idle between steps), s.
        copy_s: Union of memcpy/memset intervals in the window (HTA's "memory"), s.
        start_s: Window start on the trace's clock, s (None in records that predate it).
        compute_s: Union of compute kernels (not collectives, not copies) in the window, s.
        comm_s: Union of collective (NCCL) kernels in the window, s.
        overlap_s: Time in the window when compute and collectives run together, s.
    """

    index: int
    wall_s: float
    kernel_s: float
    gap_s: float
    copy_s: float
    start_s: float | None = None
    compute_s: float | None = None
    comm_s: float | None = None
    overlap_s: float | None = None

    @property
    def non_compute_s(self) -> float | None:
        """Busy time with no compute kernel running (HTA's "non-compute"), s."""
        if self.compute_s is None:
            return None
        return max(self.wall_s - self.gap_s - self.compute_s, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasuredRun:
    """A profiler trace read into kernels and per-iteration statistics.

    Attributes:
        source: The file it was read from (as given).
        format: ``kineto`` or ``nsys``.
        tags: ``(name, value)`` pairs: device, driver, cuda, framework, and whatever else the trace
            states; a value the trace lacks is ``"unknown"``, never guessed.
        kernels: Every GPU activity, in start order.
        iterations: One entry per repeat, in index order.
        steps_annotated: Whether the trace carried step annotations; if not, the whole trace is one
            iteration (index 0) and there are no repeats to build an interval from.
        warnings: What a reader should know before trusting the figures (one line each).
    """

    source: str
    format: str
    tags: tuple[tuple[str, str], ...]
    kernels: tuple[MeasuredKernel, ...]
    iterations: tuple[IterationStats, ...]
    steps_annotated: bool = True
    warnings: tuple[str, ...] = ()

    def tag(self, name: str) -> str:
        """The value of tag ``name``, or ``"unknown"``."""
        return dict(self.tags).get(name, "unknown")

    @property
    def repeats(self) -> int:
        """Number of measured iterations (the warm-up one included)."""
        return len(self.iterations)

    @property
    def steady_iterations(self) -> tuple[IterationStats, ...]:
        """The iterations after the first (warm-up) one; all of them when there is only one."""
        return self.iterations[1:] if len(self.iterations) > 1 else self.iterations

    @property
    def warmup_s(self) -> float | None:
        """Wall time of the first (warm-up) iteration, s; None when it is the only one."""
        return self.iterations[0].wall_s if len(self.iterations) > 1 else None

    @property
    def window_rule(self) -> str:
        """How each iteration's window was drawn on the GPU timeline (one sentence)."""
        if not self.steps_annotated:
            return "no step markers: the whole trace (first GPU activity to last) is one window"
        return WINDOW_RULE

    def interval_note(self) -> str | None:
        """A warning when fewer than 3 steady-state steps carry the interval; None otherwise.

        With n steady steps the interval of :meth:`interval95_s` is their (min, max), covering the
        median with probability ``1 - 2 / 2**n`` (50% at n=2), or absent at n<2.
        """
        n = len(self.steady_iterations)
        if not self.steps_annotated or n >= 3:
            return None
        if n < 2:
            return (
                f"the 95% interval rests on {n} step: none can be given (profile at least 7 "
                "steps: 1 warm-up and 6 steady for a 95% interval)"
            )
        return (
            f"the 95% interval rests on {n} steps: wide (it is their min-max, covering the "
            f"median with probability {self.interval_coverage():.0%}, not 95%; profile at least "
            "7 steps: 1 warm-up and 6 steady)"
        )

    def median_iteration_s(self) -> float:
        """Steady-state iteration time: the median wall time over :attr:`steady_iterations`, s."""
        return statistics.median(it.wall_s for it in self.steady_iterations)

    def interval95_s(self) -> tuple[float, float]:
        """Distribution-free 95% interval for the median iteration time, s (see module doc).

        Raises:
            TraceError: With fewer than 2 repeats there is no interval to give.
        """
        walls = sorted(it.wall_s for it in self.steady_iterations)
        if len(walls) < 2:
            raise TraceError(
                f"{self.source}: a 95% interval needs at least 2 steady-state repeats "
                f"(ProfilerStep#N iterations after the warm-up one); the trace has {len(walls)}"
            )
        j = _lower_rank(len(walls))
        return walls[j - 1], walls[len(walls) - j]

    def interval_coverage(self) -> float:
        """The coverage the interval of :meth:`interval95_s` actually has (0.95 or more at n>=6)."""
        n = len(self.steady_iterations)
        j = _lower_rank(n)
        return 1.0 - 2.0 * _binom_cdf(j - 1, n)

    @property
    def kernel_time_s(self) -> float:
        """Median over steady-state repeats of the per-iteration kernel time, s."""
        return statistics.median(it.kernel_s for it in self.steady_iterations)

    @property
    def gap_s(self) -> float:
        """Median over steady-state repeats of the per-iteration idle/launch gap time, s."""
        return statistics.median(it.gap_s for it in self.steady_iterations)

    @property
    def copy_s(self) -> float:
        """Median over steady-state repeats of the per-iteration memcpy/memset time, s."""
        return statistics.median(it.copy_s for it in self.steady_iterations)

    def time_by_category(self) -> dict[str, float]:
        """Summed kernel durations per category, per iteration (mean over repeats), s.

        Durations are summed, not unioned: concurrent kernels on two streams each count, so the
        categories can add to more than :attr:`kernel_time_s`. Activities outside every iteration
        are left out. Every category of :data:`CATEGORIES` is a key.
        """
        counted = {it.index for it in self.iterations}
        out = dict.fromkeys(CATEGORIES, 0.0)
        for k in self.kernels:
            if k.iteration in counted:
                out[k.category] += k.duration_s
        n = max(len(counted), 1)
        return {c: t / n for c, t in out.items()}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (lists, str, numbers, None) that :meth:`from_dict` reads back."""
        return {
            "kind": "workbench.measured_run",
            "schema_version": SCHEMA_VERSION,
            "source": self.source,
            "format": self.format,
            "tags": [[k, v] for k, v in self.tags],
            "steps_annotated": self.steps_annotated,
            "warnings": list(self.warnings),
            "kernels": [_kernel_to_dict(k) for k in self.kernels],
            "iterations": [
                {
                    "index": it.index,
                    "wall_s": it.wall_s,
                    "kernel_s": it.kernel_s,
                    "gap_s": it.gap_s,
                    "copy_s": it.copy_s,
                    "start_s": it.start_s,
                    "compute_s": it.compute_s,
                    "comm_s": it.comm_s,
                    "overlap_s": it.overlap_s,
                }
                for it in self.iterations
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MeasuredRun:
        """Read a dict written by :meth:`to_dict`; anything malformed is a :class:`TraceError`."""
        r = _Reader(data, "measured run")
        if r.get("kind", str) != "workbench.measured_run":
            raise TraceError("measured run: 'kind' is not 'workbench.measured_run'")
        version = r.get("schema_version", int)
        if version != SCHEMA_VERSION:
            raise TraceError(f"measured run: schema_version {version} is not {SCHEMA_VERSION}")
        fmt = r.get("format", str)
        if fmt not in FORMATS:
            raise TraceError(f"measured run: format {fmt!r} is not one of {FORMATS}")
        tags = []
        for i, pair in enumerate(r.get("tags", list)):
            if not (isinstance(pair, list | tuple) and len(pair) == 2):
                raise TraceError(f"measured run: tags[{i}] is not a [name, value] pair")
            if not all(isinstance(x, str) for x in pair):
                raise TraceError(f"measured run: tags[{i}] holds a non-string")
            tags.append((pair[0], pair[1]))
        kernels = tuple(
            _kernel_from_dict(_Reader(k, f"measured run: kernels[{i}]"))
            for i, k in enumerate(r.get("kernels", list))
        )
        iterations = tuple(
            _iteration_from_dict(_Reader(it, f"measured run: iterations[{i}]"))
            for i, it in enumerate(r.get("iterations", list))
        )
        if not iterations:
            raise TraceError("measured run: 'iterations' is empty")
        warnings = data.get("warnings", [])
        if not (isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)):
            raise TraceError("measured run: 'warnings' is not a list of strings")
        return cls(
            source=r.get("source", str),
            format=fmt,
            tags=tuple(tags),
            kernels=kernels,
            iterations=iterations,
            steps_annotated=r.get("steps_annotated", bool),
            warnings=tuple(warnings),
        )


def _lower_rank(n: int) -> int:
    """Largest 1-based rank j with P(Binomial(n, 1/2) <= j - 1) <= 0.025 (at least 1)."""
    j = 1
    while j + 1 <= (n + 1) // 2 and _binom_cdf(j, n) <= 0.025:
        j += 1
    return j


def _binom_cdf(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def _kernel_to_dict(k: MeasuredKernel) -> dict[str, Any]:
    return {
        "name": k.name,
        "category": k.category,
        "rule": k.rule,
        "kind": k.kind,
        "start_s": k.start_s,
        "duration_s": k.duration_s,
        "device": k.device,
        "stream": k.stream,
        "rank": k.rank,
        "iteration": k.iteration,
        "grid": list(k.grid) if k.grid else None,
        "block": list(k.block) if k.block else None,
        "registers_per_thread": k.registers_per_thread,
        "shared_memory_bytes": k.shared_memory_bytes,
        "correlation": k.correlation,
        "bytes": k.bytes,
        "launch_start_s": k.launch_start_s,
        "launch_duration_s": k.launch_duration_s,
    }


def _kernel_from_dict(r: _Reader) -> MeasuredKernel:
    category = r.get("category", str)
    if category not in CATEGORIES:
        raise TraceError(f"{r.where}: category {category!r} is not one of {CATEGORIES}")
    kind = r.get("kind", str)
    if kind not in KINDS:
        raise TraceError(f"{r.where}: kind {kind!r} is not one of {KINDS}")
    return MeasuredKernel(
        name=r.get("name", str),
        category=category,
        rule=r.get("rule", str),
        kind=kind,
        start_s=r.time("start_s", allow_negative=True),
        duration_s=r.time("duration_s"),
        device=r.optional_int("device"),
        stream=r.optional_int("stream"),
        rank=r.optional_int("rank"),
        iteration=r.optional_int("iteration"),
        grid=r.dim3("grid"),
        block=r.dim3("block"),
        registers_per_thread=r.optional_int("registers_per_thread"),
        shared_memory_bytes=r.optional_int("shared_memory_bytes"),
        correlation=r.optional_int("correlation"),
        bytes=r.optional_int("bytes"),
        # NOTE: absent in records written before the launch fields: read as None (no launch)
        launch_start_s=r.optional_time("launch_start_s", allow_negative=True),
        launch_duration_s=r.optional_time("launch_duration_s"),
    )


def _iteration_from_dict(r: _Reader) -> IterationStats:
    return IterationStats(
        index=r.get("index", int),
        wall_s=r.time("wall_s"),
        kernel_s=r.time("kernel_s"),
        gap_s=r.time("gap_s"),
        copy_s=r.time("copy_s"),
        start_s=r.optional_time("start_s", allow_negative=True),
        compute_s=r.optional_time("compute_s"),
        comm_s=r.optional_time("comm_s"),
        overlap_s=r.optional_time("overlap_s"),
    )


class _Reader:
    """Typed field access on an untrusted dict; every failure names the field."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise TraceError(f"{where}: expected an object, got {type(data).__name__}")
        self.data = data
        self.where = where

    def get(self, key: str, typ: type) -> Any:
        if key not in self.data:
            raise TraceError(f"{self.where}: missing {key!r}")
        value = self.data[key]
        ok = isinstance(value, typ) and (typ is bool or not isinstance(value, bool))
        if typ is list:
            ok = isinstance(value, list | tuple)
        if not ok:
            raise TraceError(
                f"{self.where}: {key!r} should be {typ.__name__}, got {type(value).__name__}"
            )
        return value

    def time(self, key: str, *, allow_negative: bool = False) -> float:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TraceError(f"{self.where}: {key!r} should be a number of seconds")
        if not math.isfinite(value) or (value < 0 and not allow_negative):
            raise TraceError(f"{self.where}: {key!r} is {value!r}, not a finite time >= 0")
        return float(value)

    def optional_time(self, key: str, *, allow_negative: bool = False) -> float | None:
        if self.data.get(key) is None:
            return None
        return self.time(key, allow_negative=allow_negative)

    def optional_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise TraceError(f"{self.where}: {key!r} should be an integer or null")
        return value

    def dim3(self, key: str) -> tuple[int, int, int] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not (
            isinstance(value, list | tuple)
            and len(value) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        ):
            raise TraceError(f"{self.where}: {key!r} should be three non-negative integers")
        return (value[0], value[1], value[2])
