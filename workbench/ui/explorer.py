"""MappingExplorer: pick a model, hardware and shape; the mapping, sheet and charts update live.

Every control change re-maps the model (the mapper's schedule cache makes repeats cheap) and
replaces the summary, the grouped mapping sheet and the two live charts (roofline, time by layer
type) in place.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import ipywidgets as widgets

from workbench._format import fmt_time
from workbench.errors import WorkbenchError
from workbench.hw import list_hardware, load_hardware
from workbench.hw.schema import Hardware
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph, list_models
from workbench.options import FUSION_RULES, MapOptions
from workbench.platform.fit import setting_refusal
from workbench.report._html import Html, each
from workbench.report.charts import group_name, layer_type_bars, roofline
from workbench.report.sheet import sheet_rows
from workbench.ui._live import LiveChart, ShowsWidget, row

__all__ = [
    "BATCHES",
    "EXPLORER_DTYPES",
    "SEQS",
    "MappingExplorer",
    "grouped_sheet_html",
    "refusal",
    "summary_html",
]

#: Formats the explorer offers.
EXPLORER_DTYPES = ("bf16", "fp16", "fp8_e4m3", "int8", "fp32")
#: Batch sizes the batch slider steps through (decades: powers of two).
BATCHES = tuple(2**i for i in range(10))
#: Sequence lengths the seq slider steps through, tokens (128 .. 32k, powers of two).
SEQS = tuple(2**i for i in range(7, 16))


def _steps(options: tuple[int, ...], value: int) -> tuple[int, ...]:
    """The slider's options with ``value`` added where it belongs (a lesson may start off-grid)."""
    return tuple(sorted({*options, int(value)}))


def refusal(model: str, hardware: str, phase: str, batch: int, seq: int, dtype: str) -> str:
    """Why a setting has no meaningful step time ('' when it has one).

    The explorer's sliders and the lessons' instructions share one check with ``workbench
    map``, by the same code (:func:`workbench.platform.fit.setting_refusal`): the positions the
    step needs against the model's context, then its weights + KV cache + activations against
    one chip's memory. The line is the one ``map`` prints (without its flag prefix).

    Returns:
        One line naming the limit and the numbers (binary units), or ''.
    """
    return setting_refusal(
        model, _hardware(hardware), phase=phase, batch=batch, seq=seq, dtype=dtype
    )


_HW_CACHE: dict[str, Hardware] = {}


def _hardware(name: str) -> Hardware:
    # NOTE: one object per profile, so the mapper's schedule cache (keyed by the object) hits.
    if name not in _HW_CACHE:
        _HW_CACHE[name] = load_hardware(name)
    return _HW_CACHE[name]


def summary_html(mapping: ModelMapping) -> str:
    """Step time, throughput, MFU and memory-stall fraction per layer type, as escaped HTML."""
    stall = Html(", ").join(
        Html("{} {:.0%}").format(lt, f) for lt, f in mapping.stall_fraction_by_layer_type().items()
    )
    return Html(
        "<b>{name}</b>: step {step}, {tokens:,.0f} tokens/s, MFU {mfu:.1%}, "
        "off-chip bandwidth utilisation (MBU) {mbu:.1%}, "
        "{kernels} kernels<br>memory-stall fraction (time beyond the compute "
        "the kernel needs, waiting on memory): {stall}"
    ).format(
        name=f"{mapping.graph.name} on {mapping.hardware.name} ({mapping.dtype})",
        step=fmt_time(mapping.time_s), tokens=mapping.tokens_per_s, mfu=mapping.mfu,
        mbu=mapping.mbu, kernels=len(mapping.kernels), stall=stall,
    )  # fmt: skip


def grouped_sheet_html(mapping: ModelMapping) -> str:
    """The mapping sheet with identical layers grouped (``layers.*.``), as an escaped HTML table."""
    groups: dict[str, dict[str, Any]] = {}
    for r in sheet_rows(mapping):
        g = groups.setdefault(group_name(r["kernel"]), {**r, "count": 0, "time_s": 0.0})
        g["count"] += 1
        g["time_s"] += r["time_s"]
    cols = ("kernel", "count", "layer_type", "engine", "tile", "fusion", "time (µs)", "share",
            "bottleneck")  # fmt: skip
    head = each("<th>{}</th>", cols)
    body = []
    total = mapping.time_s or 1.0
    for name, g in groups.items():
        cells = (
            name, g["count"], g["layer_type"], g["engine"], g["tile"], "+".join(g["fusion"]),
            f"{g['time_s'] * 1e6:.4g}", f"{g['time_s'] / total:.1%}", g["bottleneck"],
        )  # fmt: skip
        body.append(Html("<tr>{}</tr>").format(each("<td>{}</td>", cells)))
    return Html(
        "<table style='border-collapse:collapse;font-size:11px'>"
        "<thead><tr>{}</tr></thead><tbody>{}</tbody></table>"
    ).format(head, Html("").join(body))


@functools.lru_cache(maxsize=128)
def _mapping(
    model: str, phase: str, batch: int, seq: int, dtype: str, hardware: str, options: MapOptions
) -> ModelMapping:
    """Map one setting of the controls.

    Memoised: the graph and the mapping are pure functions of the setting, so moving a slider
    back to a value it had is instant.
    """
    graph = build_graph(model, phase=phase, batch=batch, seq=seq, dtype=dtype)
    return map_model(graph, _hardware(hardware), options)


