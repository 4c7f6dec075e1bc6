"""A kernel timeline (Gantt-like) from the execution engine's trace events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import altair as alt

from workbench.execution.trace import TraceEvent
from workbench.report.charts._common import MAX_ROWS, time_unit

__all__ = ["timeline", "timeline_rows"]


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
