"""Bar charts of a mapping: time by layer type, time by kernel, fusion traffic, platforms."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import altair as alt

from workbench.errors import WorkbenchError
from workbench.mapper import ModelMapping
from workbench.report.charts._common import byte_unit, group_name, time_unit

__all__ = [
    "TIME_PARTS",
    "fusion_traffic",
    "fusion_traffic_rows",
    "layer_type_bars",
    "layer_type_rows",
    "mbu_by_layer_type",
    "platform_bars",
    "time_by_kernel",
    "time_by_kernel_rows",
]

#: How a kernel's time splits: engine busy, waiting on memory, launch and barrier overhead.
TIME_PARTS = ("compute", "memory stall", "overhead")


def layer_type_rows(mapping: ModelMapping) -> list[dict[str, Any]]:
    """Per layer type and time part, seconds; plus the layer type's MFU and stall fraction.

    Returns:
        Dicts ``{layer_type, part, seconds, mfu, mbu, stall_fraction}``; the parts of one
        layer type sum to its time (``part`` in :data:`TIME_PARTS`). ``memory stall`` is time
        beyond the compute the kernel needs (execution waiting on memory), ``mbu`` the
        off-chip bandwidth utilisation (bytes / (time x sustained bandwidth), 0..1).
    """
    parts: dict[str, list[float]] = {}
    for k in mapping.kernels:
        c = k.cost
        overhead = c.launch_s + c.sync_s
        stall = min(c.stall_s, max(c.total_s - overhead, 0.0))
        acc = parts.setdefault(k.kernel.layer_type, [0.0, 0.0, 0.0])
        acc[0] += max(c.total_s - overhead - stall, 0.0)
        acc[1] += stall
        acc[2] += overhead
    mfu = mapping.mfu_by_layer_type()
    mbu = mbu_by_layer_type(mapping)
    stall_fraction = mapping.stall_fraction_by_layer_type()
    return [
        {
            "layer_type": lt,
            "part": part,
            "seconds": secs[i],
            "mfu": mfu.get(lt, 0.0),
            "mbu": mbu.get(lt, 0.0),
            "stall_fraction": stall_fraction.get(lt, 0.0),
        }
        for lt, secs in parts.items()
        for i, part in enumerate(TIME_PARTS)
    ]


def mbu_by_layer_type(mapping: ModelMapping) -> dict[str, float]:
    """Off-chip bandwidth utilisation per layer type, 0..1 (the decode counterpart of MFU).

    Its off-chip bytes / (its time x the sustained off-chip bandwidth), as
    :attr:`ModelMapping.mbu` for the whole step.
    """
    off = mapping.hardware.offchip
    moved: dict[str, float] = {}
    time: dict[str, float] = {}
    for k in mapping.kernels:
        lt = k.kernel.layer_type
        moved[lt] = moved.get(lt, 0.0) + k.cost.bytes_at(off.name)
        time[lt] = time.get(lt, 0.0) + k.cost.total_s
    bw = off.sustained_bytes_per_s
    return {lt: (min(moved[lt] / (t * bw), 1.0) if t else 0.0) for lt, t in time.items()}


def layer_type_bars(mapping: ModelMapping) -> alt.HConcatChart:
    """Time by layer type split into compute / memory stall / overhead, beside MFU per type.

    Returns:
        Two horizontal bar charts side by side: stacked time (display unit chosen from the
        largest layer type) and model-FLOPs utilisation (%) per layer type.
    """
    rows = layer_type_rows(mapping)
    totals: dict[str, float] = {}
    for r in rows:
        totals[r["layer_type"]] = totals.get(r["layer_type"], 0.0) + r["seconds"]
    factor, unit = time_unit(max(totals.values(), default=0.0))
    order = sorted(totals, key=totals.__getitem__, reverse=True)
    y = alt.Y("layer_type:N", sort=order, title="layer type")
    data = {"values": rows}
    stacked = (
        alt.Chart(data)
        .transform_calculate(shown=f"datum.seconds * {factor}")
        .mark_bar()
        .encode(
            x=alt.X("shown:Q", stack="zero", title=f"time per step ({unit})"),
            y=y,
            color=alt.Color(
                "part:N",
                scale=alt.Scale(domain=list(TIME_PARTS), range=["#2ca02c", "#1f77b4", "#7f7f7f"]),
                title="time part",
                legend=alt.Legend(orient="bottom", direction="vertical"),
            ),
            order=alt.Order("part_order:Q"),
            tooltip=[
                "layer_type:N",
                "part:N",
                alt.Tooltip("shown:Q", title=f"time ({unit})", format=".4g"),
                alt.Tooltip("stall_fraction:Q", title="memory-stall fraction", format=".0%"),
            ],
        )
        .transform_calculate(part_order=f"indexof({list(TIME_PARTS)!r}, datum.part)")
        .properties(width=220, height=30 * max(len(order), 2), title="Time by layer type")
    )
    util = (
        alt.Chart(data)
        .transform_filter(f"datum.part == '{TIME_PARTS[0]}'")
        .transform_fold(["mfu", "mbu"], as_=["metric", "value"])
        .transform_calculate(
            pct="datum.value * 100",
            label="datum.metric == 'mfu' ? 'MFU (compute)' : 'MBU (off-chip bandwidth)'",
        )
        .mark_bar()
        .encode(
            x=alt.X("pct:Q", title="utilisation (% of peak)", scale=alt.Scale(domain=[0, 100])),
            y=alt.Y("layer_type:N", sort=order, title=None),
            yOffset=alt.YOffset("label:N"),
            color=alt.Color(
                "label:N",
                scale=alt.Scale(
                    domain=["MFU (compute)", "MBU (off-chip bandwidth)"],
                    range=["#9467bd", "#1f77b4"],
                ),
                title="utilisation",
                legend=alt.Legend(orient="bottom", direction="vertical"),
            ),
            tooltip=["layer_type:N", "label:N", alt.Tooltip("pct:Q", title="%", format=".1f")],
        )
        .properties(width=160, height=30 * max(len(order), 2), title="Utilisation by layer type")
    )
    return alt.hconcat(stacked, util).resolve_scale(color="independent")


def time_by_kernel_rows(mapping: ModelMapping, top: int = 20) -> list[dict[str, Any]]:
    """Time per kernel group (identical layers summed), largest first, the rest as ``other``.

    Args:
        mapping: The mapped model.
        top: Groups kept; the remainder is summed into one ``other (N kernels)`` row.

    Returns:
        Dicts ``{group, seconds, count, layer_type, bottleneck, share}`` (seconds summed over
        the group's ``count`` kernels; share of the step time 0..1).
    """
    groups: dict[str, dict[str, Any]] = {}
    for k in mapping.kernels:
        g = group_name(k.kernel.name)
        row = groups.setdefault(
            g,
            {"group": g, "seconds": 0.0, "count": 0, "layer_type": k.kernel.layer_type,
             "bottleneck": k.cost.bottleneck},
        )  # fmt: skip
        row["seconds"] += k.cost.total_s
        row["count"] += 1
    if mapping.step_overhead_s > 0:
        # NOTE: the serving step's runtime cost outside its kernels is part of the step time.
        groups["runtime.step"] = {
            "group": "runtime.step",
            "seconds": mapping.step_overhead_s,
            "count": 1,
            "layer_type": "runtime",
            "bottleneck": "overhead",
        }
    ranked = sorted(groups.values(), key=lambda r: r["seconds"], reverse=True)
    kept, rest = ranked[:top], ranked[top:]
    if rest:
        n = sum(r["count"] for r in rest)
        kept.append(
            {"group": f"other ({n} kernels)", "seconds": sum(r["seconds"] for r in rest),
             "count": n, "layer_type": "other", "bottleneck": "mixed"}
        )  # fmt: skip
    total = mapping.time_s or 1.0
    for r in kept:
        r["share"] = r["seconds"] / total
    return kept


def time_by_kernel(mapping: ModelMapping, top: int = 20) -> alt.Chart:
    """Sorted horizontal bars of time per kernel group (identical layers grouped).

    Returns:
        A bar chart, longest first, coloured by layer type; labels show ``xN`` kernels.
    """
    rows = time_by_kernel_rows(mapping, top)
    factor, unit = time_unit(max((r["seconds"] for r in rows), default=0.0))
    return (
        alt.Chart({"values": rows})
        .transform_calculate(shown=f"datum.seconds * {factor}", share_pct="datum.share * 100")
        .mark_bar()
        .encode(
            x=alt.X("shown:Q", title=f"time per step ({unit})"),
            y=alt.Y("group:N", sort="-x", title="kernel (layer index as *)"),
            color=alt.Color("layer_type:N", title="layer type"),
            tooltip=[
                "group:N",
                alt.Tooltip("count:Q", title="kernels"),
                alt.Tooltip("shown:Q", title=f"time ({unit})", format=".4g"),
                alt.Tooltip("share_pct:Q", title="% of step", format=".1f"),
                "bottleneck:N",
            ],
        )
        .properties(width=420, height=18 * max(len(rows), 2), title="Time by kernel")
    )


def fusion_traffic_rows(before: ModelMapping, after: ModelMapping) -> list[dict[str, Any]]:
    """Off-chip bytes per layer type, before and after fusion.

    Returns:
        Dicts ``{layer_type, variant ("before"|"after"), bytes, kernels}``.
    """
    rows = []
    for variant, mapping in (("before", before), ("after", after)):
        off = mapping.hardware.offchip.name
        per: dict[str, list[float]] = {}
        for k in mapping.kernels:
            acc = per.setdefault(k.kernel.layer_type, [0.0, 0])
            acc[0] += k.cost.bytes_at(off)
            acc[1] += 1
        rows += [
            {"layer_type": lt, "variant": variant, "bytes": b, "kernels": int(n)}
            for lt, (b, n) in per.items()
        ]
    return rows


def fusion_traffic(before: ModelMapping, after: ModelMapping) -> alt.Chart:
    """Grouped bars: off-chip bytes per layer type before and after fusion.

    Returns:
        A bar chart (bytes in a decimal display unit) with ``before``/``after`` side by side.
    """
    rows = fusion_traffic_rows(before, after)
    div, unit = byte_unit(max((r["bytes"] for r in rows), default=0.0))
    off = after.hardware.offchip.name
    return (
        alt.Chart({"values": rows})
        .transform_calculate(shown=f"datum.bytes / {div}")
        .mark_bar()
        .encode(
            x=alt.X("layer_type:N", title="layer type", axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("variant:N", sort=["before", "after"]),
            y=alt.Y("shown:Q", title=f"{off} traffic per step ({unit})"),
            color=alt.Color(
                "variant:N",
                sort=["before", "after"],
                scale=alt.Scale(range=["#ff7f0e", "#1f77b4"]),
                title="fusion",
            ),
            tooltip=[
                "layer_type:N",
                "variant:N",
                alt.Tooltip("shown:Q", title=f"{off} ({unit})", format=".4g"),
                alt.Tooltip("kernels:Q", title="kernels"),
            ],
        )
        .properties(width=360, height=260, title=f"Off-chip ({off}) traffic before/after fusion")
    )


def platform_bars(rows: Iterable[Mapping[str, Any]]) -> alt.FacetChart:
    """Bars comparing platforms, one panel per metric (independent axes).

    Args:
        rows: Dicts with ``platform``, ``metric`` and ``value`` (optionally ``unit``, shown
            in the panel header). Values are plotted as given.

    Returns:
        A faceted bar chart, one row of bars per metric.

    Raises:
        WorkbenchError: A row lacks ``platform``, ``metric`` or ``value``.
    """
    data = []
    for i, r in enumerate(rows):
        missing = [f for f in ("platform", "metric", "value") if f not in r]
        if missing:
            raise WorkbenchError(f"platform_bars: row {i} lacks {', '.join(missing)}")
        unit = r.get("unit")
        metric = f"{r['metric']} ({unit})" if unit else str(r["metric"])
        data.append({"platform": str(r["platform"]), "metric": metric, "value": float(r["value"])})
    return (
        alt.Chart({"values": data})
        .mark_bar()
        .encode(
            x=alt.X("value:Q", title=None),
            y=alt.Y("platform:N", title=None),
            color=alt.Color("platform:N", legend=None),
            tooltip=["platform:N", "metric:N", alt.Tooltip("value:Q", format=".4g")],
        )
        .properties(width=300, height=alt.Step(18))
        .facet(
            row=alt.Facet(
                "metric:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")
            )
        )
        .resolve_scale(x="independent")
        .properties(title="Platform comparison")
    )
