"""The roofline: every kernel against the hardware's roof per memory level.

Attainable FLOP/s at arithmetic intensity ``I`` (FLOP per byte) for a level with bandwidth ``B``
is ``min(peak, B x I)``; the ridge ``peak / B`` is where the slope meets the compute roof.
Kernels are placed at their intensity on off-chip bytes and their achieved FLOP/s (kernel FLOPs /
predicted time), as in Williams, Waterman & Patterson (CACM 2009).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from workbench.mapper import ModelMapping
from workbench.report.charts._common import bottleneck_colour, group_name, with_values
from workbench.report.sheet import sheet_rows

__all__ = ["roofline", "roofline_points", "roofline_roofs"]

_TOOLTIP_FIELDS = (
    "kernel", "layer_type", "kind", "tile", "count", "time_s", "flops", "bytes_offchip",
    "bottleneck", "expected_bottleneck",
)  # fmt: skip


def roofline_points(mapping: ModelMapping, *, grouped: bool = False) -> list[dict[str, Any]]:
    """One row per kernel that does FLOPs and moves off-chip bytes (the roofline's points).

    Args:
        mapping: The mapped model.
        grouped: Merge kernels of identical layers (same name up to the layer index, same tile
            and time) into one row with ``count`` > 1.

    Returns:
        Dicts with the sheet row's ``kernel, layer_type, kind, tile, time_s, flops,
        bytes_offchip, bottleneck, expected_bottleneck`` plus ``intensity`` (FLOP/byte on
        off-chip bytes), ``achieved_flops_per_s`` (FLOP/s), ``group`` and ``count``.
    """
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i, r in enumerate(sheet_rows(mapping)):
        if not r["flops"] or not r["bytes_offchip"] or not r["time_s"]:
            continue
        row = {f: r.get(f) for f in _TOOLTIP_FIELDS if f != "count"}
        row["group"] = group_name(r["kernel"])
        row["intensity"] = r["flops"] / r["bytes_offchip"]
        row["achieved_flops_per_s"] = r["flops"] / r["time_s"]
        row["count"] = 1
        key = (row["group"], r["tile"], r["time_s"], r["flops"]) if grouped else (i,)
        if key in out:
            out[key]["count"] += 1
        else:
            out[key] = row
    return list(out.values())


def _levels(mapping: ModelMapping, levels: Sequence[str] | None) -> list[str]:
    hw = mapping.hardware
    if levels is not None:
        return [hw.level(name).name for name in levels]
    start = hw.memory.index(hw.sram)
    return [m.name for m in hw.memory[start:]]


def roofline_roofs(
    mapping: ModelMapping,
    levels: Sequence[str] | None = None,
    x_range: tuple[float, float] = (1e-2, 1e4),
) -> list[dict[str, Any]]:
    """The roof lines: per level a bandwidth slope up to its ridge, then the compute roof.

    Args:
        mapping: The mapped model (its hardware and its dtype's matrix-engine peak).
        levels: Memory level names to draw; default every level from the SRAM outwards.
        x_range: Intensity range drawn, FLOP/byte.

    Returns:
        Dicts ``{roof, level, intensity, flops_per_s, ridge}``: three points per level (start,
        ridge, end; ``ridge`` is True at the ridge) and two for the compute roof.
    """
    hw = mapping.hardware
    peak = mapping.peak_flops
    lo, hi = x_range
    rows: list[dict[str, Any]] = []
    for name in _levels(mapping, levels):
        bw = hw.level(name).bandwidth_bytes_per_s
        ridge = peak / bw
        label = f"{name} {bw / 1e12:.3g} TB/s"
        for x, is_ridge in ((min(lo, ridge), False), (ridge, True), (max(hi, ridge), False)):
            y = min(peak, bw * x)
            rows.append(
                {"roof": label, "level": name, "intensity": x, "flops_per_s": y, "ridge": is_ridge}
            )
    label = f"{mapping.dtype} peak {peak / 1e12:.4g} TFLOP/s"
    for x in (lo, hi):
        rows.append(
            {"roof": label, "level": "compute", "intensity": x, "flops_per_s": peak, "ridge": False}
        )
    return rows


def _x_range(points: list[dict[str, Any]], ridges: list[float]) -> tuple[float, float]:
    xs = [p["intensity"] for p in points] + ridges
    lo = 10 ** math.floor(math.log10(min(xs)) - 0.5)
    hi = 10 ** math.ceil(math.log10(max(xs)) + 0.5)
    return lo, hi


@functools.lru_cache(maxsize=64)
def _roofline_templates(domain: tuple[str, ...]) -> tuple[alt.Chart, alt.Chart, alt.Chart]:
    """The three roofline layers without data, built once per set of bottleneck classes.

    Altair's encoding inference is the slow part of a live update, so it is done once.
    """
    x = alt.X(
        "intensity:Q",
        scale=alt.Scale(type="log"),
        title="arithmetic intensity (FLOP/byte, off-chip)",
    )
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="achieved (TFLOP/s)")
    roof = (
        alt.Chart()
        .transform_calculate(tflops="datum.flops_per_s / 1e12")
        .mark_line(color="#555", strokeWidth=1.5)
        .encode(x=x, y=y, strokeDash=alt.StrokeDash("roof:N", title="roof"), detail="roof:N")
    )
    ridge = (
        alt.Chart()
        .transform_calculate(tflops="datum.flops_per_s / 1e12")
        .mark_point(shape="triangle-up", color="#555", size=60)
        .encode(
            x=x,
            y=y,
            tooltip=["roof:N", alt.Tooltip("intensity:Q", title="ridge (FLOP/byte)", format=".4g")],
        )
    )
    tooltip = [
        "kernel:N", "layer_type:N", "tile:N", alt.Tooltip("count:Q", title="identical kernels"),
        alt.Tooltip("time_us:Q", title="time (µs)", format=".4g"),
        alt.Tooltip("tflops:Q", title="achieved (TFLOP/s)", format=".4g"),
        alt.Tooltip("intensity:Q", title="intensity (FLOP/byte)", format=".4g"),
        "bottleneck:N", "expected_bottleneck:N",
    ]  # fmt: skip
    kernels = (
        alt.Chart()
        .transform_calculate(
            tflops="datum.achieved_flops_per_s / 1e12", time_us="datum.time_s * 1e6"
        )
        .mark_circle(size=70, opacity=0.8)
        .encode(
            x=x,
            y=y,
            color=alt.Color("bottleneck:N", scale=bottleneck_colour(list(domain)),
                            title="bottleneck"),
            tooltip=tooltip,
        )
    )  # fmt: skip
    return roof, ridge, kernels


def roofline(mapping: ModelMapping, levels: Sequence[str] | None = None) -> alt.LayerChart:
    """Roofline chart of ``mapping``: roofs per memory level and every kernel as a point.

    Args:
        mapping: The mapped model.
        levels: Memory level names to draw roofs for; default every level from the SRAM out.

    Returns:
        A log-log layered chart: grey roof lines (dash per level), ridge markers, and kernel
        points coloured by bottleneck class (y axis in TFLOP/s; tooltips carry the sheet row).
        Kernels of identical layers sit on one point, so they are merged into one data row
        whose ``count`` says how many (this keeps the spec small for live updates).
    """
    points = roofline_points(mapping, grouped=True)
    hw = mapping.hardware
    ridges = [
        mapping.peak_flops / hw.level(n).bandwidth_bytes_per_s for n in _levels(mapping, levels)
    ]
    roofs = roofline_roofs(mapping, levels, _x_range(points, ridges) if points else (1e-2, 1e4))
    domain = tuple(sorted({p["bottleneck"] for p in points}))
    roof_t, ridge_t, kernels_t = _roofline_templates(domain)
    roof = with_values(roof_t, roofs)
    ridge = with_values(ridge_t, [r for r in roofs if r["ridge"]])
    kernels = with_values(kernels_t, points)
    meta = mapping.graph.meta_dict()
    length = (
        f"context {meta.get('context')}" if meta.get("phase") == "decode"
        else f"seq {meta['seq']}" if meta.get("seq") else ""
    )  # fmt: skip
    title = alt.Title(
        f"Roofline: {mapping.graph.name} on {hw.name}",
        subtitle=f"{meta.get('phase', '')} batch {meta.get('batch', '')} {length} "
        f"{mapping.dtype}; {sum(p['count'] for p in points)} of {len(mapping.kernels)} kernels"
        " have FLOPs and off-chip bytes",
    )
    return alt.LayerChart(layer=[roof, ridge, kernels], title=title, width=520, height=340)
