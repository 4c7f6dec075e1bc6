"""Energy of a layer by memory level, one stacked bar per dataflow (spatial-accelerator lesson)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from workbench.errors import WorkbenchError

__all__ = ["LEVEL_ORDER", "energy_by_level_chart"]

#: Stack order, innermost first; MAC is the arithmetic itself.
LEVEL_ORDER = ("mac", "spad", "noc", "glb", "dram")


def energy_by_level_chart(
    rows: Sequence[dict[str, Any]], *, highlight: str | None = None, title: str = ""
) -> alt.Chart:
    """Stacked horizontal bars: energy per dataflow split by level.

    Args:
        rows: Dicts ``{dataflow, level, energy_uj}`` (microjoules, >= 0; level in
            :data:`LEVEL_ORDER`).
        highlight: A dataflow drawn at full opacity (the others faded), or None.
        title: Chart title.

    Returns:
        An Altair chart 420 px wide (fits a notebook cell from 1,024 px up).

    Raises:
        WorkbenchError: No rows, or a negative or non-finite energy.
    """
    if not rows:
        raise WorkbenchError("energy chart: no rows")
    for r in rows:
        e = r["energy_uj"]
        if not (e >= 0 and e != float("inf")):
            raise WorkbenchError(f"energy chart: {r['dataflow']}/{r['level']} energy {e} uJ")
    opacity: Any = alt.value(1.0)
    if highlight is not None:
        opacity = alt.condition(alt.datum.dataflow == highlight, alt.value(1.0), alt.value(0.35))
    return (
        alt.Chart({"values": list(rows)})
        .transform_calculate(order=f"indexof({list(LEVEL_ORDER)!r}, datum.level)")
        .mark_bar()
        .encode(
            # dataflows in the order the rows give them (the table's), not alphabetical
            y=alt.Y(
                "dataflow:N", title=None, sort=list(dict.fromkeys(r["dataflow"] for r in rows))
            ),
            # few, short ticks: long labels such as "2,000" ran into each other at 420 px
            x=alt.X(
                "energy_uj:Q",
                stack="zero",
                title="energy per layer (µJ)",
                axis=alt.Axis(tickCount=5, format="~s", labelOverlap=True),
            ),
            color=alt.Color(
                "level:N",
                scale=alt.Scale(domain=list(LEVEL_ORDER), scheme="tableau10"),
                title="level",
            ),
            order=alt.Order("order:Q"),
            opacity=opacity,
            tooltip=["dataflow:N", "level:N", alt.Tooltip("energy_uj:Q", format=".3g")],
        )
        .properties(width=420, height=120, title=title)
    )
