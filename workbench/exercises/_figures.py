"""A chart shown in a lesson as a static figure (SVG from vl-convert): offline, in any export."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.report.export import STATIC_FIGURE_CLASS, chart_svg

__all__ = ["Figure"]


@dataclass(frozen=True, slots=True)
class Figure:
    """An Altair chart displayed as inline SVG (no script, no network).

    Attributes:
        chart: The chart (its ``to_dict()`` is the testable value).
    """

    chart: Any

    def _repr_html_(self) -> str:
        return (
            f"<figure class='{STATIC_FIGURE_CLASS}' style='margin:0;max-width:100%;"
            f"overflow-x:auto'>{chart_svg(self.chart)}</figure>"
        )

    def __repr__(self) -> str:
        return "Figure(chart)"
