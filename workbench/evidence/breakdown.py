"""Step windows on the GPU timeline and the temporal breakdown of GPU time in them.

Step windows (one per iteration, per rank and device) follow :data:`WINDOW_RULE`: step N's window
opens at the start of its first GPU activity (an activity belongs to the step whose host-side
``ProfilerStep#N`` holds its runtime launch) and closes where step N+1's opens; the last one closes
where its own GPU work ends (the end of the last activity it launched), not at the end of any
step's (a profiler tail, or an earlier step's work still running, is no part of it). So the
windows never overlap: when the GPU lags the host, step N's work running after step N+1's first
kernel is busy time of N+1's window, never idle time of it.

The breakdown uses Holistic Trace Analysis's definitions (``hta.analyzers.breakdown_analysis``)::

    busy        = |union of every GPU activity|       (kernels, memcpys, memsets; all streams)
    idle        = span - busy
    compute     = |union of compute kernels|          (kernels not collectives or memcpy-named)
    non_compute = busy - compute                      (communication and memory not under compute)
    comm        = |union of collective kernels|       (NCCL/RCCL)
    memory      = |union of memcpy/memset|
    overlap     = |compute intersect comm|            (HTA's comm/comp overlap: overlap / comm)

Per rank, the span runs from the first step's first GPU activity to the end of the last activity of
any step, which is HTA's span with ``include_last_profiler_step=True`` (the step windows tile it,
but for any work of earlier steps that runs past the last step's own). Like HTA, only activities
that belong to a step count: one launched outside every step, or whose runtime launch the trace
did not record (a trace that records launches), is left out (the run's warnings count them).
All times are seconds.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.evidence._intervals import Intervals
from workbench.evidence.run import WINDOW_RULE, IterationStats, MeasuredKernel, MeasuredRun

__all__ = [
    "WINDOW_RULE",
    "Busy",
    "Intervals",
    "RankBreakdown",
    "step_windows",
    "temporal_breakdown",
    "window_stats",
]


@dataclass(frozen=True, slots=True)
class Busy:
    """The busy-time unions of one device's (or rank's) activities, by HTA's kernel types."""

    all: Intervals
    kernel: Intervals
    memory: Intervals
    compute: Intervals
    comm: Intervals
    overlap: Intervals

    @classmethod
    def of(cls, kernels: Sequence[MeasuredKernel]) -> Busy:
        """Build the unions from the activities that belong to a step (any step).

        One pass: the activities are put in start order once (they usually come in it), and
        each union is merged from that order.
        """
        placed = [k for k in kernels if k.iteration is not None]
        if any(placed[i].start_s > placed[i + 1].start_s for i in range(len(placed) - 1)):
            placed.sort(key=_start)
        starts = {n: array("d") for n in ("all", "kernel", "memory", "compute", "comm")}
        ends = {n: array("d") for n in starts}
        all_s, all_e = starts["all"], ends["all"]
        kernel_s, kernel_e = starts["kernel"], ends["kernel"]
        memory_s, memory_e = starts["memory"], ends["memory"]
        compute_s, compute_e = starts["compute"], ends["compute"]
        comm_s, comm_e = starts["comm"], ends["comm"]
        for k in placed:
            s = k.start_s
            e = s + k.duration_s
            all_s.append(s)
            all_e.append(e)
            if k.kind != "kernel":
                memory_s.append(s)
                memory_e.append(e)
                continue
            kernel_s.append(s)
            kernel_e.append(e)
            if k.category == "collective":
                comm_s.append(s)
                comm_e.append(e)
            elif k.rule != "name~memcpy":
                # NOTE: as HTA, a kernel is compute unless it is a collective or a memcpy/memset
                # by name; a copy kernel such as CatArrayBatchedCopy computes nothing but is
                # compute time to HTA.
                compute_s.append(s)
                compute_e.append(e)
        unions = {n: Intervals.from_sorted(starts[n], ends[n]) for n in starts}
        return cls(**unions, overlap=unions["compute"].intersect(unions["comm"]))


def _start(k: MeasuredKernel) -> float:
    return k.start_s


def step_windows(kernels: Sequence[MeasuredKernel]) -> list[tuple[int, float, float]]:
    """Non-overlapping GPU step windows ``(index, start_s, end_s)`` of one device, in time order.

    Args:
        kernels: One device's (or rank's) activities; those with ``iteration`` None (launched
            outside every step, or with no launch event recorded) are left out, as HTA does.
    """
    firsts: dict[int, float] = {}
    ends: dict[int, float] = {}
    for k in kernels:
        i = k.iteration
        if i is None:
            continue
        start, end = k.start_s, k.end_s
        if i not in firsts:
            firsts[i], ends[i] = start, end
            continue
        if start < firsts[i]:
            firsts[i] = start
        if end > ends[i]:
            ends[i] = end
    ordered = sorted((t, i) for i, t in firsts.items())
    out = []
    for n, (start, index) in enumerate(ordered):
        # NOTE: the last step ends with its own work (WINDOW_RULE), not with any step's.
        end = ordered[n + 1][0] if n + 1 < len(ordered) else ends[index]
        out.append((index, start, max(end, start)))
    return out


