"""Static SVG timelines for the review pack (a lane per stream) and a run's temporal breakdown.

Timelines show one lane per stream, overlap visible; the temporal breakdown of a measured run is
its idle / compute / non-compute time per iteration.

No script and no chart library: the SVG prints, works offline, and its bar titles (the kernel
names, escaped) are the tooltips. Bars on different lanes at the same x ran concurrently; an
``overlap`` lane marks where two or more streams were busy at once. Lanes with many bars are
merged at the drawing's resolution (one pixel), so a 2,000-kernel iteration stays a small file.

The temporal breakdown follows Holistic Trace Analysis' ``get_temporal_breakdown`` (idle,
compute, non-compute time), computed over the median iteration of the busiest device: ``busy``
is the union of every GPU interval; ``compute`` the union of kernels that are not copies or
collectives; ``non-compute`` the busy time no compute kernel covers (copies and communication
not hidden under compute); ``idle`` the wall time nothing ran. The three add up to the wall.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from workbench._format import fmt_percent, fmt_time
from workbench.evidence import MeasuredKernel, MeasuredRun
from workbench.evidence.timeline import union_s

__all__ = [
    "breakdown_rows",
    "iteration_lanes",
    "lanes_svg",
    "layer_lanes",
    "overlap_intervals",
    "temporal_breakdown",
]

#: Categories that are not compute (HTA's non-compute: memory and communication).
NON_COMPUTE = ("copy", "collective")

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


def temporal_breakdown(run: MeasuredRun) -> dict[str, float] | None:
    """Idle, compute and non-compute time of the median iteration, s (see the module doc).

    A ``temporal_breakdown`` the run carries itself (a mapping with ``idle_s``, ``compute_s``,
    ``non_compute_s``) is used as given.

    Returns:
        ``{wall_s, idle_s, compute_s, non_compute_s}``, or None without iterations.
    """
    own = getattr(run, "temporal_breakdown", None)
    own = own() if callable(own) else own
    if isinstance(own, dict) and {"idle_s", "compute_s", "non_compute_s"} <= set(own):
        idle, comp, non = (float(own[k]) for k in ("idle_s", "compute_s", "non_compute_s"))
        return {"wall_s": idle + comp + non, "idle_s": idle, "compute_s": comp,
                "non_compute_s": non}  # fmt: skip
    index, wall, ks = _median_iteration(run)
    if index is None or not ks:
        return None
    busy = union_s((k.start_s, k.end_s) for k in ks)
    compute = union_s(
        (k.start_s, k.end_s) for k in ks if k.kind == "kernel" and k.category not in NON_COMPUTE
    )
    wall = max(wall, busy)
    return {"wall_s": wall, "idle_s": wall - busy, "compute_s": compute,
            "non_compute_s": busy - compute}  # fmt: skip


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
