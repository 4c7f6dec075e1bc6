"""The hierarchical roofline: every kernel against the hardware's roof at each memory level.

Attainable FLOP/s at arithmetic intensity ``I`` (FLOP per byte) for a level with bandwidth ``B``
is ``min(peak, B x I)``; the ridge ``peak / B`` is where the slope meets the compute roof
(Williams, Waterman & Patterson, CACM 2009). A kernel has one intensity per memory level, its
FLOPs over the bytes it moves at that level, so it is drawn once per level (one marker shape per
level kind) against that level's roof, as Nsight Compute's hierarchical roofline does: a kernel
bound by L2 sits on the L2 roof, not the HBM one. Roof line styles are fixed per level kind.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from workbench.mapper import ModelMapping
from workbench.report.charts._common import bottleneck_colour, group_name, with_values
from workbench.report.sheet import sheet_rows

__all__ = ["LEVEL_DASH", "LEVEL_SHAPE", "hierarchical_points", "roofline", "roofline_points",
           "roofline_roofs"]  # fmt: skip

#: Roof line dash per level kind (fixed, so a level keeps its style whatever else is drawn).
LEVEL_DASH = {
    "compute": [1, 0],
    "dram": [8, 3],
    "cache": [4, 3],
    "sram": [1, 3],
    "register": [8, 2, 1, 2],
}
#: Kernel marker shape per level kind.
LEVEL_SHAPE = {
    "dram": "circle",
    "cache": "square",
    "sram": "diamond",
    "register": "cross",
}

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


def hierarchical_points(
    mapping: ModelMapping, levels: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Each kernel's point at each memory level: FLOPs over its bytes at that level.

    Args:
        mapping: The mapped model.
        levels: Memory level names; default every level from the SRAM outwards.

    Returns:
        The grouped :func:`roofline_points` rows, one per (kernel group, level the kernel moves
        bytes at), with ``level``, ``level_kind`` and ``intensity`` (FLOP/byte at that level)
        added; ``achieved_flops_per_s`` is the same at every level.
    """
    hw = mapping.hardware
    names = _levels(mapping, levels)
    by_name = {k.kernel.name: k for k in mapping.kernels}
    out = []
    for p in roofline_points(mapping, grouped=True):
        cost = by_name[p["kernel"]].cost
        for name in names:
            moved = cost.bytes_at(name)
            if moved > 0 and p["flops"]:
                kind = hw.level(name).kind
                out.append({**p, "level": name, "level_kind": kind,
                            "intensity": p["flops"] / moved})  # fmt: skip
    return out


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


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
        Dicts ``{roof, level, kind, intensity, flops_per_s, ridge}``: three points per level
        (start, ridge, end; ``ridge`` is True at the ridge) and two for the compute roof
        (``kind`` is the level kind, or ``compute``). Integer formats are labelled TOPS.
    """
    hw = mapping.hardware
    peak = mapping.peak_flops
    lo, hi = x_range
    rows: list[dict[str, Any]] = []
    for name in _levels(mapping, levels):
        bw = hw.level(name).bandwidth_bytes_per_s
        ridge = peak / bw
        kind = hw.level(name).kind
        label = f"{name} {bw / 1e12:.3g} TB/s"
        for x, is_ridge in ((min(lo, ridge), False), (ridge, True), (max(hi, ridge), False)):
            y = min(peak, bw * x)
            rows.append({"roof": label, "level": name, "kind": kind, "intensity": x,
                         "flops_per_s": y, "ridge": is_ridge})  # fmt: skip
    unit = "TOPS" if _is_int(mapping.dtype) else "TFLOP/s"
    label = f"{mapping.dtype} peak {peak / 1e12:.4g} {unit}"
    for x in (lo, hi):
        rows.append({"roof": label, "level": "compute", "kind": "compute", "intensity": x,
                     "flops_per_s": peak, "ridge": False})  # fmt: skip
    return rows


def _x_range(points: list[dict[str, Any]], ridges: list[float]) -> tuple[float, float]:
    xs = [p["intensity"] for p in points] + ridges
    lo = 10 ** math.floor(math.log10(min(xs)) - 0.5)
    hi = 10 ** math.ceil(math.log10(max(xs)) + 0.5)
    return lo, hi


def _legend_labels(names: tuple[tuple[str, str], ...]) -> str:
    """A Vega label expression naming each level kind by the profile's levels: ``dram (hbm)``."""
    cases = ", ".join(f"{json.dumps(k)}: {json.dumps(f'{k} ({n})' if n != k else k)}"
                      for k, n in names)  # fmt: skip
    return f"({{{cases}}})[datum.label] || datum.label"


