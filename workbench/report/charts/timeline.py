"""Timelines (Gantt-like): the execution engine's tiles, and measured or predicted kernels per lane.

:func:`timeline` draws one lane per kernel from the execution engine's trace events;
:func:`lane_timeline` one lane per stream (``[(label, [(start_s, end_s, name)])]``) with an
``overlap`` lane where two or more lanes were busy at once. Bars closer than a pixel merge
(:class:`workbench.evidence.Intervals` with the pixel as its gap), so a 2,000-kernel iteration
stays a small static SVG.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import altair as alt

from workbench._format import fmt_time
from workbench.evidence import Intervals
from workbench.execution.trace import TraceEvent
from workbench.report.charts._common import MAX_ROWS, time_unit

__all__ = [
    "LANE_WIDTH_PX",
    "OVERLAP_LANE",
    "lane_rows",
    "lane_timeline",
    "overlap_intervals",
    "timeline",
    "timeline_rows",
]

#: Label of the lane that marks where two or more lanes were busy at once.
OVERLAP_LANE = "overlap"
#: Width of the lane timeline's plot, px (the pack's page is 1,280 px wide).
LANE_WIDTH_PX = 760
_LANE_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d")
_OVERLAP_COLOUR = "#d62728"

Bar = tuple[float, float, str]
Lane = tuple[str, Sequence[Bar]]


def timeline_rows(events: Iterable[TraceEvent], max_rows: int = 2000) -> list[dict[str, Any]]:
    """One row per tile event; consecutive events are merged when there are too many.

    Args:
        events: Trace events (a ``Trace`` or a sequence of ``TraceEvent``).
        max_rows: Upper bound on the rows returned (merging runs of events of one kernel).

    Returns:
        Dicts ``{kernel, tile, tiles, start_s, end_s, elapsed_s, bytes, flops}`` (seconds,
        bytes, FLOP), ordered by start time.
    """
    evs = sorted(events, key=lambda e: e.start_s)
    per = max(1, -(-len(evs) // min(max_rows, MAX_ROWS)))
    rows: list[dict[str, Any]] = []
    for i in range(0, len(evs), per):
        chunk = evs[i : i + per]
        first, last = chunk[0], chunk[-1]
        rows.append(
            {
                "kernel": first.kernel,
                "tile": ",".join(str(t) for t in first.tile_index),
                "tiles": len(chunk),
                "start_s": first.start_s,
                "end_s": last.start_s + last.elapsed_s,
                "elapsed_s": sum(e.elapsed_s for e in chunk),
                "bytes": sum(e.bytes_touched for e in chunk),
                "flops": sum(e.flops for e in chunk),
            }
        )
    return rows


def timeline(trace_events: Iterable[TraceEvent]) -> alt.Chart:
    """Gantt-like chart: one lane per kernel, one bar per tile (or merged run of tiles).

    Args:
        trace_events: A ``workbench.execution.Trace`` or a sequence of ``TraceEvent``.

    Returns:
        A bar chart with start/end on x (display time unit) and the kernel on y; tooltips
        give the tile index, bytes and achieved GFLOP/s.
    """
    rows = timeline_rows(trace_events)
    factor, unit = time_unit(max((r["end_s"] for r in rows), default=0.0))
    return (
        alt.Chart({"values": rows})
        .transform_calculate(
            start=f"datum.start_s * {factor}",
            end=f"datum.end_s * {factor}",
            gflops="datum.elapsed_s > 0 ? datum.flops / datum.elapsed_s / 1e9 : 0",
        )
        .mark_bar()
        .encode(
            x=alt.X("start:Q", title=f"time since trace start ({unit})"),
            x2="end:Q",
            y=alt.Y("kernel:N", title="kernel"),
            color=alt.Color("kernel:N", legend=None),
            tooltip=[
                "kernel:N",
                alt.Tooltip("tile:N", title="first tile index"),
                alt.Tooltip("tiles:Q", title="tiles"),
                alt.Tooltip("bytes:Q", title="bytes touched", format=".3s"),
                alt.Tooltip("gflops:Q", title="achieved (GFLOP/s)", format=".3g"),
            ],
        )
        .properties(width=520, height=alt.Step(24), title="Kernel timeline (executed tiles)")
    )


def overlap_intervals(lanes: Sequence[Lane]) -> list[Bar]:
    """Where two or more lanes are busy at once: the union of every pair's intersection, s.

    >>> overlap_intervals([("a", [(0.0, 2.0, "x")]), ("b", [(1.0, 3.0, "y")])])
    [(1.0, 2.0, 'two or more streams busy')]
    """
    unions = [Intervals((s, e) for s, e, _ in bars) for _, bars in lanes]
    pairs = [a.intersect(b) for i, a in enumerate(unions) for b in unions[i + 1 :]]
    both = Intervals(span for p in pairs for span in p.spans())
    return [(s, e, "two or more streams busy") for s, e in both.spans()]


def _merged(bars: Sequence[Bar], gap_s: float) -> list[Bar]:
    """Bars closer than ``gap_s`` merged; a merged bar is named by its first and a count."""
    ordered = sorted(bars)
    union = Intervals.from_sorted([b[0] for b in ordered], [b[1] for b in ordered], gap_s=gap_s)
    ends = [*union.firsts[1:], len(ordered)]
    out = []
    for (s, e), first, stop in zip(union.spans(), union.firsts, ends, strict=True):
        name, more = ordered[first][2], stop - first - 1
        out.append((s, e, name if more == 0 else f"{name} and {more} more"))
    return out


def lane_rows(lanes: Sequence[Lane], *, overlap: bool = True) -> list[dict[str, Any]]:
    """The lane timeline's data: one row per bar, bars closer than a plot pixel merged.

    Args:
        lanes: ``(label, [(start_s, end_s, name)])`` per lane, top to bottom; empty lanes are
            dropped.
        overlap: Add the ``overlap`` lane when there are several lanes.

    Returns:
        Dicts ``{lane, name, start_s, end_s, span}`` (seconds; ``span`` the bar's times as text).
    """
    kept = [(label, list(bars)) for label, bars in lanes if bars]
    if overlap and len(kept) > 1:
        kept.append((OVERLAP_LANE, overlap_intervals(kept)))
    t1 = max((e for _, bars in kept for _, e, _ in bars), default=0.0) or 1e-9
    rows = []
    for label, bars in kept:
        for s, e, name in _merged(bars, t1 / LANE_WIDTH_PX):
            span = f"{fmt_time(s)} to {fmt_time(e)} ({fmt_time(e - s)})"
            rows.append({"lane": label, "name": name, "start_s": s, "end_s": e, "span": span})
    return rows


def lane_timeline(lanes: Sequence[Lane], title: str, *, overlap: bool = True) -> alt.Chart:
    """One lane per stream (or side), bars at their times from 0, an ``overlap`` lane in red.

    Bars on different lanes at the same x ran concurrently. Times are shown in one display
    unit (``calculate`` transforms); lanes keep the order given, the overlap lane last.

    Args:
        lanes: ``(label, [(start_s, end_s, name)])`` per lane, top to bottom.
        title: The chart's title.
        overlap: Add the ``overlap`` lane when there are several lanes.

    Returns:
        A bar chart (x: start to end; y: lane; tooltip: the name and its times).
    """
    rows = lane_rows(lanes, overlap=overlap)
    labels = list(dict.fromkeys(r["lane"] for r in rows))
    colours = [
        _OVERLAP_COLOUR if label == OVERLAP_LANE else _LANE_COLOURS[i % len(_LANE_COLOURS)]
        for i, label in enumerate(labels)
    ]
    t1 = max((r["end_s"] for r in rows), default=0.0)
    factor, unit = time_unit(t1)
    least = 0.8 * (t1 or 1e-9) / LANE_WIDTH_PX  # NOTE: a bar is drawn at least 0.8 px wide
    return (
        alt.Chart(alt.Data(values=rows))
        .transform_calculate(
            start=f"datum.start_s * {factor}",
            end=f"max(datum.end_s, datum.start_s + {least!r}) * {factor}",
        )
        .mark_bar(opacity=0.75)
        .encode(
            x=alt.X("start:Q", title=f"time from the first start ({unit})"),
            x2="end:Q",
            y=alt.Y("lane:N", title=None, sort=labels, axis=alt.Axis(labelLimit=180)),
            color=alt.Color("lane:N", legend=None, scale=alt.Scale(domain=labels, range=colours)),
            tooltip=[alt.Tooltip("name:N", title="kernel"), alt.Tooltip("span:N", title="time")],
        )
        .properties(title=title, width=LANE_WIDTH_PX, height=alt.Step(18))
    )
