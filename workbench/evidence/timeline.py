"""Per-iteration statistics from GPU activity intervals: wall, kernel, copy and gap time.

For one iteration on one device, over its GPU step window (see
:data:`workbench.evidence.breakdown.WINDOW_RULE`: from the step's first GPU activity to the next
step's, the last one to the end of its own GPU work; windows never overlap)::

    wall    = window end - window start            (the step period on the GPU timeline)
    kernel  = |union of kernel intervals in it|    (all streams; overlap counted once)
    copy    = |union of memcpy/memset intervals in it|
    gap     = wall - |union of all intervals in it| (the GPU did nothing: idle or launch gaps)
    compute, comm, overlap: HTA's compute kernels, collectives, and their intersection

Activities count in the window they run in, whichever step launched them: when the GPU lags the
host, step N's kernels running after step N+1's first one are busy time of N+1's window, so no
step's work is ever counted as another step's idle, and the windows add up to the measured span
(less any earlier step's work that runs past the last step's own end).
Idle time between iterations (a slow data loader, a host-side optimizer step, a synchronisation)
counts as gap, as it costs throughput.

An iteration that ran on several devices (or ranks) is reported on its busiest one (the longest
wall), since that device bounds the step. All results are >= 0 by construction.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence

from workbench.evidence._intervals import union_s
from workbench.evidence.breakdown import Busy, last_window_open, step_windows, window_stats
from workbench.evidence.run import IterationStats, MeasuredKernel, MeasuredRun

__all__ = ["StepWindows", "derive_step_windows", "iteration_stats", "time_by_name", "union_s"]


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


def iteration_stats(kernels: Sequence[MeasuredKernel]) -> tuple[IterationStats, ...]:
    """One :class:`IterationStats` per iteration index carried by ``kernels``, in index order.

    Each iteration's figures are taken over its GPU step window
    (:func:`workbench.evidence.breakdown.step_windows`: from its first GPU activity to the next
    step's, the last one to the end of its own GPU work), counting every activity that runs in
    the window, whichever step launched it. A last window that is no step period (the steps
    pipeline on the GPU: :func:`~workbench.evidence.breakdown.last_window_open`) is left out.

    Args:
        kernels: The activities, with their iteration (None: opens no window).
    """
    best: dict[int, IterationStats] = {}
    for group in _devices(kernels):
        busy = Busy.of(group)
        windows = step_windows(group)
        if last_window_open(group, windows) is not None:
            windows = windows[:-1]
        for index, start, end in windows:
            stats = window_stats(index, busy, start, end)
            if index not in best or stats.wall_s > best[index].wall_s:
                best[index] = stats
    return tuple(best[i] for i in sorted(best))


def open_last_steps(kernels: Sequence[MeasuredKernel]) -> dict[int, tuple[float, float]]:
    """The last steps :func:`iteration_stats` leaves out: index -> (its window, the spill), s.

    The window runs from the step's first GPU activity to the end of its own GPU work; the
    spill is how far the step before it ran past its start.
    """
    out: dict[int, tuple[float, float]] = {}
    for group in _devices(kernels):
        windows = step_windows(group)
        spill = last_window_open(group, windows)
        if spill is not None:
            index, start, end = windows[-1]
            out[index] = (end - start, spill)
    return out


def _devices(kernels: Sequence[MeasuredKernel]) -> Iterable[list[MeasuredKernel]]:
    """The activities of each (rank, device), in trace order."""
    devices: dict[tuple[int | None, int | None], list[MeasuredKernel]] = defaultdict(list)
    for k in kernels:
        devices[(k.rank, k.device)].append(k)
    return devices.values()


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
