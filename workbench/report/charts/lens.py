"""The bandwidth lens: memory-level pressure across a sequence of optimization variants.

Each variant (baseline, fusion on, tile tuned ...) is placed at its pressure at one memory
level: achieved bandwidth over the level's peak, or over its sustained rate. Readings come from
the data (:mod:`workbench.report._lens_rule`): the baseline, ``unstable tail latency`` only
where a serving replay saw it, ``saturated`` in the band (a byte-preserving change has at most
``1 / pressure`` left), ``headroom left`` below it.

When the caller ran the serving simulation, it passes the variants whose p99 went unstable
(``unstable=...``): those, and only those, get the ``unstable tail latency`` label, so the
label says what the simulation saw rather than what the pressure suggests. Pressure is achieved
bandwidth over the level's peak, or over its sustained rate (``against="sustained"``, what a
well-tuned kernel reaches). :func:`bandwidth_lens_layer_points` gives the same per layer type.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import altair as alt

from workbench.errors import WorkbenchError
from workbench.mapper import ModelMapping
from workbench.report._lens_rule import LENS_LABELS, lens_label

__all__ = ["LENS_LABELS", "bandwidth_lens", "bandwidth_lens_layer_points", "bandwidth_lens_points"]


def _rate(mapping: ModelMapping, level: str, against: str) -> float:
    if against not in ("peak", "sustained"):
        raise WorkbenchError(f"bandwidth lens: against={against!r} (use 'peak' or 'sustained')")
    lvl = mapping.hardware.level(level)
    return lvl.bandwidth_bytes_per_s if against == "peak" else lvl.sustained_bytes_per_s


def _pressure(mapping: ModelMapping, level: str, against: str = "peak") -> dict[str, float]:
    lvl = mapping.hardware.level(level)
    moved = mapping.total.bytes_at(level)
    achieved = moved / mapping.time_s if mapping.time_s else 0.0
    return {
        "bytes": moved,
        "achieved_bytes_per_s": achieved,
        "peak_bytes_per_s": lvl.bandwidth_bytes_per_s,
        "pressure": achieved / _rate(mapping, level, against),
        "stall_fraction": mapping.total.stall_s / mapping.time_s if mapping.time_s else 0.0,
        "time_s": mapping.time_s,
    }


def bandwidth_lens_points(
    variants: Sequence[tuple[str, ModelMapping]],
    level: str | None = None,
    saturation: float = 0.8,
    *,
    against: str = "peak",
    unstable: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The lens's data: one row per variant with its pressure and label.

    Args:
        variants: ``(name, mapping)`` pairs in optimization order (the first is the baseline).
        level: Memory level name; default the first mapping's off-chip level.
        saturation: Pressure (achieved / peak bandwidth, 0..1) where the saturation band starts.
        against: ``"peak"`` or ``"sustained"``: the bandwidth pressure is measured against.
        unstable: Variant names whose serving p99 went unstable (from a serving simulation);
            when given, they alone are labelled ``unstable tail latency``.

    Returns:
        Dicts ``{iteration, variant, level, bytes, achieved_bytes_per_s, peak_bytes_per_s,
        pressure, stall_fraction, time_s, saturated, p99_unstable, label}`` (bytes, bytes/s,
        seconds; pressure 0..1; p99_unstable None when ``unstable`` is not given, else whether
        the variant is in it, the baseline included).

    Raises:
        WorkbenchError: No variants, or a saturation outside (0, 1].
    """
    if not variants:
        raise WorkbenchError("bandwidth lens: needs at least one (name, mapping) variant")
    if not 0 < saturation <= 1:
        raise WorkbenchError(f"bandwidth lens: saturation {saturation} must be in (0, 1]")
    name = level or variants[0][1].hardware.offchip.name
    rows = []
    for i, (variant, mapping) in enumerate(variants):
        row: dict[str, Any] = {"iteration": i, "variant": variant, "level": name}
        row.update(_pressure(mapping, name, against))
        row["saturated"] = row["pressure"] >= saturation
        row["p99_unstable"] = None if unstable is None else variant in unstable
        row["label"] = lens_label(i, row["pressure"], saturation, row["p99_unstable"])
        rows.append(row)
    return rows


def bandwidth_lens_layer_points(
    variants: Sequence[tuple[str, ModelMapping]],
    level: str | None = None,
    *,
    against: str = "sustained",
) -> list[dict[str, Any]]:
    """Working-set pressure per layer type: its bytes at ``level`` / (its time x the rate).

    Args:
        variants: ``(name, mapping)`` pairs in optimization order.
        level: Memory level name; default the first mapping's off-chip level.
        against: ``"sustained"`` (default) or ``"peak"`` bandwidth of the level.

    Returns:
        Dicts ``{iteration, variant, level, layer_type, bytes, time_s, pressure}`` (bytes,
        seconds; pressure 0..1, capped at 1).
    """
    if not variants:
        raise WorkbenchError("bandwidth lens: needs at least one (name, mapping) variant")
    name = level or variants[0][1].hardware.offchip.name
    rows = []
    for i, (variant, mapping) in enumerate(variants):
        rate = _rate(mapping, name, against)
        moved: dict[str, float] = {}
        time: dict[str, float] = {}
        for k in mapping.kernels:
            lt = k.kernel.layer_type
            moved[lt] = moved.get(lt, 0.0) + k.cost.bytes_at(name)
            time[lt] = time.get(lt, 0.0) + k.cost.total_s
        for lt, t in time.items():
            p = min(moved[lt] / (t * rate), 1.0) if t else 0.0
            rows.append({"iteration": i, "variant": variant, "level": name, "layer_type": lt,
                         "bytes": moved[lt], "time_s": t, "pressure": p})  # fmt: skip
    return rows


