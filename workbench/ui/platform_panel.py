"""LatencyPanel: pick a model, platform, trace, batch limit and SLA; the latency curve updates live.

Each change re-runs a small serving sweep (step times from the mapper, cached; runtime variance
from the hardware profile) and redraws throughput against p50/p95/p99 latency with the SLA line
and the knee.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from workbench.hw import list_hardware, load_hardware
from workbench.report.sla_charts import latency_throughput_chart
from workbench.serving import (
    LoadPoint,
    find_knee,
    load_builtin_trace,
    mapper_step_time,
    saturation_rate,
    sweep_load,
)
from workbench.ui._live import LiveChart

__all__ = ["PANEL_MODELS", "LatencyPanel"]

#: Decoder presets the panel offers (small enough to re-map quickly).
PANEL_MODELS = ("gpt2", "llama2-7b", "llama3-8b", "mistral-7b")
_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.15)


class LatencyPanel:
    """Controls for a serving sweep; a live latency-throughput chart and the knee.

    Args:
        model: Decoder preset.
        hardware: Hardware profile name.
        trace: ``"production-chat"`` or ``"synthetic-fixed"``.
        max_batch: Largest batch.
        sla_ms: p99 end-to-end SLA, milliseconds.
        n_requests: Requests per load level.

    Attributes:
        controls: ``model, hardware, trace, max_batch, sla_ms`` widgets; setting a value reruns.
        points: The current sweep's load points.
    """

    def __init__(
        self,
        model: str = "llama2-7b",
        hardware: str = "h100-sxm",
        trace: str = "production-chat",
        max_batch: int = 32,
        sla_ms: float = 15000.0,
        n_requests: int = 800,
    ) -> None:
        self.n_requests = n_requests
        self.controls: dict[str, Any] = {
            "model": widgets.Dropdown(options=PANEL_MODELS, value=model, description="model"),
            "hardware": widgets.Dropdown(
                options=list_hardware(), value=hardware, description="hardware"
            ),
            "trace": widgets.ToggleButtons(
                options=("production-chat", "synthetic-fixed"), value=trace
            ),
            "max_batch": widgets.SelectionSlider(
                options=(4, 8, 16, 32, 64), value=max_batch, description="max batch"
            ),
            "sla_ms": widgets.FloatLogSlider(
                value=sla_ms, base=10, min=2, max=5, description="SLA ms", continuous_update=False
            ),
        }
        self._summary = widgets.HTML()
        self.points: tuple[LoadPoint, ...] = self._sweep()
        self._chart = LiveChart(self._make_chart())
        self._fill()
        self._widget: widgets.VBox | None = None
        for control in self.controls.values():
            control.observe(lambda _change: self.update(), names="value")

    def _sweep(self) -> tuple[LoadPoint, ...]:
        c = {k: w.value for k, w in self.controls.items()}
        hw = load_hardware(c["hardware"])
        b = int(c["max_batch"])
        table = mapper_step_time(
            c["model"],
            hw,
            batches=(1, max(1, b // 4), b),
            prompt_tokens=(128, 512, 1024),
            contexts=(128, 512, 1023),
        )
        work = load_builtin_trace(c["trace"]).head(self.n_requests)
        sat = saturation_rate(table, work, b)
        return sweep_load(
            [sat * f for f in _FRACTIONS], work, table, max_batch=b, variance=hw.runtime_variance
        )

    def _make_chart(self) -> Any:
        c = self.controls
        title = f"{c['model'].value} on {c['hardware'].value} ({c['trace'].value})"
        return latency_throughput_chart(self.points, c["sla_ms"].value / 1e3, title=title)

    def _fill(self) -> None:
        knee = find_knee(self.points, self.controls["sla_ms"].value / 1e3).last_ok
        if knee is None:
            text = "every swept load breaks the SLA"
        else:
            text = (
                f"knee: {knee.achieved_rate_per_s:.2f} requests/s "
                f"({knee.output_tokens_per_s or 0:,.0f} tokens/s) at p99 "
                f"{knee.p99_e2e_s:.2f} s"
            )
        self._summary.value = f"<b>{html.escape(text)}</b>"

    def update(self) -> tuple[LoadPoint, ...]:
        """Rerun the sweep with the current controls and redraw."""
        self.points = self._sweep()
        self._chart.chart = self._make_chart()
        self._fill()
        return self.points

    @property
    def knee_text(self) -> str:
        """The summary line (HTML)."""
        return str(self._summary.value)

    @property
    def widget(self) -> widgets.VBox:
        """The ipywidgets container (controls, knee line, chart)."""
        if self._widget is None:
            c = self.controls
            self._widget = widgets.VBox(
                [
                    widgets.HBox([c["model"], c["hardware"], c["trace"]]),
                    widgets.HBox([c["max_batch"], c["sla_ms"]]),
                    self._summary,
                    self._chart.widget,
                ]
            )
        return self._widget

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
