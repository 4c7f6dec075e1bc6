"""The sparsity widget: a weight-density slider; dense vs gated vs skipped cycles and energy.

Each callback makes one library call for the status line
(:func:`workbench.exercises.lesson14.status_line`) and one chart call
(:func:`workbench.exercises.lesson14.sweep_chart`, the density marked).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from workbench.exercises.lesson14 import DENSITIES, PANEL_FORMATS, status_line, sweep_chart
from workbench.report._html import escape
from workbench.ui._live import ChartPanel

__all__ = ["SparsityPanel"]

_ZEROS = ("unstructured", "structured")


class SparsityPanel(ChartPanel):
    """Density slider, zero pattern and weight format; a status line and a live chart.

    Args:
        density: Weight density, one of :data:`workbench.exercises.lesson14.DENSITIES`.
        zeros: ``unstructured`` (independent zeros) or ``structured`` (the same count per tile).
        fmt: The skipped design's weight format, one of ``cp``, ``rle``, ``bitmask``.

    Attributes:
        controls: ``density`` slider, ``zeros`` toggle, ``format`` dropdown; a change redraws.
    """

    _ROWS = (("density", "format"),)
    _CAPTION = "density {density:.2f}, {zeros}, {format}"

    def __init__(self, density: float = 0.5, zeros: str = "unstructured", fmt: str = "cp") -> None:
        self.controls: dict[str, Any] = {
            "density": widgets.FloatSlider(
                value=density, min=DENSITIES[0], max=DENSITIES[-1], step=0.05,
                description="density", readout_format=".2f", continuous_update=False,
            ),
            "zeros": widgets.ToggleButtons(options=list(_ZEROS), value=zeros),
            "format": widgets.Dropdown(
                options=list(PANEL_FORMATS), value=fmt, description="format"
            ),
        }  # fmt: skip
        self._status = widgets.HTML()
        self._start()

    def _settings(self) -> tuple[float, bool, Any]:
        c = self.controls
        return (
            round(float(c["density"].value), 2),
            c["zeros"].value == "structured",
            c["format"].value,
        )

    def _make_chart(self) -> Any:
        density, structured, fmt = self._settings()
        return sweep_chart(density, structured=structured, fmt=fmt)

    def _fill(self) -> None:
        self._status.value = escape(status_line(*self._settings()))

    @property
    def status_text(self) -> str:
        """The cycles and energy line for the chosen density (HTML)."""
        return str(self._status.value)

    def _children(self) -> list[Any]:
        return [*self._control_rows(), self.controls["zeros"], self._status, self._chart.widget]
