"""The bandwidth lens as a table and a static SVG, for pages that load no chart library.

The same reading as :func:`workbench.report.charts.bandwidth_lens_points` (pressure = achieved
off-chip bandwidth over the level's peak; readings by
:func:`workbench.report._lens_rule.lens_label` without a serving replay: baseline,
``saturated`` or ``headroom left``), computed here so the review pack needs neither Altair
nor the Vega JavaScript (together about 8 s of start-up on 2 cores).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench._format import fmt_percent, fmt_si
from workbench.mapper import ModelMapping
from workbench.report._html import Html, each
from workbench.report._lens_rule import lens_label

__all__ = ["SATURATION", "lens_rows", "lens_svg"]

#: Pressure (achieved / peak bandwidth) where the saturation band starts.
SATURATION = 0.8


def lens_rows(variants: Sequence[tuple[str, ModelMapping]]) -> list[dict[str, Any]]:
    """One row per variant: step time, off-chip bytes, achieved bandwidth, pressure, reading.

    Returns:
        Rows ``{variant, time_s, moved, achieved, pressure, reading, p}`` (``p`` the pressure
        as a fraction for drawing; the others display text or seconds).
    """
    rows = []
    for i, (name, m) in enumerate(variants):
        level = m.hardware.offchip
        moved = m.total.bytes_at(level.name)
        achieved = moved / m.time_s if m.time_s else 0.0
        p = achieved / level.bandwidth_bytes_per_s
        reading = lens_label(i, p, SATURATION, None)
        rows.append(
            {
                "variant": name,
                "time_s": m.time_s,
                "moved": fmt_si(moved, "B"),
                "achieved": f"{fmt_si(achieved, 'B/s')} at {level.name}",
                "pressure": fmt_percent(p),
                "reading": reading,
                "p": p,
            }
        )
    return rows


_LENS_HEAD = (
    '<svg xmlns="http://www.w3.org/2000/svg" class="wb-timeline" viewBox="0 0 {width} {h}" '
    'width="{width}" height="{h}" role="img" aria-label="bandwidth lens">'
    '<rect x="{band_x:.1f}" y="10" width="{band_w:.1f}" height="{band_h}" fill="#d62728" '
    'fill-opacity="0.12"><title>saturation band: {saturation} of peak and above</title></rect>'
)
_LENS_ROW = (
    '<text x="{tx}" y="{ty}" font-size="11" text-anchor="end">{short}<title>{variant}</title>'
    '</text><rect x="{label}" y="{ry}" width="{w:.1f}" height="{rh}" fill="{colour}">'
    '<title>{reading}</title></rect><text x="{px:.1f}" y="{ty}" font-size="11">{pressure} of '
    "peak</text>"
)


def lens_svg(rows: Sequence[dict[str, Any]]) -> Html:
    """Horizontal bars of pressure per variant with the saturation band shaded (escaped)."""
    width, label, row_h = 900, 260, 20
    top = max(1.0, max((r["p"] for r in rows), default=0.0))
    scale = (width - label - 60) / top
    h = 20 + row_h * len(rows) + 10
    head = Html(_LENS_HEAD).format(
        width=width, h=h, band_x=label + SATURATION * scale, band_w=(top - SATURATION) * scale,
        band_h=row_h * len(rows), saturation=fmt_percent(SATURATION),
    )  # fmt: skip
    bars = []
    for i, r in enumerate(rows):
        y = 10 + i * row_h
        colour = {"baseline behaviour": "#1f77b4", "saturated": "#ff7f0e"}.get(
            r["reading"], "#2ca02c"
        )
        bar = Html(_LENS_ROW).format(
            tx=label - 6, ty=y + 14, short=r["variant"][:40], variant=r["variant"],
            label=label, ry=y + 3, w=max(r["p"] * scale, 0.8), rh=row_h - 6, colour=colour,
            reading=r["reading"], px=label + r["p"] * scale + 4, pressure=r["pressure"],
        )  # fmt: skip
        bars.append(bar)
    return Html("{}{}</svg>").format(head, each("{}", bars))
