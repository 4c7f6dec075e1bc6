"""LatencyPanel: pick a model, platform, trace, batch limit and SLA; the latency curve updates live.

Each change re-runs a small serving sweep (step times from the mapper, cached; runtime variance
from the hardware profile) and redraws throughput against p50/p95/p99 latency with the SLA line
and the knee. The expensive work is done once per model, hardware and trace: after drawing, the
panel also sweeps every other batch limit the slider offers (nearest first, the status line says
so), so moving the slider only redraws from the cache. The SLA slider never reruns a sweep.

A model the platform cannot serve at all (weights, one request of the trace's p99 context and its
activations over one chip's memory: :func:`workbench.platform.compare.serving_refusal`, the check
``map`` and the explorer apply) is refused with the reason under the controls, never drawn.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.exercises.lesson10 import SATURATION_FRACTIONS, panel_sweep
from workbench.hw import list_hardware, load_hardware
from workbench.platform.compare import serving_refusal
from workbench.report._html import Html
from workbench.report.sla_charts import latency_throughput_chart
from workbench.serving import LoadPoint, find_knee
from workbench.ui._live import ChartPanel, LiveChart, busy

__all__ = ["PANEL_MODELS", "SLA_STEPS_MS", "LatencyPanel", "sla_options"]

#: Decoder presets the panel offers (small enough to re-map quickly).
PANEL_MODELS = ("gpt2", "llama2-7b", "llama3-8b", "mistral-7b")
#: The SLA slider's positions, milliseconds: a 1-2-5 series from 100 ms to 100 s, with the
#: lessons' SLAs (11, 15 s) on it, so every value a lesson instructs is one the slider reaches
#: exactly (a log slider's steps land on 19,953 ms, not 20,000).
SLA_STEPS_MS = (100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 1.1e4, 1.5e4, 2e4, 3e4, 5e4, 1e5)


def sla_options(sla_ms: float) -> tuple[float, ...]:
    """The SLA slider's positions, milliseconds: :data:`SLA_STEPS_MS` and ``sla_ms`` if new."""
    if not (sla_ms > 0 and sla_ms < float("inf")):
        raise WorkbenchError(f"LatencyPanel: sla_ms must be a positive number, got {sla_ms}")
    return tuple(sorted({*SLA_STEPS_MS, float(sla_ms)}))


