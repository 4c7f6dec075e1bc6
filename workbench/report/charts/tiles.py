"""Tile-size heatmaps: predicted (and measured) time of one kernel over forced tiles."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import altair as alt

from workbench._format import fmt_capacity
from workbench.cost.search import rank
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.mapper import KernelMapping
from workbench.options import MapOptions, TileOverride
from workbench.report.charts._common import time_unit
from workbench.scheduling.tiling import Tiling, accumulator_capacity

__all__ = [
    "DEFAULT_TILE_SIZES",
    "forced_tile",
    "storage_rows",
    "tile_fits",
    "tile_grid",
    "tile_heatmap",
]

#: Tile sizes (elements) along M and N that :func:`tile_grid` tries by default.
DEFAULT_TILE_SIZES = (16, 32, 64, 128, 256)


def forced_tile(
    name: str, m: int, n: int, k: int, *, split_k: int | None = None, stages: int | None = None
) -> TileOverride:
    """A :class:`TileOverride` for exactly ``name`` (``split_k``/``stages`` where supported)."""
    extra: dict[str, int] = {}
    fields = {f.name for f in dataclasses.fields(TileOverride)}
    if split_k is not None and "split_k" in fields:
        extra["split_k"] = split_k
    if stages is not None and "stages" in fields:
        extra["stages"] = stages
    return TileOverride(pattern=name, m=m, n=n, k=k, **extra)


def storage_rows(tiling: Tiling, hw: Hardware) -> list[dict[str, Any]]:
    """Per-core storage the tile needs against capacity, as the mapspace's fit check counts.

    SRAM (operand tiles x pipeline stages) and, where the core accumulates in registers, the
    register file (fp32 accumulators, ``tile_m x tile_n x 4`` bytes).

    Returns:
        Dicts ``{what, used_bytes, capacity_bytes, pct, fits}``.
    """
    rows = [("SRAM (operand tiles x stages)", tiling.sram_bytes, tiling.sram_capacity_bytes)]
    acc_cap = accumulator_capacity(hw)
    if acc_cap:
        rows.append(("registers (fp32 accumulators)", tiling.register_bytes, acc_cap))
    return [
        {"what": w, "used_bytes": u, "capacity_bytes": c, "pct": 100.0 * u / c if c else 0.0,
         "used": fmt_capacity(u), "capacity": fmt_capacity(c), "fits": u <= c}
        for w, u, c in rows
    ]  # fmt: skip


def tile_fits(tiling: Tiling, hw: Hardware) -> bool:
    """Whether the tile fits every per-core store the mapspace checks (SRAM and registers)."""
    return all(r["fits"] for r in storage_rows(tiling, hw))


def tile_grid(
    kernel: Kernel | KernelMapping,
    hw: Hardware,
    options: MapOptions | None = None,
    sizes: Sequence[int] = DEFAULT_TILE_SIZES,
    tile_k: int | None = None,
) -> list[dict[str, Any]]:
    """Predict ``kernel``'s time for every forced ``tile_m x tile_n`` in ``sizes`` x ``sizes``.

    Each point is the cost model's best schedule with the tile forced
    (``MapOptions(tiles=(TileOverride(kernel.name, m, n, k),))``; stages and split-K are still
    searched). Tiles that overflow the per-core SRAM are kept and marked (they spill and are
    capacity-bound).

    Args:
        kernel: A GEMM-like or attention kernel (or its :class:`KernelMapping`).
        hw: Target hardware.
        options: Other overrides to keep (their forced tiles are replaced).
        sizes: Tile sizes along M and N, elements (attention: query and key/value tile).
        tile_k: K-step, elements; default the searched best tile's K.

    Returns:
        Dicts ``{tile_m, tile_n, tile_k, time_s, sram_bytes, sram_use, fits, bottleneck,
        measured_s}`` (seconds, bytes; ``measured_s`` is None until measured).
    """
    kern = kernel.kernel if isinstance(kernel, KernelMapping) else kernel
    base = options or MapOptions()
    if tile_k is None:
        tile_k = rank(kern, hw, dataclasses.replace(base, tiles=()), k=1)[0][0].tile_k
    rows = []
    for m in sizes:
        for n in sizes:
            forced = dataclasses.replace(base, tiles=(forced_tile(kern.name, m, n, tile_k),))
            tiling, cost = rank(kern, hw, forced, k=1)[0]
            rows.append(
                {
                    "tile_m": m,
                    "tile_n": n,
                    "tile_k": tiling.tile_k,
                    "time_s": cost.total_s,
                    "sram_bytes": tiling.sram_bytes,
                    "sram_use": tiling.sram_bytes / tiling.sram_capacity_bytes,
                    "fits": tiling.fits,
                    "bottleneck": cost.bottleneck,
                    "measured_s": None,
                }
            )
    return rows


def _panel(rows: list[dict[str, Any]], field: str, title: str) -> alt.LayerChart:
    factor, unit = time_unit(max((r[field] or 0.0) for r in rows))
    base = alt.Chart({"values": rows}).transform_calculate(
        shown=f"datum.{field} * {factor}", sram_pct="datum.sram_use * 100"
    )
    x = alt.X("tile_n:O", title="tile_n (elements)")
    y = alt.Y("tile_m:O", title="tile_m (elements)", sort="descending")
    cells = base.mark_rect().encode(
        x=x,
        y=y,
        color=alt.Color("shown:Q", title=f"time ({unit})", scale=alt.Scale(scheme="viridis")),
        tooltip=[
            "tile_m:O", "tile_n:O", "tile_k:O",
            alt.Tooltip("shown:Q", title=f"{title} ({unit})", format=".4g"),
            alt.Tooltip("sram_pct:Q", title="SRAM use (%)", format=".0f"),
            "fits:N", "bottleneck:N",
        ],
    )  # fmt: skip
    spills = (
        base.transform_filter("!datum.fits")
        .mark_text(text="spills", color="white", fontSize=10)
        .encode(x=x, y=y)
    )
    return alt.LayerChart(layer=[cells, spills], width=220, height=220, title=title)


def tile_heatmap(rows: Iterable[Mapping[str, Any]]) -> alt.LayerChart | alt.HConcatChart:
    """Heatmap of time over ``tile_m x tile_n`` (rows from :func:`tile_grid`).

    Tiles that overflow SRAM are marked ``spills``. Where any row has ``measured_s``, a second
    panel shows the measured time beside the predicted one.

    Returns:
        One heatmap (predicted), or two side by side (predicted, measured).
    """
    data = [dict(r) for r in rows]
    predicted = _panel(data, "time_s", "predicted time")
    measured = [r for r in data if r.get("measured_s")]
    if not measured:
        return predicted
    return alt.hconcat(predicted, _panel(measured, "measured_s", "measured time"))
