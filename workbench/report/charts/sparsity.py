"""Cycles and energy against density for dense, gated and skipped designs (sparsity lesson)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from workbench.errors import WorkbenchError

__all__ = ["DESIGN_ORDER", "sparsity_chart"]

#: The designs, in legend order.
DESIGN_ORDER = ("dense", "gating", "skipping")


def _panel(data: alt.Data, field: str, title: str, rule: alt.Chart) -> Any:
    lines = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=18))
        .encode(
            x=alt.X("density:Q", title="weight density", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y(f"{field}:Q", title=title, axis=alt.Axis(tickCount=5, format="~s")),
            color=alt.Color("design:N", scale=alt.Scale(domain=list(DESIGN_ORDER)), title="design"),
            tooltip=["design:N", "density:Q", alt.Tooltip(f"{field}:Q", format=".4g")],
        )
    )
    return alt.layer(lines, rule).properties(width=200, height=160)


def sparsity_chart(
    rows: Sequence[dict[str, Any]], *, density: float, title: str = ""
) -> alt.HConcatChart:
    """Two panels side by side: cycles and energy (nJ) per design over density.

    Args:
        rows: Dicts ``{density, design, cycles, energy_nj}`` (density in (0, 1], cycles and
            nanojoules finite and >= 0, design in :data:`DESIGN_ORDER`).
        density: The density marked by a vertical rule (the widget's slider).
        title: Chart title.

    Returns:
        An Altair chart about 480 px wide (fits a notebook cell from 1,024 px up).

    Raises:
        WorkbenchError: No rows, an unknown design, or a negative or non-finite value.
    """
    if not rows:
        raise WorkbenchError("sparsity chart: no rows")
    for r in rows:
        if r["design"] not in DESIGN_ORDER:
            raise WorkbenchError(f"sparsity chart: design {r['design']!r}")
        for key in ("cycles", "energy_nj", "density"):
            v = r[key]
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise WorkbenchError(f"sparsity chart: {r['design']} {key} {v!r}")
    if not (math.isfinite(density) and 0 < density <= 1):
        raise WorkbenchError(f"sparsity chart: density {density!r} must be in (0, 1]")
    data = alt.Data(values=list(rows))
    rule = (
        alt.Chart(alt.Data(values=[{"density": density}]))
        .mark_rule(strokeDash=[4, 3], color="gray")
        .encode(x="density:Q")
    )
    return alt.hconcat(
        _panel(data, "cycles", "cycles (slowest PE)", rule),
        _panel(data, "energy_nj", "energy per layer (nJ)", rule),
    ).properties(title=title)
