"""TilingLab: force one GEMM or attention kernel's tile and watch SRAM, traffic and time.

Sliders set the tile (``tile_m, tile_n, tile_k``; attention: query tile, key/value tile),
pipeline stages and split-K. The cost model predicts the forced schedule (a tile that overflows
the per-core SRAM spills and is capacity-bound); the Measure button runs the kernel tile by tile
on the execution engine (NumPy, or CuPy on a GPU) with the same tile: one BLAS thread, a warm-up
and :data:`MEASURE_REPEATS` timed runs, shown as a median with its p10-p90 interval, and compared
with the previous tile measured only when the two intervals do not overlap.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import altair as alt
import ipywidgets as widgets
import numpy as np

from workbench._format import fmt_time
from workbench.cost.model import Cost
from workbench.cost.search import rank
from workbench.errors import WorkbenchError
from workbench.execution.measure import Measurement, distinguishable, timed
from workbench.execution.threads import DEFAULT_BLAS_THREADS
from workbench.hw.schema import Hardware
from workbench.mapper import KernelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.platform.fit import setting_refusal
from workbench.report._html import Html, escape
from workbench.report.charts.tiles import forced_tile, storage_rows, tile_fits
from workbench.scheduling.tiling import Tiling
from workbench.tuning.autotune import host_clock
from workbench.ui._live import ChartPanel, LiveChart, row
from workbench.ui.explorer import _hardware

__all__ = [
    "MEASURE_MAX_DIM",
    "MEASURE_REPEATS",
    "TILE_SIZES",
    "TilingLab",
    "storage_rows",
    "tile_chart",
    "tile_fits",
]

#: Tile sizes the sliders offer (elements); :meth:`TilingLab.set_tile` adds others.
TILE_SIZES = (8, 16, 32, 64, 128, 256, 512)
#: Largest M, N, K (attention: sequence) a measurement runs; larger problems are scaled down.
MEASURE_MAX_DIM = 256
#: Timed runs per Measure click (after one warm-up): enough for a p10-p90 interval.
MEASURE_REPEATS = 7


def _versus(
    before: Measurement | None,
    before_tile: tuple[int, ...] | None,
    now: Measurement,
    tile: tuple[int, ...],
) -> str:
    """How ``now`` compares with the previous measurement of another tile (empty if none)."""
    if before is None or before_tile is None or before_tile == tile:
        return ""
    name = "x".join(map(str, before_tile[:3]))
    if not distinguishable(before, now):
        return f"; within the spread of tile {name}'s measurement: too close to rank"
    word = "faster" if now.median_s < before.median_s else "slower"
    return f"; {word} than tile {name} (the p10-p90 intervals do not overlap)"


def tile_chart(tiling: Tiling, cost: Cost, hw: Hardware) -> alt.HConcatChart:
    """Per-core storage against capacity beside the bytes moved at each memory level.

    Returns:
        Two bar charts: SRAM and register use in % of capacity (rule at 100 %, red when over),
        and traffic per level (SI bytes).
    """
    rows = storage_rows(tiling, hw)
    bar = (
        alt.Chart({"values": rows})
        .mark_bar()
        .encode(
            x=alt.X("pct:Q", title="use (% of per-core capacity)"),
            y=alt.Y("what:N", title=None),
            color=alt.Color("fits:N", scale=alt.Scale(domain=[True, False],
                                                      range=["#2ca02c", "#d62728"]), legend=None),
            tooltip=["what:N", "used:N", "capacity:N", alt.Tooltip("pct:Q", format=".0f")],
        )
    )  # fmt: skip
    cap = alt.Chart({"values": [{"pct": 100.0}]}).mark_rule(color="black", strokeWidth=2)
    cap = cap.encode(x="pct:Q")
    largest = max((b for _, b in tiling.traffic), default=0.0)
    div, unit = next(((d, u) for d, u in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
                      if largest >= d), (1.0, "B"))  # fmt: skip
    traffic = [{"level": lvl, "shown": b / div} for lvl, b in tiling.traffic]
    levels = (
        alt.Chart({"values": traffic})
        .mark_bar()
        .encode(
            x=alt.X("shown:Q", title=f"bytes moved ({unit})"),
            y=alt.Y("level:N", sort=[str(t["level"]) for t in traffic], title="memory level"),
            tooltip=["level:N", alt.Tooltip("shown:Q", title=unit, format=".4g")],
        )
    )
    return alt.hconcat(
        alt.layer(bar, cap).properties(width=220, height=alt.Step(22),
                                       title="Storage vs capacity (rule = 100 %)"),
        levels.properties(width=220, height=alt.Step(20), title=f"Traffic ({cost.bottleneck})"),
    )  # fmt: skip


class TilingLab(ChartPanel):
    """Tile sliders for one GEMM-like or attention kernel of a mapped model.

    Args:
        model: Preset name.
        kernel: Kernel name in the mapping (e.g. ``"layers.0.mlp.up_proj"``,
            ``"layers.0.attn.sdpa"``).
        hardware: Hardware profile name.
        phase, batch, seq, dtype: The graph's shape (as ``build_graph``).

    Attributes:
        controls: ``tile_m, tile_n, tile_k, stages, split_k`` widgets.
        kernel_mapping: The searched mapping of the kernel (the starting point).
        measured_s: The last measurement's median, seconds (None before the first).
        measurement: The last measurement (median, p10, p90, samples; None before the first).
        measure_note: What the last measurement ran (backend, shape, scaling, spread) and how
            it compares with the previous tile measured.
    """

    _ROWS = (("tile_m", "tile_n", "tile_k"), ("stages", "split_k"))

    def __init__(
        self,
        model: str = "llama2-7b",
        kernel: str = "layers.0.mlp.up_proj",
        hardware: str = "h100-sxm",
        phase: str = "prefill",
        batch: int = 1,
        seq: int = 2048,
        dtype: str = "bf16",
    ) -> None:
        self.hw = _hardware(hardware)
        # NOTE: the check of ``workbench map`` and the other widgets (one implementation).
        why = setting_refusal(model, self.hw, phase=phase, batch=batch, seq=seq, dtype=dtype)
        if why:
            raise WorkbenchError(f"TilingLab: {model}: {why}")
        mapping = map_model(
            build_graph(model, phase=phase, batch=batch, seq=seq, dtype=dtype), self.hw
        )
        try:
            self.kernel_mapping: KernelMapping = mapping.kernel(kernel)
        except KeyError:
            raise WorkbenchError(f"TilingLab: {model} has no kernel {kernel!r}") from None
        k = self.kernel_mapping.kernel
        if k.gemm is None and k.attention is None:
            raise WorkbenchError(
                f"TilingLab: {kernel!r} is a {k.kind} kernel; pick a GEMM or attention"
            )
        t = self.kernel_mapping.tiling
        self.controls: dict[str, Any] = {
            "tile_m": self._slider("tile_m", t.tile_m),
            "tile_n": self._slider("tile_n", t.tile_n),
            "tile_k": self._slider("tile_k", t.tile_k),
            "stages": widgets.IntSlider(value=t.stages, min=1, max=6, description="stages"),
            "split_k": widgets.SelectionSlider(
                options=(1, 2, 4, 8, 16), value=t.split_k, description="split_k"
            ),
        }
        if k.attention is not None:
            self.controls["tile_k"].disabled = True  # head_dim: fixed by the model
        self.measured_s: float | None = None
        self.measurement: Measurement | None = None
        self._measured_tile: tuple[int, ...] | None = None
        self.measure_note = ""
        self._summary = widgets.HTML()
        self._measured = widgets.HTML()
        self._button = widgets.Button(description="Measure", icon="play")
        self._button.on_click(lambda _: self.measure())
        self.prediction: tuple[Tiling, Cost] = self._predict()
        self._chart = LiveChart(self._make_chart())
        self._show()
        self._hold = False
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    @staticmethod
    def _slider(name: str, value: int) -> widgets.SelectionSlider:
        options = tuple(sorted({*TILE_SIZES, value}))
        return widgets.SelectionSlider(
            options=options, value=value, description=name, continuous_update=False
        )

    @property
    def kernel(self):  # -> Kernel
        """The kernel under study."""
        return self.kernel_mapping.kernel

    @property
    def tiling(self) -> Tiling:
        """The predicted (forced) tiling."""
        return self.prediction[0]

    @property
    def cost(self) -> Cost:
        """The predicted cost of the forced tiling."""
        return self.prediction[1]

    def _override(self):
        c = self.controls
        return forced_tile(
            self.kernel.name, c["tile_m"].value, c["tile_n"].value, c["tile_k"].value,
            split_k=c["split_k"].value, stages=c["stages"].value,
        )  # fmt: skip

    def _predict(self) -> tuple[Tiling, Cost]:
        return rank(self.kernel, self.hw, MapOptions(tiles=(self._override(),)), k=1)[0]

    def _show(self) -> None:
        t, c = self.prediction
        over = Html(" <b style='color:#b00'>over</b>")
        store = Html("; ").join(
            Html("{} {} / {}{}").format(
                r["what"].split(" (")[0], r["used"], r["capacity"], Html("") if r["fits"] else over
            )
            for r in storage_rows(t, self.hw)
        )
        rows = storage_rows(t, self.hw)
        if not rows[0]["fits"]:
            fits = Html("<b style='color:#b00'>overflows SRAM (spills, capacity-bound)</b>")
        elif not all(r["fits"] for r in rows):
            fits = Html(
                "<b style='color:#b00'>accumulators overflow the register file: the search "
                "rejects this tile (the prediction does not price register spills)</b>"
            )
        else:
            fits = Html("fits")
        self._summary.value = Html(
            "<b>{}</b> tile {} stages {} split_k {}: {} ({}); predicted {}, <b>{}</b><br>{}"
        ).format(
            self.kernel.name, t.shape, t.stages, t.split_k, store, fits, fmt_time(c.total_s),
            c.bottleneck, c.evidence,
        )  # fmt: skip

    @property
    def fits(self) -> bool:
        """Whether the current tile fits SRAM and the register file (the mapspace's check)."""
        return tile_fits(self.prediction[0], self.hw)

    def update(self) -> tuple[Tiling, Cost]:
        """Predict the forced tile of the controls and redraw; returns ``(Tiling, Cost)``."""
        self.prediction = self._predict()
        self._chart.chart = self._make_chart()
        self._show()
        return self.prediction

    def _make_chart(self) -> alt.HConcatChart:
        """The tile chart of the current prediction."""
        return tile_chart(*self.prediction, self.hw)

    def _on_change(self, change: dict[str, Any]) -> None:
        if not self._hold:
            self.update()

    def set_tile(
        self,
        m: int,
        n: int,
        k: int | None = None,
        *,
        stages: int | None = None,
        split_k: int | None = None,
    ) -> tuple[Tiling, Cost]:
        """Set the tile (elements) and optionally stages and split-K; one update.

        Returns:
            The new prediction ``(Tiling, Cost)``.
        """
        values = {"tile_m": m, "tile_n": n, "tile_k": k, "stages": stages, "split_k": split_k}
        self._hold = True
        try:
            for name, value in values.items():
                if value is None:
                    continue
                control = self.controls[name]
                if hasattr(control, "options") and value not in control.options:
                    control.options = tuple(sorted({*control.options, value}))
                control.value = value
        finally:
            self._hold = False
        return self.update()

    def measure(self, backend: str | None = None) -> float:
        """Run the kernel with the slider tile on the execution engine; median seconds.

        Problems larger than :data:`MEASURE_MAX_DIM` along any axis are scaled down (the tile
        is kept, clipped to the shape) so a click stays interactive on NumPy; the note says so.

        Args:
            backend: ``"numpy"``, ``"cupy"`` or None (automatic).

        Returns:
            The median of :data:`MEASURE_REPEATS` timed runs after one warm-up, seconds.
        """
        from workbench.execution import get_backend

        bk = get_backend(backend)
        prepare = _attention_run if self.kernel.attention is not None else _gemm_run
        run, shape, scaled = prepare(self.kernel, self.tiling, bk)
        t = self.tiling
        m = timed(
            run,
            repeats=MEASURE_REPEATS,
            threads=DEFAULT_BLAS_THREADS,
            clock=host_clock(bk.name, DEFAULT_BLAS_THREADS),
            settle=lambda: bk_sync(bk),
        )
        tile = (t.tile_m, t.tile_n, t.tile_k, t.stages, t.split_k)
        versus = _versus(self.measurement, self._measured_tile, m, tile)
        self.measurement, self._measured_tile, self.measured_s = m, tile, m.median_s
        self.measure_note = (
            f"measured {m.interval_text()} on {bk.name}, tile {t.tile_m}x{t.tile_n}"
            f"x{t.tile_k}, {shape}"
            + (
                " (scaled down from the model's shape: compare tiles, not absolute times)"
                if scaled
                else ""
            )
            + versus
        )
        self._measured.value = escape(self.measure_note)
        return self.measured_s

    def _children(self) -> list[Any]:
        measure = row(self._button, self._measured)
        return [*self._control_rows(), self._summary, self._chart.widget, measure]

    def _caption(self) -> str:
        return f"{self.kernel.name} tile {self.prediction[0].shape}"


def _attention_run(kernel: Any, t: Tiling, bk: Any) -> tuple[Any, str, bool]:
    from workbench.execution import attention_fused

    p = kernel.attention
    rng = np.random.default_rng(0)
    lq, lk = min(p.q_len, MEASURE_MAX_DIM), min(p.kv_len, MEASURE_MAX_DIM)
    heads = min(p.heads, 4)
    kv_heads = max(1, heads * p.kv_heads // p.heads)
    q = bk.xp.asarray(rng.standard_normal((1, heads, lq, p.head_dim), dtype=np.float32))
    kv = bk.xp.asarray(rng.standard_normal((1, kv_heads, lk, p.head_dim), dtype=np.float32))
    run = functools.partial(
        attention_fused, q, kv, kv, q_tile=t.tile_m, kv_tile=t.tile_n, causal=p.causal, backend=bk
    )
    shape = f"1x{heads}x{lq}x{p.head_dim} queries, {lk} keys"
    return run, shape, (lq, lk, heads) != (p.q_len, p.kv_len, p.heads)


def _gemm_run(kernel: Any, t: Tiling, bk: Any) -> tuple[Any, str, bool]:
    from workbench.execution import gemm

    p = kernel.gemm
    rng = np.random.default_rng(0)
    m, n, k = (min(d, MEASURE_MAX_DIM) for d in (p.m, p.n, p.k))
    a = bk.xp.asarray(rng.standard_normal((m, k), dtype=np.float32))
    b = bk.xp.asarray(rng.standard_normal((k, n), dtype=np.float32))
    split = max(1, min(t.split_k, math.ceil(k / t.tile_k)))
    run = functools.partial(
        gemm, a, b, tile_m=t.tile_m, tile_n=t.tile_n, tile_k=t.tile_k, split_k=split, backend=bk
    )
    return run, f"{m}x{n}x{k} GEMM", (m, n, k) != (p.m, p.n, p.k)


def bk_sync(backend: Any) -> None:
    """Wait for the backend's device (no-op on NumPy)."""
    from workbench.execution import sync

    sync(backend)