class LatencyPanel(ChartPanel):
    """Controls for a serving sweep; a live latency-throughput chart and the knee.

    Args:
        model: Decoder preset.
        hardware: Hardware profile name.
        trace: ``"production-chat"`` or ``"synthetic-fixed"``.
        max_batch: Largest batch.
        sla_ms: p99 end-to-end SLA, milliseconds.
        n_requests: Requests per load level.
        rates: Offered rates to sweep, requests/s; None: fractions of the saturation rate.
            A lesson passes the rates of its own table, so the two show the same simulation.
        fractions: Offered rates as fractions of the saturation rate (when ``rates`` is None).
        prepare: Sweep the slider's other batch limits ahead (True: the slider is then cheap).

    Attributes:
        controls: ``model, hardware, trace, max_batch, sla_ms`` widgets; setting a value reruns.
        points: The current sweep's load points.
    """

    _ROWS = (("model", "hardware", "trace"), ("max_batch", "sla_ms"))
    _CAPTION = "{model} on {hardware}"

    def __init__(
        self,
        model: str = "llama2-7b",
        hardware: str = "h100-sxm",
        trace: str = "production-chat",
        max_batch: int = 32,
        sla_ms: float = 15000.0,
        n_requests: int = 1500,
        rates: tuple[float, ...] | None = None,
        fractions: tuple[float, ...] = SATURATION_FRACTIONS,
        prepare: bool = True,
    ) -> None:
        self.prepare = prepare
        self.n_requests = n_requests
        self.rates = rates
        self.fractions = fractions
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
            "sla_ms": widgets.SelectionSlider(
                options=[(f"{v:,.0f}", v) for v in sla_options(sla_ms)],
                value=float(sla_ms),
                description="SLA ms",
                continuous_update=False,
            ),
        }
        self._summary = widgets.HTML()
        self._status = widgets.HTML()
        self._refusal = widgets.HTML()
        why = self.refusal()
        if why:
            raise WorkbenchError(f"LatencyPanel: {model} on {hardware}: {why}")
        self.points: tuple[LoadPoint, ...] = self._sweep()
        self._chart = LiveChart(self._make_chart())
        self._fill()
        if prepare:
            self.prepare_batches()
        for name in ("model", "hardware", "trace"):
            self.controls[name].observe(lambda _change: self._on_workload(), names="value")
        for name in ("max_batch", "sla_ms"):
            self.controls[name].observe(lambda _change: self.update(), names="value")

    def _sweep(self, max_batch: int | None = None) -> tuple[LoadPoint, ...]:
        c = {k: w.value for k, w in self.controls.items()}
        return panel_sweep(
            c["model"],
            c["hardware"],
            trace=c["trace"],
            max_batch=int(c["max_batch"] if max_batch is None else max_batch),
            n=self.n_requests,
            rates=self.rates,
            fractions=self.fractions,
        )

    def refusal(self) -> str:
        """Why the current model, hardware and trace have no latency curve ('' when they have one).

        :func:`workbench.platform.compare.serving_refusal`: the fit check of ``map`` and the
        explorer at one request of the trace's 99th-percentile context.
        """
        c = self.controls
        return serving_refusal(
            c["model"].value,
            load_hardware(c["hardware"].value),
            trace=c["trace"].value,
            n_requests=self.n_requests,
        )

    @property
    def refusal_text(self) -> str:
        """The refusal line shown under the controls (HTML; '' when the curve is drawn)."""
        return str(self._refusal.value)

    def prepare_batches(self) -> tuple[int, ...]:
        """Sweep every batch limit the slider offers (cached), nearest to the current one first.

        Returns:
            The batch limits swept (the current one excluded; none while the setting is refused).
        """
        if self.refusal():
            return ()
        options = tuple(int(b) for b in self.controls["max_batch"].options)
        here = options.index(int(self.controls["max_batch"].value))
        rest = sorted((i for i in range(len(options)) if i != here), key=lambda i: abs(i - here))
        for i in rest:
            self._sweep(options[i])
        return tuple(options[i] for i in rest)

    def _on_workload(self) -> None:
        """A new model, hardware or trace: sweep it (seconds when unseen), then the batch limits."""
        c = self.controls
        what = f"{c['model'].value} on {c['hardware'].value} ({c['trace'].value})"
        why = self.refusal()
        self._refusal.value = Html("<b>not drawn: {}: {}</b>").format(what, why) if why else ""
        if why:
            self._summary.value = ""
            return
        controls = list(c.values())
        with busy(self._status, controls, f"{what}: step times and the load sweep"):
            self.update()
        if self.prepare:
            with busy(self._status, controls, "the other batch limits, so the slider is instant"):
                self.prepare_batches()

    def _make_chart(self) -> Any:
        c = self.controls
        title = f"{c['model'].value} on {c['hardware'].value} ({c['trace'].value})"
        return latency_throughput_chart(self.points, c["sla_ms"].value / 1e3, title=title)

    def _fill(self) -> None:
        found = find_knee(self.points, self.controls["sla_ms"].value / 1e3)
        knee = found.last_ok
        if knee is None:
            text = "every swept load breaks the SLA"
        elif found.first_break is None:
            text = (
                f"no knee in the swept range: every load up to {knee.offered_rate_per_s:.3g} "
                f"requests/s meets the SLA (p99 {knee.p99_e2e_s:.3g} s); sweep higher"
            )
        else:
            text = (
                f"knee: {knee.offered_rate_per_s:.3g} requests/s offered "
                f"({knee.achieved_rate_per_s:.3g} served, "
                f"{knee.output_tokens_per_s or 0:,.0f} tokens/s) at p99 {knee.p99_e2e_s:.3g} s"
            )
        self._summary.value = Html("<b>{}</b>").format(text)

    def update(self) -> tuple[LoadPoint, ...]:
        """Rerun the sweep with the current controls and redraw (the old points if refused)."""
        if self.refusal():
            return self.points
        self.points = self._sweep()
        self._chart.chart = self._make_chart()
        self._fill()
        return self.points

    @property
    def knee_text(self) -> str:
        """The summary line (HTML)."""
        return str(self._summary.value)

    def _children(self) -> list[Any]:
        lines = [self._summary, self._status, self._refusal]
        return [*self._control_rows(), *lines, self._chart.widget]
