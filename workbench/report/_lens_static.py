"""The bandwidth lens as a table and a static SVG, for pages that load no chart library.

The same reading as :func:`workbench.report.charts.bandwidth_lens_points` (pressure = achieved
off-chip bandwidth over the level's peak; readings by
:func:`workbench.report._lens_rule.lens_label` without a serving replay: baseline,
``saturated`` or ``headroom left``), computed here so the review pack needs neither Altair
nor the Vega JavaScript (together about 8 s of start-up on 2 cores).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from workbench._format import fmt_percent, fmt_si
from workbench.mapper import ModelMapping
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


def lens_svg(rows: Sequence[dict[str, Any]]) -> str:
    """Horizontal bars of pressure per variant with the saturation band shaded (escaped)."""
    width, label, row_h = 900, 260, 20
    top = max(1.0, max((r["p"] for r in rows), default=0.0))
    scale = (width - label - 60) / top
    h = 20 + row_h * len(rows) + 10
    band_x = label + SATURATION * scale
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="wb-timeline" viewBox="0 0 {width} {h}" '
        f'width="{width}" height="{h}" role="img" aria-label="bandwidth lens">',
        f'<rect x="{band_x:.1f}" y="10" width="{(top - SATURATION) * scale:.1f}" '
        f'height="{row_h * len(rows)}" fill="#d62728" fill-opacity="0.12">'
        f"<title>saturation band: {fmt_percent(SATURATION)} of peak and above</title></rect>",
    ]
    for i, r in enumerate(rows):
        y = 10 + i * row_h
        colour = {"baseline behaviour": "#1f77b4", "saturated": "#ff7f0e"}.get(
            r["reading"], "#2ca02c"
        )
        parts.append(
            f'<text x="{label - 6}" y="{y + 14}" font-size="11" text-anchor="end">'
            f"{html.escape(r['variant'][:40])}<title>{html.escape(r['variant'])}</title></text>"
            f'<rect x="{label}" y="{y + 3}" width="{max(r["p"] * scale, 0.8):.1f}" '
            f'height="{row_h - 6}" fill="{colour}"><title>{html.escape(r["reading"])}</title>'
            f'</rect><text x="{label + r["p"] * scale + 4:.1f}" y="{y + 14}" font-size="11">'
            f"{html.escape(r['pressure'])} of peak</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
