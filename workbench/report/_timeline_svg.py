"""Timelines for the regression pack (a lane per stream) and a measured run's temporal breakdown.

Timelines show one lane per stream, overlap visible: an Altair chart
(:func:`workbench.report.charts.lane_timeline`) rendered to static SVG by vl-convert
(:func:`workbench.report.export.chart_svg`), so the page needs no script, prints, and works
offline. Bars on different lanes at the same x ran concurrently; an ``overlap`` lane marks where
two or more streams were busy at once. Every text in the SVG (kernel names, lane labels, the
title) is escaped by the renderer.

The temporal breakdown is evidence's (:class:`workbench.evidence.IterationStats`, HTA's
``get_temporal_breakdown`` over a GPU step window; see :mod:`workbench.evidence.breakdown`), read
for the median iteration: ``idle`` the window's time with no GPU activity, ``compute`` the union
of compute kernels, ``non-compute`` the busy time no compute kernel covers (copies and
communication not hidden under compute). The three add up to the window's wall time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from workbench._format import fmt_percent
from workbench.evidence import IterationStats, MeasuredKernel, MeasuredRun, union_s
from workbench.evidence.timeline import iteration_stats
from workbench.report._html import Html, trusted

__all__ = [
    "breakdown_rows",
    "iteration_lanes",
    "lanes_svg",
    "layer_lanes",
    "temporal_breakdown",
]

Interval = tuple[float, float, str]
Lane = tuple[str, list[Interval]]


def lanes_svg(lanes: Sequence[Lane], title: str, *, overlap: bool = True) -> Html:
    """One static SVG with a lane per ``(label, [(start_s, end_s, name)])``, times from 0.

    Args:
        lanes: The lanes, top to bottom.
        title: The chart's title (escaped by the renderer).
        overlap: Add the ``overlap`` lane when there are several lanes.

    Returns:
        An ``<svg>`` element rendered by vl-convert (no script, nothing fetched).
    """
    from workbench.report.charts.timeline import lane_timeline
    from workbench.report.export import chart_svg

    # NOTE: vl-convert escapes every text it writes (title, labels, the bars' aria-labels)
    return trusted(chart_svg(lane_timeline(lanes, title, overlap=overlap)))


def layer_lanes(rows: Sequence[dict[str, Any]]) -> list[Lane]:
    """Lanes ``side / stream`` from the pack's layer-timeline rows (seconds from layer start)."""
    lanes: dict[str, list[Interval]] = defaultdict(list)
    for r in rows:
        label = f"{r['side']} / {r.get('stream', 'in order')}"
        lanes[label].append((r["start_s"], r["end_s"], r["kernel"]))
    return sorted(lanes.items(), key=lambda kv: (not kv[0].startswith("baseline"), kv[0]))


def _median_iteration(run: MeasuredRun) -> tuple[int | None, float, list[MeasuredKernel]]:
    """``(index, wall_s, kernels)`` of the median iteration on the busiest device."""
    its = sorted(run.iterations, key=lambda it: it.wall_s)
    if not its:
        return None, 0.0, []
    it = its[(len(its) - 1) // 2]
    ks = [k for k in run.kernels if k.iteration == it.index]
    if not run.steps_annotated:
        ks = list(run.kernels)
    by_dev: dict[Any, list[MeasuredKernel]] = defaultdict(list)
    for k in ks:
        by_dev[k.device].append(k)
    if not by_dev:
        return it.index, it.wall_s, []
    busiest = max(by_dev, key=lambda d: union_s((k.start_s, k.end_s) for k in by_dev[d]))
    return it.index, it.wall_s, by_dev[busiest]


def iteration_lanes(run: MeasuredRun) -> tuple[str, list[Lane]]:
    """The median iteration's activities, one lane per stream (seconds from its first start)."""
    index, _, ks = _median_iteration(run)
    if not ks:
        return "", []
    t0 = min(k.start_s for k in ks)
    lanes: dict[str, list[Interval]] = defaultdict(list)
    for k in ks:
        lanes[f"stream {k.stream}" if k.stream is not None else "stream (unknown)"].append(
            (k.start_s - t0, k.end_s - t0, k.name)
        )
    caption = f"iteration {index} (the median), {len(ks)} activities"
    return caption, sorted(lanes.items(), key=lambda kv: kv[0])


def _median_stats(run: MeasuredRun) -> IterationStats | None:
    """Evidence's figures of the median iteration (by wall time; the lower one of two)."""
    its = sorted(run.iterations, key=lambda it: it.wall_s)
    if not its:
        return None
    it = its[(len(its) - 1) // 2]
    if it.compute_s is not None:
        return it
    # NOTE: a run whose iterations predate the compute figures: evidence's rule, from its kernels
    return next((s for s in iteration_stats(run.kernels) if s.index == it.index), None)


def temporal_breakdown(run: MeasuredRun) -> dict[str, float] | None:
    """Idle, compute and non-compute time of the median iteration, s (see the module doc).

    Returns:
        ``{wall_s, idle_s, compute_s, non_compute_s}``, or None without iterations.
    """
    it = _median_stats(run)
    if it is None or it.compute_s is None or it.non_compute_s is None:
        return None
    return {"wall_s": it.wall_s, "idle_s": it.gap_s, "compute_s": it.compute_s,
            "non_compute_s": it.non_compute_s}  # fmt: skip


def breakdown_rows(runs: Sequence[tuple[str, MeasuredRun | None]]) -> list[dict[str, Any]]:
    """Table rows: per run, wall time and each part with its share of the wall."""
    rows = []
    for side, run in runs:
        tb = temporal_breakdown(run) if run is not None else None
        if tb is None:
            continue
        wall = tb["wall_s"]
        row: dict[str, Any] = {"run": side, "wall_s": wall}
        for part in ("compute", "non_compute", "idle"):
            v = tb[f"{part}_s"]
            row[f"{part}_s"] = v
            row[f"{part}_share"] = fmt_percent(v / wall) if wall else "-"
        rows.append(row)
    return rows
