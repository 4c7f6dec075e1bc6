"""Host-side launches per stream: runtime call time, launch delay and queue length (HTA's terms).

Every GPU activity a trace links to its runtime launch call (``cudaLaunchKernel``,
``cudaMemcpyAsync``, ``cudaMemsetAsync``..., :data:`~workbench.evidence._assemble.LAUNCH_CALLS`,
by correlation id) carries that call's start and duration
(:attr:`~workbench.evidence.run.MeasuredKernel.launch_start_s`). Over the activities of the
trace's steps (the warm-up step included, as Holistic Trace Analysis takes every step), per rank
and per CUDA stream, with Holistic Trace Analysis 0.5's definitions:

- **runtime call time** = the launch call's duration (HTA ``cpu_duration``): host time spent
  launching;
- **launch delay** = activity start - (call start + call duration), clipped at 0 (HTA
  ``launch_delay``, ``CudaKernelAnalysis.cuda_kernel_launch_stats``): how long the work waited
  on the GPU after the host had handed it over;
- **queue length** = outstanding operations on the stream (HTA
  ``TraceCounters.get_queue_length_time_series``): +1 at each launch call's start, -1 at each
  activity's start, in time order; the statistics are over the series' samples (one per event,
  as HTA's ``get_queue_length_summary`` describes them, not weighted by time).

A long launch delay with a deep queue is a GPU-bound stream (the host runs ahead); a short queue
with long runtime calls is a host-bound one. Each row gives the mean, median, 95th percentile
(linear interpolation, as pandas' ``describe``) and maximum.

>>> from workbench.evidence.run import IterationStats, MeasuredKernel, MeasuredRun
>>> ks = tuple(MeasuredKernel(name="k", category="gemm", rule="r", start_s=s, duration_s=1e-3,
...            stream=7, iteration=1, launch_start_s=l, launch_duration_s=1e-5)
...            for s, l in ((1e-3, 0.0), (2e-3, 1e-4)))
>>> it = IterationStats(index=1, wall_s=2e-3, kernel_s=2e-3, gap_s=0.0, copy_s=0.0)
>>> run = MeasuredRun(source="t", format="kineto", tags=(), kernels=ks, iterations=(it,))
>>> row = launch_stats(run)[0]
>>> row.stream, row.launches, round(row.delay.maximum * 1e6), row.queue.maximum
(7, 2, 1890, 2.0)
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.evidence.run import MeasuredKernel, MeasuredRun

__all__ = ["LaunchStats", "Summary", "launch_stats", "queue_lengths"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """Mean, median, 95th percentile and maximum of a sample (seconds, or a count)."""

    mean: float
    median: float
    p95: float
    maximum: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchStats:
    """The launches onto one stream of one rank (see the module doc).

    Attributes:
        rank: The rank (None when the trace does not say).
        stream: The CUDA stream id (None when the trace does not say).
        launches: Activities with a launch call, over the trace's steps.
        runtime: The launch calls' durations, s.
        delay: The launch delays, s.
        queue: The queue length over the stream's series (counts).
    """

    rank: int | None
    stream: int | None
    launches: int
    runtime: Summary
    delay: Summary
    queue: Summary


def summarize(values: Sequence[float]) -> Summary:
    """:class:`Summary` of a non-empty sample.

    >>> summarize([1.0, 2.0, 3.0, 10.0])
    Summary(mean=4.0, median=2.5, p95=8.949999999999998, maximum=10.0)
    """
    ordered = sorted(values)
    median, p95 = np.quantile(ordered, (0.5, 0.95), method="linear")
    return Summary(
        mean=math.fsum(ordered) / len(ordered),
        median=float(median),
        p95=float(p95),
        maximum=ordered[-1],
    )


def queue_lengths(kernels: Sequence[MeasuredKernel]) -> list[int]:
    """The queue-length series of one stream's launched activities (one sample per event).

    +1 at each launch call's start, -1 at each activity's start, in time order; a launch and a
    start at the same instant count the launch first (the work is queued before it runs).

    >>> from workbench.evidence.run import MeasuredKernel
    >>> k = lambda s, l: MeasuredKernel(name="k", category="gemm", rule="r", start_s=s,
    ...     duration_s=1.0, launch_start_s=l, launch_duration_s=0.1)
    >>> queue_lengths([k(5.0, 0.0), k(6.0, 1.0)])
    [1, 2, 1, 0]
    """
    events = [(k.launch_start_s, 0) for k in kernels if k.launch_start_s is not None]
    events += [(k.start_s, 1) for k in kernels if k.launch_start_s is not None]
    events.sort()
    depth, out = 0, []
    for _, kind in events:
        depth += 1 if kind == 0 else -1
        out.append(depth)
    return out


def launch_stats(run: MeasuredRun) -> tuple[LaunchStats, ...]:
    """Launch statistics per rank and stream over the trace's steps (see the module doc).

    Args:
        run: The measured run.

    Returns:
        One row per ``(rank, stream)`` with at least one launched activity, in that order; empty
        when the trace linked no activity to a launch call.
    """
    by_stream: dict[tuple[int | None, int | None], list[MeasuredKernel]] = defaultdict(list)
    for k in run.kernels:
        if k.iteration is not None and k.launch_delay_s is not None:
            by_stream[(k.rank, k.stream)].append(k)
    rows = []
    for (rank, stream), kernels in by_stream.items():
        rows.append(
            LaunchStats(
                rank=rank,
                stream=stream,
                launches=len(kernels),
                runtime=summarize([k.launch_duration_s or 0.0 for k in kernels]),
                delay=summarize([k.launch_delay_s or 0.0 for k in kernels]),
                queue=summarize([float(q) for q in queue_lengths(kernels)]),
            )
        )
    return tuple(sorted(rows, key=lambda r: (_key(r.rank), _key(r.stream))))


def _key(v: int | None) -> tuple[int, int]:
    return (1, 0) if v is None else (0, v)