def bandwidth_lens(
    variants: Sequence[tuple[str, ModelMapping]],
    level: str | None = None,
    saturation: float = 0.8,
    *,
    against: str = "peak",
    unstable: Collection[str] | None = None,
    by_layer_type: bool = False,
) -> alt.LayerChart:
    """Bandwidth-lens chart: pressure per variant, the saturation band, labelled points.

    Args:
        variants: ``(name, mapping)`` pairs in optimization order (the first is the baseline).
        level: Memory level name; default the off-chip level.
        saturation: Where the saturation band starts (fraction of the ``against`` bandwidth).
        against: ``"peak"`` or ``"sustained"`` bandwidth as the 100 % line.
        unstable: Variants whose serving p99 went unstable (see :func:`bandwidth_lens_points`).
        by_layer_type: Add a thin line per layer type (:func:`bandwidth_lens_layer_points`).

    Returns:
        A layered chart: a red band from ``saturation`` to the top, a line through the
        variants, points coloured and shaped by label with the reading as a legend (y axis in %
        of the ``against`` bandwidth); with ``unstable``, a red ring on each unstable variant
        (the subtitle says so); with ``by_layer_type``, a thin line per layer type, told apart by
        colour (in the legend) and marker shape (a static copy shows both).
    """
    rows = bandwidth_lens_points(variants, level, saturation, against=against, unstable=unstable)
    lvl = rows[0]["level"]
    top = max(1.0, max(r["pressure"] for r in rows) * 1.05)
    order = [r["variant"] for r in rows]
    offchip = variants[0][1].hardware.offchip.name
    mbu = " = MBU" if lvl == offchip and against == "sustained" else ""  # mapper.mbu's ratio
    x = alt.X("variant:N", sort=order, title="optimization iteration", axis=alt.Axis(labelAngle=0))
    y = alt.Y(
        "pressure_pct:Q",
        title=f"{lvl} pressure{mbu} (% of {against} bandwidth)",
        scale=alt.Scale(domain=[0, top * 100]),
    )
    band = (
        alt.Chart({"values": [{"lo": saturation * 100, "hi": top * 100}]})
        .mark_rect(color="#d62728", opacity=0.12)
        .encode(y="lo:Q", y2="hi:Q")
    )
    base = alt.Chart({"values": rows}).transform_calculate(
        pressure_pct="datum.pressure * 100",
        time_ms="datum.time_s * 1e3",
        achieved_tbps="datum.achieved_bytes_per_s / 1e12",
    )
    line = base.mark_line(color="#888").encode(x=x, y=y)
    tooltip = [
        "variant:N", "label:N",
        alt.Tooltip("pressure_pct:Q", title=f"% of {against} bandwidth", format=".1f"),
        alt.Tooltip("achieved_tbps:Q", title="achieved (TB/s)", format=".3g"),
        alt.Tooltip("time_ms:Q", title="step time (ms)", format=".4g"),
        alt.Tooltip("stall_fraction:Q", title="memory-stall fraction", format=".0%"),
    ]  # fmt: skip
    colour = alt.Color(
        "label:N",
        scale=alt.Scale(
            domain=list(LENS_LABELS), range=["#1f77b4", "#d62728", "#ff7f0e", "#2ca02c"]
        ),
        title="reading",
    )
    shape = alt.Shape(
        "label:N",
        scale=alt.Scale(
            domain=list(LENS_LABELS), range=["circle", "diamond", "triangle-up", "square"]
        ),
        title="reading",
    )
    # NOTE: the reading is a legend (colour and shape), not a text label over each point: six
    # "tuning candidate" labels a step apart overlapped each other and the layer-type lines.
    dots = base.mark_point(size=120, filled=True, opacity=1).encode(
        x=x, y=y, color=colour, shape=shape, tooltip=tooltip
    )
    subtitle = [
        f"band: >= {saturation:.0%} of {against} bandwidth (an assumption): there a change "
        f"that keeps the bytes has at most x{1 / saturation:.3g} left"
    ]
    if unstable is not None:
        subtitle.append("red ring: the serving replay's p99 is unstable at that step")
    title = alt.Title(f"Bandwidth lens: {lvl} pressure across variants", subtitle=subtitle)
    layers: list[Any] = [band, line, dots]
    if unstable is not None:  # a red ring on every unstable variant, the baseline included
        layers.append(
            base.transform_filter("datum.p99_unstable")
            .mark_point(size=420, shape="circle", filled=False, color="#d62728", strokeWidth=2)
            .encode(x=x, y=y)
        )
    if by_layer_type:
        per = bandwidth_lens_layer_points(variants, lvl, against=against)
        layers.insert(1, alt.Chart({"values": per})
                      .transform_calculate(pressure_pct="datum.pressure * 100")
                      .mark_line(strokeWidth=1.2, opacity=0.8, point=alt.OverlayMarkDef(size=24))
                      .encode(x=x, y=y,
                              color=alt.Color("layer_type:N", title="layer type",
                                              scale=alt.Scale(scheme="dark2")),
                              shape=alt.Shape("layer_type:N", legend=None),
                              detail="layer_type:N",
                              tooltip=["variant:N", "layer_type:N",
                                       alt.Tooltip("pressure_pct:Q", format=".1f")]))  # fmt: skip
    chart = alt.LayerChart(layer=layers, title=title, width=420, height=300)
    # NOTE: the layer-type lines and the readings both use colour and shape: separate scales
    # and legends, or Vega-Lite would merge the two domains into one legend.
    return chart.resolve_scale(color="independent", shape="independent").resolve_legend(
        color="independent", shape="independent"
    )