class MappingExplorer(ShowsWidget):
    """Controls for model, hardware, phase, batch, sequence, dtype and fusion; live results.

    Args:
        model: Preset name (see ``workbench.models.list_models``).
        hardware: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        batch: Sequences per step.
        seq: Prompt tokens (decode: cached context).
        dtype: Model format.
        disabled_fusion: Fusion rules initially off.

    Attributes:
        controls: Control widgets by name: ``model, hardware, phase, batch, seq, dtype`` and one
            checkbox per fusion rule (named as in ``FUSION_RULES``; checked = on). Setting a
            value (``explorer.controls["batch"].value = 8``) re-maps and redraws.
        mapping: The current :class:`ModelMapping`.
        error: Why the current controls have no step time ('' when they map fine): a mapping
            error, a prompt past the model's context length, or a model + KV cache that does
            not fit the chip's memory. The summary shows it instead of a step time.
        last_update_s: Wall time of the last update (map + charts + sheet), seconds.
    """

    _ROWS = (("model", "hardware", "dtype"), ("phase", "batch", "seq"), tuple(FUSION_RULES))

    def __init__(
        self,
        model: str = "llama2-7b",
        hardware: str = "h100-sxm",
        phase: str = "prefill",
        batch: int = 1,
        seq: int = 2048,
        dtype: str = "bf16",
        disabled_fusion: tuple[str, ...] = (),
    ) -> None:
        style = {"description_width": "initial"}
        self.controls: dict[str, Any] = {
            "model": widgets.Dropdown(options=list_models(), value=model, description="model"),
            "hardware": widgets.Dropdown(
                options=list_hardware(), value=hardware, description="hardware"
            ),
            "phase": widgets.ToggleButtons(options=("prefill", "decode"), value=phase),
            "batch": widgets.SelectionSlider(
                options=_steps(BATCHES, batch),
                value=batch,
                description="batch",
                continuous_update=False,
            ),
            "seq": widgets.SelectionSlider(
                options=_steps(SEQS, seq), value=seq, description="seq", continuous_update=False
            ),
            "dtype": widgets.Dropdown(options=EXPLORER_DTYPES, value=dtype, description="dtype"),
        }
        for rule, what in FUSION_RULES.items():
            self.controls[rule] = widgets.Checkbox(
                value=rule not in disabled_fusion, description=rule, tooltip=what, style=style
            )
        self._summary = widgets.HTML()
        self._sheet = widgets.HTML()
        self.error = ""
        self.last_update_s = 0.0
        self.mapping: ModelMapping = self._map()
        self._roofline = LiveChart(roofline(self.mapping))
        self._layers = LiveChart(layer_type_bars(self.mapping))
        self._fill_text()
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    # --- state -----------------------------------------------------------------------------
    @property
    def options(self) -> MapOptions:
        """The mapping options the fusion checkboxes describe."""
        off = tuple(r for r in FUSION_RULES if not self.controls[r].value)
        return MapOptions(disabled_fusion=off)

    @property
    def roofline_chart(self) -> Any:
        """The current roofline chart (an Altair LayerChart)."""
        return self._roofline.chart

    @property
    def layer_chart(self) -> Any:
        """The current time/MFU-by-layer-type chart."""
        return self._layers.chart

    def _map(self) -> ModelMapping:
        c = self.controls
        return _mapping(
            c["model"].value, c["phase"].value, c["batch"].value, c["seq"].value,
            c["dtype"].value, c["hardware"].value, self.options,
        )  # fmt: skip

    def _fill_text(self) -> None:
        self._summary.value = summary_html(self.mapping)
        self._sheet.value = grouped_sheet_html(self.mapping)

    def update(self) -> ModelMapping:
        """Re-map with the controls' values and replace the summary, sheet and charts.

        A mapping error (e.g. a format the hardware lacks), a context past the model's limit or
        a setting that does not fit memory is shown in the summary with its reason and kept in
        :attr:`error`; the previous mapping and charts stay.

        Returns:
            The current mapping.
        """
        t0 = time.perf_counter()
        c = self.controls
        why = refusal(
            c["model"].value, c["hardware"].value, c["phase"].value, c["batch"].value,
            c["seq"].value, c["dtype"].value,
        )  # fmt: skip
        try:
            mapping = None if why else self._map()
        except WorkbenchError as exc:
            why = str(exc)
        if mapping is None:
            self.error = why
            self._summary.value = Html(
                "<b style='color:#b00'>no step time: {}</b> "
                "(the charts below still show the last setting that maps)"
            ).format(why)
            return self.mapping
        self.error = ""
        self.mapping = mapping
        self._roofline.chart = roofline(mapping)
        self._layers.chart = layer_type_bars(mapping)
        self.last_update_s = time.perf_counter() - t0
        self._fill_text()
        return mapping

    def _on_change(self, change: dict[str, Any]) -> None:
        self.update()

    # --- display ---------------------------------------------------------------------------
    def _children(self) -> list[Any]:
        sheet = widgets.Accordion(children=[self._sheet], titles=("mapping sheet",))
        charts = row(self._roofline.widget, self._layers.widget)
        return [*self._control_rows(), self._summary, charts, sheet]

    def _static_charts(self) -> tuple[Any, ...]:
        return (self.roofline_chart, self.layer_chart)

    def _caption(self) -> str:
        return self.mapping.graph.name
