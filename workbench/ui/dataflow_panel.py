"""The dataflow widget: pick a conv layer and a dataflow; see its loop nest, PE use and energy.

Each callback makes one library call for the nest (:func:`workbench.exercises.lesson13.nest_text`),
one for the PEs, cycles and latency (:func:`workbench.exercises.lesson13.energy_table`) and one
chart call (:func:`workbench.exercises.lesson13.energy_chart`, the chosen dataflow highlighted).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from workbench.exercises.lesson13 import LAYERS, energy_chart, energy_table, nest_text
from workbench.report._html import Html, escape
from workbench.scheduling.loopnest import DATAFLOWS
from workbench.ui._live import ChartPanel

__all__ = ["DataflowPanel"]


class DataflowPanel(ChartPanel):
    """Layer and dataflow controls; the mapped loop nest as text and a live energy chart.

    Args:
        layer: A key of :data:`workbench.exercises.lesson13.LAYERS`.
        dataflow: A key of :data:`workbench.scheduling.loopnest.DATAFLOWS`.

    Attributes:
        controls: ``layer`` dropdown and ``dataflow`` toggle; setting a value redraws.
    """

    _ROWS = (("layer", "dataflow"),)
    _CAPTION = "{layer}, {dataflow}"

    def __init__(self, layer: str = "alexnet conv3", dataflow: str = "row_stationary") -> None:
        self.controls: dict[str, Any] = {
            "layer": widgets.Dropdown(options=list(LAYERS), value=layer, description="layer"),
            "dataflow": widgets.ToggleButtons(options=list(DATAFLOWS), value=dataflow),
        }
        self._nest = widgets.HTML()
        self._status = widgets.HTML()
        self._start()

    def _make_chart(self) -> Any:
        c = self.controls
        return energy_chart(c["layer"].value, highlight=c["dataflow"].value)

    def _fill(self) -> None:
        c = self.controls
        code = (
            str(nest_text(c["layer"].value, c["dataflow"].value)).strip("`").removeprefix("python")
        )
        self._nest.value = Html(
            "<pre style='font-size:11px;max-width:100%;overflow-x:auto'>{}</pre>"
        ).format(code.strip())
        row = energy_table(c["layer"].value).loc[c["dataflow"].value]
        self._status.value = escape(
            f"{c['dataflow'].value}: {int(row['pes_used'])} PEs in use "
            f"({row['pe_utilisation']:.0%} of the array), {int(row['cycles']):,} cycles = "
            f"{row['latency_ms']:g} ms, {row['total']:g} µJ"
        )

    @property
    def status_text(self) -> str:
        """The PEs, cycles, latency and energy line shown for the chosen dataflow (HTML)."""
        return str(self._status.value)

    @property
    def nest_html(self) -> str:
        """The loop nest shown (HTML)."""
        return str(self._nest.value)

    def _children(self) -> list[Any]:
        return [*self._control_rows(), self._status, self._nest, self._chart.widget]
