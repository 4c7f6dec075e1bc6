"""Per-iteration statistics from GPU activity intervals: wall, kernel, copy and gap time.

For one iteration on one device (its kernels, memcpys and memsets)::

    wall   = end - first start, where end = the next iteration's first start on this device
             (or, for the last one, its CPU-side step end), and never before its own last end
    kernel = |union of kernel intervals|             (all streams; overlap counted once)
    copy   = |union of memcpy/memset intervals|
    gap    = wall - |union of all intervals|         (the GPU did nothing: idle or launch gaps)

So ``wall`` is the step *period*: idle time between iterations (a slow data loader, a host-side
optimizer step, a synchronisation) counts as gap, as it costs throughput, rather than falling
between iterations where no statistic would see it.

An iteration that ran on several devices (or ranks) is reported on its busiest one (the longest
wall), since that device bounds the step. All results are >= 0 by construction.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from workbench.evidence.run import IterationStats, MeasuredKernel, MeasuredRun

__all__ = ["StepWindows", "derive_step_windows", "iteration_stats", "time_by_name", "union_s"]


def union_s(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length of the union of ``(start, end)`` intervals, s.

    >>> union_s([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)])
    4.0
    """
    total = 0.0
    cur_start = cur_end = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        elif end > cur_end:
            cur_end = end
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


class StepWindows:
    """Step annotations (``ProfilerStep#N``) as sorted, non-overlapping time windows.

    Args:
        windows: ``(index, start_s, end_s)`` per step.
    """

    def __init__(self, windows: Iterable[tuple[int, float, float]]) -> None:
        ordered = sorted(windows, key=lambda w: w[1])
        self.starts = [w[1] for w in ordered]
        self.ends = [w[2] for w in ordered]
        self.indexes = [w[0] for w in ordered]

    def __bool__(self) -> bool:
        return bool(self.starts)

    def find(self, t_s: float) -> int | None:
        """The index of the step whose window holds ``t_s``, or None."""
        i = bisect.bisect_right(self.starts, t_s) - 1
        if i >= 0 and t_s <= self.ends[i]:
            return self.indexes[i]
        return None


def iteration_stats(
    kernels: Sequence[MeasuredKernel], step_ends: Mapping[int, float] | None = None
) -> tuple[IterationStats, ...]:
    """One :class:`IterationStats` per iteration index carried by ``kernels``, in index order.

    Args:
        kernels: The activities, with their iteration (None: left out).
        step_ends: CPU-side end of each step, s (closes the last iteration's period).
    """
    devices: dict[tuple[int | None, int | None], dict[int, list[MeasuredKernel]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for k in kernels:
        if k.iteration is not None:
            devices[(k.rank, k.device)][k.iteration].append(k)
    best: dict[int, IterationStats] = {}
    for groups in devices.values():
        firsts = sorted((min(k.start_s for k in g), index) for index, g in groups.items())
        for n, (first, index) in enumerate(firsts):
            if n + 1 < len(firsts):
                period_end = firsts[n + 1][0]
            else:
                period_end = (step_ends or {}).get(index, first)
            stats = _one(index, groups[index], first, period_end)
            if index not in best or stats.wall_s > best[index].wall_s:
                best[index] = stats
    return tuple(best[i] for i in sorted(best))


def _one(
    index: int, group: Sequence[MeasuredKernel], first: float, period_end: float
) -> IterationStats:
    spans = [(k.start_s, k.end_s) for k in group]
    wall = max(max(e for _, e in spans), period_end) - first
    busy = union_s(spans)
    kernel = union_s((k.start_s, k.end_s) for k in group if k.kind == "kernel")
    copy = union_s((k.start_s, k.end_s) for k in group if k.kind != "kernel")
    return IterationStats(
        index=index,
        wall_s=wall,
        kernel_s=kernel,
        gap_s=max(wall - busy, 0.0),
        copy_s=copy,
    )


def derive_step_windows(
    kernels: Sequence[MeasuredKernel], lead_s: float
) -> list[tuple[int, float, float]]:
    """CPU-side step windows ``(index, start_s, end_s)`` that hold each iteration's launches.

    Each window opens ``2 * lead_s`` before the iteration's first activity and closes at its last
    end, clipped at the next window's start (the trace writers use it).
    """
    spans: dict[int, list[float]] = {}
    for k in kernels:
        if k.iteration is None:
            continue
        span = spans.setdefault(k.iteration, [k.start_s - 2 * lead_s, k.end_s])
        span[0] = min(span[0], k.start_s - 2 * lead_s)
        span[1] = max(span[1], k.end_s)
    ordered = sorted((s[0], s[1], i) for i, s in spans.items())
    out = []
    for n, (start, end, index) in enumerate(ordered):
        # NOTE: CPU-side step windows do not overlap; clip at the next step's start.
        stop = min(end, ordered[n + 1][0]) if n + 1 < len(ordered) else end
        out.append((index, start, stop))
    return out


def time_by_name(run: MeasuredRun) -> dict[str, float]:
    """Summed duration of each kernel name per iteration (mean over repeats), s, largest first.

    Like :meth:`MeasuredRun.time_by_category`, durations are summed, not unioned, and activities
    outside every iteration are left out. Two runs' dicts diff kernel by kernel.
    """
    counted = {it.index for it in run.iterations}
    out: dict[str, float] = defaultdict(float)
    for k in run.kernels:
        if k.iteration in counted:
            out[k.name] += k.duration_s
    n = max(len(counted), 1)
    return dict(sorted(((name, t / n) for name, t in out.items()), key=lambda x: -x[1]))
