"""Turn the GPU activities a reader collected into a :class:`MeasuredRun` (both formats share it).

Steps: classify each activity (memoized by name), assign it to an iteration, compute per-iteration
statistics, and refuse a trace with no kernels or no activity inside any annotated step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.evidence.categories import classify
from workbench.evidence.run import MeasuredKernel, MeasuredRun, TraceError
from workbench.evidence.timeline import StepWindows, iteration_stats, open_last_steps

__all__ = ["LAUNCH_CALLS", "Activity", "assemble", "choose_steps", "is_measure_range", "step_index"]

_STEP = re.compile(r"^\s*(?:ProfilerStep#|iteration[ _#:]?|step[ _#:]?)(\d+)\s*$", re.IGNORECASE)
_MEASURE = re.compile(r"^\[param\|.*\|measure(?:\|.*)?\]$")
#: The index a reader gives a step marker that carries no number (numbered in time order).
UNNUMBERED = -1
#: Runtime calls that put work on a stream: the ones Holistic Trace Analysis 0.5 counts as
#: launches (``TraceSymbolTable.get_runtime_launch_events_query``); readers keep
#: their durations (Nsight Systems spells them with a ``_v7000``-like suffix).
LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "hipLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipMemcpyAsync",
        "hipMemsetAsync",
        "hipMemcpyWithStream",
        "runFunction - job_prep_and_submit_for_execution",
    }
)


def is_measure_range(name: object) -> bool:
    """Whether ``name`` is a benchmark's timed-iteration range (``[param|...|measure|...]``).

    >>> is_measure_range("[param|pytorch.model.alex_net|0|0|0|measure|forward]")
    True
    >>> is_measure_range("[param|pytorch.model.alex_net|0|0|0|warmup|forward]")
    False
    """
    return isinstance(name, str) and _MEASURE.match(name) is not None


def step_index(name: object) -> int | None:
    """The N of a step annotation (``ProfilerStep#N``, ``iteration N``, ``step_N``), else None.

    >>> step_index("ProfilerStep#12"), step_index("aten::mm")
    (12, None)
    """
    if not isinstance(name, str):
        return None
    m = _STEP.match(name)
    return int(m.group(1)) if m else None


def choose_steps(
    windows: Sequence[tuple[str, int, float, float]],
) -> list[tuple[int, float, float]]:
    """``(index, start_s, end_s)`` step windows from ``(name, index, start_s, end_s)`` annotations.

    PyTorch's own ``ProfilerStep#N`` annotations win: when any is present, a user's ``step N`` or
    ``iteration N`` ranges (often nested inside them, with another numbering) are ignored. Those
    come next; failing both, a benchmark's ``[param|...|measure|...]`` ranges (index
    :data:`UNNUMBERED`) are the steps, numbered 0, 1... in time order, the innermost of nested
    ones (an outer range also times the cache clearing around it).

    >>> choose_steps([("ProfilerStep#3", 3, 0.0, 1.0), ("step_7", 7, 0.1, 0.9)])
    [(3, 0.0, 1.0)]
    """
    profiler = [w for w in windows if w[0].lstrip().startswith("ProfilerStep#")]
    numbered = [w for w in windows if w[1] != UNNUMBERED]
    if profiler or numbered:
        return [(i, s, e) for _, i, s, e in (profiler or numbered)]
    ranges = sorted({(s, e) for _, _, s, e in windows})
    inner = [
        (s, e)
        for s, e in ranges
        if not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in ranges)
    ]
    return [(n, s, e) for n, (s, e) in enumerate(inner)]


@dataclass(slots=True)
class Activity:
    """One GPU activity as read, before classification and iteration assignment.

    Not frozen (a frozen dataclass costs three times as long to build, once per activity), and
    positional arguments allowed (half the cost of keywords); the readers build it and
    :func:`assemble` consumes it, nothing changes it.
    """

    name: str
    kind: str
    start_s: float
    duration_s: float
    device: int | None
    stream: int | None
    correlation: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers_per_thread: int | None
    shared_memory_bytes: int | None
    bytes: int | None
    #: The row, for a message (Nsight Systems; Kineto's bounds name their events themselves).
    where: str = ""


def assemble(
    *,
    source: str,
    fmt: str,
    activities: list[Activity],
    launch_s: Mapping[int, float],
    cpu_steps: StepWindows,
    launch_dur_s: Mapping[int, float] | None = None,
    gpu_steps: StepWindows,
    tags: tuple[tuple[str, str], ...],
    rank: int | None,
) -> MeasuredRun:
    """Build the run; see the module doc. Raises :class:`TraceError` for an unusable trace.

    ``activities`` is consumed: emptied as each becomes a :class:`MeasuredKernel`, so the two
    lists are never held whole together (memory on a big trace). ``launch_dur_s`` holds the
    duration of each launch call (by correlation id): an activity with one gets its call's start
    and duration (:attr:`MeasuredKernel.launch_start_s`).
    """
    if not any(a.kind == "kernel" for a in activities):
        raise TraceError(
            f"{source}: no GPU kernels in the trace (was the profiler run with CUDA activities "
            "enabled?)"
        )
    annotated = bool(cpu_steps or gpu_steps)
    names: dict[str, tuple[str, str] | None] = {}
    kernels = []
    activities.sort(key=_start)
    activities.reverse()  # NOTE: popped from the end, so in start order (ties as read)
    pop = activities.pop
    durations = launch_dur_s or {}
    launched = bool(launch_s)
    stream_end: dict[tuple[int | None, int], float] = {}
    clipped, clipped_s = 0, 0.0
    for _ in range(len(activities)):
        a = pop()
        if a.stream is not None:  # NOTE: one stream runs one activity at a time (see _clip)
            cut = _clip(a, (a.device, a.stream), stream_end)
            if cut > 0:
                clipped, clipped_s = clipped + 1, clipped_s + cut
        category, rule = _classify(a, names)
        corr = a.correlation
        launch = call_s = None
        if corr is not None:
            launch = launch_s.get(corr)
            call_s = durations.get(corr) if launch is not None else None
        iteration = _iteration(a, launch, launched, cpu_steps, gpu_steps) if annotated else 0
        kernel: MeasuredKernel = _KernelDraft(  # type: ignore[assignment]
            a, category, rule, rank, iteration, launch if call_s is not None else None, call_s
        )
        kernel.__class__ = MeasuredKernel  # NOTE: see _KernelDraft
        kernels.append(kernel)
    iterations = iteration_stats(kernels)
    if not iterations:
        raise TraceError(
            f"{source}: the trace has step annotations, but no GPU activity falls inside any of "
            "them"
        )
    warnings: tuple[str, ...] = ()
    unplaced = [k for k in kernels if k.iteration is None and k.correlation not in launch_s]
    if annotated and launch_s and unplaced:
        warnings += (
            f"{len(unplaced)} GPU activities ({sum(k.duration_s for k in unplaced) * 1e3:.3g} ms) "
            "have no runtime launch event in the trace: left out of the iterations and the "
            "breakdown, as Holistic Trace Analysis does",
        )
    kept = {it.index for it in iterations}
    for index, (window_s, spill_s) in sorted(open_last_steps(kernels).items()):
        if index not in kept:
            warnings += (
                f"the last step (#{index}) is left out of the steps: its GPU work runs "
                f"{window_s * 1e3:.3g} ms from its first kernel, but the steps overlap on the "
                f"GPU (the step before ran {spill_s * 1e3:.3g} ms past its start), so with no "
                "next step to end its window it is no step period",
            )
    if clipped:
        warnings += (
            f"{clipped} GPU activities overlap an earlier one on the same stream (which runs one "
            f"at a time): each clipped to start where the earlier one ends, {clipped_s * 1e3:.3g} "
            "ms not counted twice",
        )
    if not annotated:
        window = iterations[0]
        idle = 100.0 * window.gap_s / window.wall_s if window.wall_s > 0 else 0.0
        warnings += (
            f"no step markers: one {window.wall_s:.3g} s window, {idle:.1f}% idle (figures are "
            "for the whole trace, warm-up and autotuning included)",
        )
    return MeasuredRun(
        source=source,
        format=fmt,
        tags=tags,
        kernels=tuple(kernels),
        iterations=iterations,
        steps_annotated=annotated,
        warnings=warnings,
    )


class _KernelDraft:
    """A :class:`MeasuredKernel` as :func:`assemble` builds it, before it becomes one.

    ``MeasuredKernel`` is frozen: its generated ``__init__`` sets each of its 18 fields through
    ``object.__setattr__`` from keywords, ~2.5 us a kernel (a tenth of reading a big trace). This
    class has the same slots in the same order, so the same memory layout: it is filled by plain
    slot stores, then its ``__class__`` is set to ``MeasuredKernel``, which Python allows between
    classes of one layout. The result is a ``MeasuredKernel`` like any other (equal, same hash;
    a test compares it field by field with one built through the constructor, so a field added
    to ``MeasuredKernel`` and not set here fails that test).
    """

    __slots__ = MeasuredKernel.__slots__

    def __init__(
        self,
        a: Activity,
        category: str,
        rule: str,
        rank: int | None,
        iteration: int | None,
        launch_start_s: float | None,
        launch_duration_s: float | None,
    ) -> None:
        self.name = a.name
        self.category = category
        self.rule = rule
        self.start_s = a.start_s
        self.duration_s = a.duration_s
        self.device = a.device
        self.stream = a.stream
        self.rank = rank
        self.iteration = iteration
        self.grid = a.grid
        self.block = a.block
        self.registers_per_thread = a.registers_per_thread
        self.shared_memory_bytes = a.shared_memory_bytes
        self.correlation = a.correlation
        self.kind = a.kind
        self.bytes = a.bytes
        self.launch_start_s = launch_start_s
        self.launch_duration_s = launch_duration_s


def _clip(
    a: Activity, key: tuple[int | None, int], stream_end: dict[tuple[int | None, int], float]
) -> float:
    """Clip ``a`` to start where the stream's previous activity ends; the seconds cut.

    A CUDA stream runs its work in order, one activity at a time, so two activities that
    overlap on one stream are a clock artefact or a corrupt trace; summed as recorded, the
    overlap would count twice in every per-kernel, per-category and per-step total. The later
    one (activities arrive in start order) keeps its end and starts at the earlier one's end
    (zero long when it lies wholly inside it). NOTE: Perfetto's trace processor does not
    stack such slices on one track either (it leaves the improperly nested one out,
    google/perfetto#4280); clipping keeps the activity and its non-overlapping time.
    """
    end = a.start_s + a.duration_s
    last = stream_end.get(key)
    stream_end[key] = end if last is None else max(last, end)
    if last is None or a.start_s >= last:
        return 0.0
    kept = max(end - last, 0.0)
    cut = a.duration_s - kept
    a.start_s, a.duration_s = min(last, end), kept
    return cut


def _start(a: Activity) -> float:
    return a.start_s


def _classify(a: Activity, memo: dict[str, tuple[str, str] | None]) -> tuple[str, str]:
    if a.kind != "kernel":
        return "copy", f"activity:{a.kind}"
    if a.name not in memo:
        category, rule = classify(a.name)
        memo[a.name] = (category, rule) if category != "other" else None
    hit = memo[a.name]
    if hit is not None:
        return hit
    return classify(a.name, grid=a.grid, block=a.block, shared_memory_bytes=a.shared_memory_bytes)


def _iteration(
    a: Activity, launch: float | None, launched: bool, cpu: StepWindows, gpu: StepWindows
) -> int | None:
    """The step of ``a``, whose launch call started at ``launch`` (None: no launch found).

    ``launched``: whether the trace recorded any launch event at all.
    """
    if launch is not None and cpu:
        found = cpu.find(launch)
        if found is not None:
            return found
    if gpu:
        found = gpu.find(a.start_s)
        if found is not None:
            return found
    if launch is None and cpu and not launched:
        # NOTE: only a trace with no launch events at all is placed by the activity's own start;
        # where launches were recorded, one without its launch is left out, as HTA does.
        return cpu.find(a.start_s)
    return None
