"""Static SVG timelines for the review pack (a lane per stream) and a run's temporal breakdown.

Timelines show one lane per stream, overlap visible; the temporal breakdown of a measured run is
its idle / compute / non-compute time per iteration.

No script and no chart library: the SVG prints, works offline, and its bar titles (the kernel
names, escaped) are the tooltips. Bars on different lanes at the same x ran concurrently; an
``overlap`` lane marks where two or more streams were busy at once. Lanes with many bars are
merged at the drawing's resolution (one pixel), so a 2,000-kernel iteration stays a small file.

The temporal breakdown is evidence's (:class:`workbench.evidence.IterationStats`, HTA's
``get_temporal_breakdown`` over a GPU step window; see :mod:`workbench.evidence.breakdown`), read
for the median iteration: ``idle`` the window's time with no GPU activity, ``compute`` the union
of compute kernels, ``non-compute`` the busy time no compute kernel covers (copies and
communication not hidden under compute). The three add up to the window's wall time.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from workbench._format import fmt_percent, fmt_time
from workbench.evidence import IterationStats, MeasuredKernel, MeasuredRun
from workbench.evidence.timeline import iteration_stats, union_s

__all__ = [
    "breakdown_rows",
    "iteration_lanes",
    "lanes_svg",
    "layer_lanes",
    "overlap_intervals",
    "temporal_breakdown",
]

Interval = tuple[float, float, str]
Lane = tuple[str, list[Interval]]

_WIDTH, _LABEL, _ROW = 1000, 190, 18
_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d")


def _merged(intervals: list[Interval], resolution: float) -> list[Interval]:
    """Intervals closer than ``resolution`` merged (names kept for the first and a count)."""
    out: list[list[Any]] = []
    for s, e, name in sorted(intervals):
        if out and s - out[-1][1] <= resolution:
            out[-1][1] = max(out[-1][1], e)
            out[-1][3] += 1
        else:
            out.append([s, e, name, 1])
    return [(s, e, n if c == 1 else f"{n} and {c - 1} more") for s, e, n, c in out]


def overlap_intervals(lanes: Sequence[Lane]) -> list[Interval]:
    """Where two or more lanes are busy at once (a sweep over every bar's start and end)."""
    edges = []
    for i, (_, bars) in enumerate(lanes):
        for s, e, _ in _merged(bars, 0.0):
            edges += [(s, 1, i), (e, -1, i)]
    edges.sort(key=lambda x: (x[0], x[1]))
    out, active, start = [], 0, 0.0
    for t, step, _ in edges:
        before = active
        active += step
        if before < 2 <= active:
            start = t
        elif before >= 2 > active and t > start:
            out.append((start, t, "two or more streams busy"))
    return out


def lanes_svg(lanes: Sequence[Lane], title: str, *, overlap: bool = True) -> str:
    """One SVG with a lane per ``(label, [(start_s, end_s, name)])``, times from 0.

    Args:
        lanes: The lanes, top to bottom.
        title: The caption above the lanes (escaped).
        overlap: Add the ``overlap`` lane when there are several lanes.

    Returns:
        An ``<svg>`` element (width 1,000 px at most; scales down with its box).
    """
    lanes = [lane for lane in lanes if lane[1]]
    if overlap and len(lanes) > 1:
        lanes = [*lanes, ("overlap", overlap_intervals(lanes))]
    t1 = max((e for _, bars in lanes for _, e, _ in bars), default=0.0) or 1e-9
    scale = (_WIDTH - _LABEL - 10) / t1
    h = 28 + _ROW * len(lanes) + 24
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="wb-timeline" viewBox="0 0 {_WIDTH} {h}" '
        f'width="{_WIDTH}" height="{h}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="0" y="14" font-size="12" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, bars) in enumerate(lanes):
        y = 24 + i * _ROW
        colour = "#d62728" if label == "overlap" else _COLOURS[i % len(_COLOURS)]
        parts.append(
            f'<text x="{_LABEL - 6}" y="{y + 12}" font-size="11" text-anchor="end">'
            f"{html.escape(label[:32])}<title>{html.escape(label)}</title></text>"
        )
        for s, e, name in _merged(bars, 1.0 / scale):
            x, w = _LABEL + s * scale, max((e - s) * scale, 0.8)
            tip = f"{name}: {fmt_time(s)} to {fmt_time(e)} ({fmt_time(e - s)})"
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{_ROW - 5}" '
                f'fill="{colour}" fill-opacity="0.75"><title>{html.escape(tip)}</title></rect>'
            )
    y = 24 + len(lanes) * _ROW + 14
    parts.append(
        f'<text x="{_LABEL}" y="{y}" font-size="11">0</text>'
        f'<text x="{_WIDTH - 10}" y="{y}" font-size="11" text-anchor="end">{fmt_time(t1)}</text>'
        "</svg>"
    )
    return "".join(parts)


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