#: Share of a step's period its own GPU work may run past the next step's start before the steps
#: count as pipelined (an assumption: a rounding-level tolerance, not a fitted figure).
SPILL_TOLERANCE = 0.01


def last_window_open(
    kernels: Sequence[MeasuredKernel], windows: Sequence[tuple[int, float, float]]
) -> float | None:
    """How far the step before the last ran past the last one's start, s, when steps pipeline.

    A window ends at the next step's first GPU activity; the last has no next step, so it ends
    where its own GPU work ends. When the GPU runs steps overlapped (a step's own kernels still
    run after the next step's first, as on a multi-rank A100 trace whose ~216 ms steps each run
    ~160 ms into the next), the last window then holds that tail too (372 ms there): when it is
    also longer than every other window, it is no step period. None when the step before the
    last ended within :data:`SPILL_TOLERANCE` of its period, when the last window is no longer
    than some measured period (a trace whose periods swing as widely is read as it ran), or with
    fewer than 2 windows.
    """
    if len(windows) < 2:
        return None
    (before, start, end), (_, last_start, last_end) = windows[-2], windows[-1]
    if last_end - last_start <= max(e - s for _, s, e in windows[:-1]):
        return None  # NOTE: no longer than a measured period: read as one
    own_end = max((k.end_s for k in kernels if k.iteration == before), default=end)
    spill = own_end - last_start
    return spill if spill > SPILL_TOLERANCE * (end - start) else None


def _last_end(kernels: Sequence[MeasuredKernel]) -> float:
    """The end of the last activity that belongs to a step, s (-inf if none does)."""
    return max((k.end_s for k in kernels if k.iteration is not None), default=float("-inf"))


def window_stats(index: int, busy: Busy, start: float, end: float) -> IterationStats:
    """The figures of one step window ``[start, end]`` (s) from a device's busy unions."""
    wall = end - start
    return IterationStats(
        index=index,
        wall_s=wall,
        kernel_s=busy.kernel.within(start, end),
        gap_s=max(wall - busy.all.within(start, end), 0.0),
        copy_s=busy.memory.within(start, end),
        start_s=start,
        compute_s=busy.compute.within(start, end),
        comm_s=busy.comm.within(start, end),
        overlap_s=busy.overlap.within(start, end),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RankBreakdown:
    """HTA's temporal breakdown of one rank over its step windows (see the module doc), s.

    ``iterations`` holds the same figures per step window of this rank, in time order; they add
    up to the rank's (``idle_s`` is the sum of their ``gap_s``, and so on).
    """

    rank: int | None
    span_s: float
    idle_s: float
    compute_s: float
    non_compute_s: float
    comm_s: float
    memory_s: float
    overlap_s: float
    iterations: tuple[IterationStats, ...] = ()

    def pct(self, seconds: float) -> float:
        """``seconds`` as a percentage of the span (0 for an empty span)."""
        return 100.0 * seconds / self.span_s if self.span_s > 0 else 0.0

    @property
    def idle_pct(self) -> float:
        """Idle share of the span, %."""
        return self.pct(self.idle_s)

    @property
    def compute_pct(self) -> float:
        """Compute share of the span, %."""
        return self.pct(self.compute_s)

    @property
    def non_compute_pct(self) -> float:
        """Non-compute (communication + memory not under compute) share of the span, %."""
        return self.pct(self.non_compute_s)

    @property
    def comm_overlap_pct(self) -> float | None:
        """Share of communication time overlapped by compute, % (None without communication)."""
        return 100.0 * self.overlap_s / self.comm_s if self.comm_s > 0 else None


def temporal_breakdown(
    run: MeasuredRun, *, include_last_step: bool = True
) -> tuple[RankBreakdown, ...]:
    """The temporal breakdown of each rank of ``run`` (one entry, rank None, if unknown).

    Args:
        run: The measured run.
        include_last_step: Count the last step's activities (HTA's ``include_last_profiler_step``;
            HTA's default is False: the last step is often cut short by the profiler stopping).
            Without it, the span ends at the last activity of the other steps.
    """
    ranks: dict[int | None, list[MeasuredKernel]] = defaultdict(list)
    for k in run.kernels:
        ranks[k.rank].append(k)
    out = []
    for rank in sorted(ranks, key=lambda r: (r is None, r or 0)):
        kernels = ranks[rank]
        steps = {k.iteration for k in kernels if k.iteration is not None}
        if not include_last_step and run.steps_annotated and len(steps) > 1:
            last = max(steps)
            kernels = [k for k in kernels if k.iteration != last]
        busy = Busy.of(kernels)
        windows = step_windows(kernels)
        if not windows:
            continue
        lo, hi = windows[0][1], max(windows[-1][2], _last_end(kernels))
        all_s = busy.all.within(lo, hi)
        compute = busy.compute.within(lo, hi)
        out.append(
            RankBreakdown(
                rank=rank,
                span_s=hi - lo,
                idle_s=max(hi - lo - all_s, 0.0),
                compute_s=compute,
                non_compute_s=max(all_s - compute, 0.0),
                comm_s=busy.comm.within(lo, hi),
                memory_s=busy.memory.within(lo, hi),
                overlap_s=busy.overlap.within(lo, hi),
                iterations=tuple(window_stats(i, busy, s, e) for i, s, e in windows),
            )
        )
    return tuple(out)