@functools.lru_cache(maxsize=64)
def _roofline_templates(
    domain: tuple[str, ...],
    kinds: tuple[str, ...],
    unit: str,
    names: tuple[tuple[str, str], ...] = (),
) -> tuple[alt.Chart, alt.Chart, alt.Chart]:
    """The three roofline layers without data, built once per (classes, level kinds, unit).

    Altair's encoding inference is the slow part of a live update, so it is done once.
    ``names`` pairs each level kind with the profile's own level names, so the legends say
    ``hbm`` where the profile does (the kind stays the key that fixes dash and shape).
    """
    label = _legend_labels(names)
    x = alt.X(
        "intensity:Q",
        scale=alt.Scale(type="log"),
        title="arithmetic intensity (FLOP/byte at each memory level)",
    )
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title=f"achieved ({unit})")
    roof_kinds = ["compute", *kinds]
    dash = alt.StrokeDash(
        "kind:N",
        title="roof",
        scale=alt.Scale(domain=roof_kinds, range=[LEVEL_DASH[k] for k in roof_kinds]),
        legend=alt.Legend(orient="bottom", direction="vertical", labelExpr=label),
    )
    roof = (
        alt.Chart()
        .transform_calculate(tflops="datum.flops_per_s / 1e12")
        .mark_line(color="#555", strokeWidth=1.5)
        .encode(x=x, y=y, strokeDash=dash, detail="roof:N",
                tooltip=["roof:N"])
    )  # fmt: skip
    ridge = (
        alt.Chart()
        .transform_calculate(tflops="datum.flops_per_s / 1e12")
        .mark_point(shape="triangle-down", color="#555", size=50)
        .encode(
            x=x,
            y=y,
            tooltip=["roof:N", alt.Tooltip("intensity:Q", title="ridge (FLOP/byte)", format=".4g")],
        )
    )
    tooltip = [
        "kernel:N", "layer_type:N", "level:N", "tile:N",
        alt.Tooltip("count:Q", title="identical kernels"),
        alt.Tooltip("time_us:Q", title="time (µs)", format=".4g"),
        alt.Tooltip("tflops:Q", title=f"achieved ({unit})", format=".4g"),
        alt.Tooltip("intensity:Q", title="intensity at this level (FLOP/byte)", format=".4g"),
        "bottleneck:N", "expected_bottleneck:N",
    ]  # fmt: skip
    kernels = (
        alt.Chart()
        .transform_calculate(
            tflops="datum.achieved_flops_per_s / 1e12", time_us="datum.time_s * 1e6"
        )
        .mark_point(size=60, opacity=0.85, filled=True)
        .encode(
            x=x,
            y=y,
            color=alt.Color("bottleneck:N", scale=bottleneck_colour(list(domain)),
                            title="bottleneck",
                            legend=alt.Legend(orient="bottom", direction="vertical")),
            shape=alt.Shape("level_kind:N", title="bytes at",
                            scale=alt.Scale(domain=list(kinds),
                                            range=[LEVEL_SHAPE[k] for k in kinds]),
                            legend=alt.Legend(orient="bottom", direction="vertical",
                                              labelExpr=label)),
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
        A log-log layered chart: grey roof lines (dash fixed per level kind), ridge markers, and
        each kernel once per memory level (:func:`hierarchical_points`; shape per level kind,
        colour per bottleneck class; y in TFLOP/s, TOPS for integer formats; tooltips carry the
        sheet row). Kernels of identical layers are merged into one data row whose ``count``
        says how many (this keeps the spec small for live updates).
    """
    points = hierarchical_points(mapping, levels)
    hw = mapping.hardware
    names = _levels(mapping, levels)
    ridges = [mapping.peak_flops / hw.level(n).bandwidth_bytes_per_s for n in names]
    roofs = roofline_roofs(mapping, levels, _x_range(points, ridges) if points else (1e-2, 1e4))
    domain = tuple(sorted({p["bottleneck"] for p in points}))
    kinds = tuple(k for k in LEVEL_SHAPE if k in {hw.level(n).kind for n in names})
    unit = "TOPS" if _is_int(mapping.dtype) else "TFLOP/s"
    level_names = tuple((k, ", ".join(n for n in names if hw.level(n).kind == k)) for k in kinds)
    roof_t, ridge_t, kernels_t = _roofline_templates(domain, kinds, unit, level_names)
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
        subtitle=[
            f"{meta.get('phase', '')} batch {meta.get('batch', '')} {length} {mapping.dtype}",
            "each kernel once per memory level it moves bytes at",
        ],
    )
    return alt.LayerChart(layer=[roof, ridge, kernels], title=title, width=380, height=300)
