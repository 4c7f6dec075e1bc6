"""The bandwidth-lens widget: pick model, hardware and memory level; the lens redraws.

Each callback makes one library call (:func:`workbench.exercises.lesson12.lens_chart`, which
maps the trajectory and replays the serving trace, both cached) and shows its chart. A level
change redraws from the cache. A model or hardware not seen before needs seconds (six mapped
steps, then a serving replay per step): the status line says what is computing, the lens is drawn
as soon as the steps are mapped, and the unstable-step rings follow when the replay is done.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.exercises.lesson12 import SETTINGS, lens_chart
from workbench.hw import list_hardware, load_hardware
from workbench.platform.trajectory import trajectory_refusal
from workbench.report._html import Html
from workbench.ui._live import ChartPanel, LiveChart, busy
from workbench.ui.platform_panel import PANEL_MODELS

__all__ = ["LensPanel"]


def _levels(hw: str) -> list[str]:
    """Memory levels of ``hw`` that move bytes (registers are skipped), outermost first."""
    return [m.name for m in reversed(load_hardware(hw).memory) if m.name != "registers"]


class LensPanel(ChartPanel):
    """Dropdowns for model, hardware and level; a live bandwidth-lens chart.

    Args:
        model: Decoder preset.
        hardware: Hardware profile name.
        level: Memory level name (None: off-chip).

    Attributes:
        controls: ``model, hardware, level`` dropdowns; setting a value redraws.
    """

    _ROWS = (("model", "hardware", "level"),)
    _CAPTION = "{model} on {hardware}, {level}"

    def __init__(
        self, model: str = "llama2-7b", hardware: str = "h100-sxm", level: str | None = None
    ) -> None:
        levels = _levels(hardware)
        self.controls: dict[str, Any] = {
            "model": widgets.Dropdown(options=PANEL_MODELS, value=model, description="model"),
            "hardware": widgets.Dropdown(
                options=list_hardware(), value=hardware, description="hardware"
            ),
            "level": widgets.Dropdown(
                options=levels, value=level or levels[0], description="level"
            ),
        }
        self._status = widgets.HTML()
        self._refusal = widgets.HTML()
        why = self.refusal()
        if why:
            raise WorkbenchError(f"LensPanel: {why}")
        self._chart = LiveChart(self._make_chart())
        self._relevelling = False
        self.controls["hardware"].observe(self._on_hardware, names="value")
        self.controls["model"].observe(lambda _change: self._on_workload(), names="value")
        self.controls["level"].observe(lambda _change: self._on_level(), names="value")

    def refusal(self) -> str:
        """Why the current model and hardware have no lens ('' when they have one).

        The check of ``workbench map`` and the explorer, by the same code, at the setting the
        trajectory maps (:func:`workbench.platform.trajectory.trajectory_refusal`, the lesson's
        batch and context): a model that does not fit one chip is refused with the reason,
        never drawn.
        """
        c = self.controls
        batch, seq = int(SETTINGS["batch"]), int(SETTINGS["seq"])
        return trajectory_refusal(c["model"].value, c["hardware"].value, batch=batch, seq=seq)

    def _make_chart(self, *, serving: bool = True) -> Any:
        c = {k: w.value for k, w in self.controls.items()}
        return lens_chart(c["model"], c["hardware"], c["level"], serving=serving)

    def _on_level(self) -> None:
        if not self._relevelling:
            self.update()

    def _on_hardware(self, change: Any) -> None:
        levels = _levels(change["new"])
        level = self.controls["level"]
        keep = level.value if level.value in levels else levels[0]
        self._relevelling = True
        try:
            level.options = levels
            level.value = keep
        finally:
            self._relevelling = False
        self._on_workload()

    def _on_workload(self) -> None:
        """A new model or hardware: map the steps and draw, then replay and mark (seconds)."""
        c = self.controls
        what = f"{c['model'].value} on {c['hardware'].value}"
        why = self.refusal()
        self._refusal.value = Html("<b>not drawn: {}</b>").format(why) if why else ""
        if why:
            return
        controls = list(c.values())
        with busy(self._status, controls, f"mapping the optimisation steps of {what}"):
            self._chart.chart = self._make_chart(serving=False)
        with busy(self._status, controls, f"replaying the serving trace per step of {what}"):
            self.update()

    def update(self) -> Any:
        """Redraw with the current controls; returns the new chart (the old one if refused)."""
        if self.refusal():
            return self._chart.chart
        self._chart.chart = self._make_chart()
        return self._chart.chart

    @property
    def refusal_text(self) -> str:
        """The refusal line shown under the controls (HTML; '' when the lens is drawn)."""
        return str(self._refusal.value)

    def _children(self) -> list[Any]:
        return [*self._control_rows(), self._status, self._refusal, self._chart.widget]
