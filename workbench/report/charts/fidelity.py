"""Predicted vs measured for the published-measurement corpus (``workbench validate --published``).

Log-log: each row at (measured, predicted) in its own unit, the line y = x and a +-15% band (the
issue's held-out goal), colour by category, shape by split, tooltips with the source.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from workbench.fidelity import CATEGORIES, CorpusReport

__all__ = ["BAND", "fidelity_chart", "fidelity_points"]

#: Half-width of the shaded band around y = x (relative error).
BAND = 0.15


def fidelity_points(report: CorpusReport) -> list[dict[str, Any]]:
    """One dict per row: id, category, split, hardware, unit, measured, predicted, error, source.

    Values are in the row's published unit (the chart is log-log, so units only need to agree
    within a row).
    """
    return [
        {
            "id": r.id,
            "category": r.category,
            "split": r.split,
            "hardware": r.hardware,
            "unit": r.unit,
            "measured": r.measured,
            "predicted": r.predicted,
            "error": r.error,
            "predicted_bottleneck": r.predicted_bottleneck,
            "expected_bottleneck": r.expected_bottleneck,
            "source": r.source,
        }
        for r in report.rows
    ]


def fidelity_chart(report: CorpusReport, *, width: int = 520, height: int = 420) -> Any:
    """Predicted vs measured, log-log, with y = x and a +-15% band.

    Args:
        report: The corpus run (:func:`workbench.fidelity.run_corpus`).
        width: Chart width, pixels.
        height: Chart height, pixels.

    Returns:
        An Altair layer chart (band, diagonal, points).
    """
    points = fidelity_points(report)
    values = [p[k] for p in points for k in ("measured", "predicted")]
    lo, hi = (min(values) / 1.5, max(values) * 1.5) if values else (0.1, 10.0)
    line = [{"x": lo, "y": lo, "lo": lo * (1 - BAND), "hi": lo * (1 + BAND)}]
    line.append({"x": hi, "y": hi, "lo": hi * (1 - BAND), "hi": hi * (1 + BAND)})
    scale = alt.Scale(type="log", domain=[lo, hi])
    x = alt.X("x:Q", scale=scale, title="measured (published unit)")
    band = (
        alt.Chart(alt.Data(values=line))
        .mark_area(opacity=0.15, color="#888888")
        .encode(x=x, y=alt.Y("lo:Q", scale=scale), y2="hi:Q")
    )
    diagonal = (
        alt.Chart(alt.Data(values=line))
        .mark_line(color="#444444", strokeDash=[4, 3])
        .encode(x=x, y=alt.Y("y:Q", scale=scale))
    )
    dots = (
        alt.Chart(alt.Data(values=points))
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("measured:Q", scale=scale, title="measured (published unit)"),
            y=alt.Y("predicted:Q", scale=scale, title="predicted (same unit)"),
            color=alt.Color("category:N", scale=alt.Scale(domain=list(CATEGORIES))),
            shape=alt.Shape("split:N", scale=alt.Scale(domain=["calibration", "heldout"])),
            tooltip=[
                alt.Tooltip("id:N"),
                alt.Tooltip("hardware:N"),
                alt.Tooltip("unit:N"),
                alt.Tooltip("measured:Q", format=".4g"),
                alt.Tooltip("predicted:Q", format=".4g"),
                alt.Tooltip("error:Q", format="+.1%"),
                alt.Tooltip("predicted_bottleneck:N"),
                alt.Tooltip("source:N"),
            ],
        )
    )
    title = f"Published measurements: predicted vs measured (band: +-{BAND:.0%})"
    return alt.layer(band, diagonal, dots).properties(width=width, height=height, title=title)
