"""Lesson 13, dataflows and energy on a spatial accelerator: loop nests, tables and checks.

Conv layers are mapped on the Eyeriss-like profile (``hardware/eyeriss.yaml``) with
:mod:`workbench.scheduling.loopnest`; energy per level is words accessed x 2 bytes x the level's
``energy_pj_per_byte``, and the MACs cost ``power.energy_pj_per_flop`` x 2 FLOPs each.
"""

from __future__ import annotations

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._figures import Figure
from workbench.exercises._shared import hardware
from workbench.report.charts.dataflow import energy_by_level_chart
from workbench.scheduling.loopnest import (
    DATAFLOWS,
    WORD_BYTES,
    ConvShape,
    access_words,
    loop_nest,
)

__all__ = [
    "HW",
    "LAYERS",
    "check_best_dataflow",
    "check_pes_used",
    "energy_chart",
    "energy_claim",
    "energy_figure",
    "energy_rows",
    "energy_table",
    "nest_text",
    "profile_claim",
    "profile_table",
]

#: The profile every cell uses.
HW = "eyeriss"

#: AlexNet's conv layers (Krizhevsky et al., NeurIPS 2012; the layers Eyeriss reports on, Chen et
#: al., JSSC 2017), batch 1, stride 1 as modelled here (conv1 really has stride 4: its output is
#: 55 x 55 either way; conv2's groups are folded into C = 48), plus a ResNet-style 3x3 layer.
LAYERS: dict[str, ConvShape] = {
    "alexnet conv1": ConvShape(K=96, C=3, P=55, Q=55, R=11, S=11),
    "alexnet conv2": ConvShape(K=256, C=48, P=27, Q=27, R=5, S=5),
    "alexnet conv3": ConvShape(K=384, C=256, P=13, Q=13, R=3, S=3),
    "alexnet conv5": ConvShape(K=256, C=192, P=13, Q=13, R=3, S=3),
    "resnet 3x3 64": ConvShape(K=64, C=64, P=56, Q=56, R=3, S=3),
}
_SYNONYMS = {
    "weight_stationary": ("ws", "weight stationary", "weight-stationary"),
    "output_stationary": ("os", "output stationary", "output-stationary"),
    "row_stationary": ("rs", "row stationary", "row-stationary"),
}


def _shape(layer: str) -> ConvShape:
    if layer not in LAYERS:
        raise WorkbenchError(f"layer {layer!r}: expected one of {', '.join(LAYERS)}")
    return LAYERS[layer]


def profile_table() -> pd.DataFrame:
    """The profile's storage levels: capacity (bytes; per PE for the scratchpad) and pJ/byte."""
    hw = hardware(HW)
    pes = hw.matrix_engine.native_tile_m * hw.matrix_engine.native_tile_n
    rows = [
        {
            "level": name,
            "capacity_bytes": round(lvl.capacity_bytes / (pes if name == "spad" else 1)),
            "pj_per_byte": lvl.energy_pj_per_byte,
        }
        for name, lvl in zip(("spad", "glb", "dram"), hw.memory, strict=True)
    ]
    return pd.DataFrame(rows).set_index("level")


def profile_claim() -> Claim:
    """The array's shape and what a byte costs at each level relative to the scratchpad."""
    hw = hardware(HW)
    me = hw.matrix_engine
    t = profile_table()
    ratio = {n: t.loc[n, "pj_per_byte"] / t.loc["spad", "pj_per_byte"] for n in ("glb", "dram")}
    return Claim(
        f"The {HW} array is {me.native_tile_m} x {me.native_tile_n} = "
        f"{me.native_tile_m * me.native_tile_n} PEs. A byte from the global buffer costs "
        f"x{ratio['glb']:g} a scratchpad byte, a byte from DRAM x{ratio['dram']:g}; a MAC costs "
        f"{2 * hw.power.energy_pj_per_flop['fp16']:g} pJ."
    )


def energy_rows(layer: str) -> list[dict[str, object]]:
    """Energy (µJ) per dataflow and level (``mac``, then the profile's levels) for ``layer``."""
    hw = hardware(HW)
    shape = _shape(layer)
    pj_mac = 2 * hw.power.energy_pj_per_flop["fp16"]
    levels = dict(zip(("spad", "glb", "dram"), hw.memory, strict=True))
    rows: list[dict[str, object]] = []
    for df in DATAFLOWS:
        nest = loop_nest(shape, df, hw)
        words = access_words(nest)
        rows.append({"dataflow": df, "level": "mac", "energy_uj": nest.padded_macs * pj_mac / 1e6})
        for name, lvl in levels.items():
            uj = words[name] * WORD_BYTES * lvl.energy_pj_per_byte / 1e6
            rows.append({"dataflow": df, "level": name, "energy_uj": uj})
    return rows


def energy_table(layer: str) -> pd.DataFrame:
    """One row per dataflow: µJ per level, total, pJ per useful MAC and the array's utilisation.

    Utilisation is useful MACs / executed MACs (uneven splits pad the loops).
    """
    hw = hardware(HW)
    shape = _shape(layer)
    frame = pd.DataFrame(energy_rows(layer)).pivot(
        index="dataflow", columns="level", values="energy_uj"
    )
    frame = frame[["mac", "spad", "glb", "dram"]]
    frame["total"] = frame.sum(axis=1)
    frame["pj_per_mac"] = frame["total"] * 1e6 / shape.macs
    frame["utilisation"] = [shape.macs / loop_nest(shape, df, hw).padded_macs for df in frame.index]
    return frame.round(3).loc[list(DATAFLOWS)]


def nest_text(layer: str, dataflow: str) -> Claim:
    """The loop nest the library maps for ``layer`` with ``dataflow``, as a Markdown code block."""
    return Claim(f"```python\n{loop_nest(_shape(layer), dataflow, hardware(HW)).text()}\n```")


def energy_chart(layer: str, highlight: str | None = None) -> object:
    """Stacked energy bars for ``layer`` (one per dataflow)."""
    return energy_by_level_chart(
        energy_rows(layer), highlight=highlight, title=f"{layer} on {HW}: energy by level"
    )


def energy_figure(layer: str) -> Figure:
    """:func:`energy_chart` as a static figure."""
    return Figure(energy_chart(layer))


def energy_claim(table: pd.DataFrame, layer: str) -> Claim:
    """Which dataflow spends least, by how much, and where each spends most (from the table)."""
    levels = ["mac", "spad", "glb", "dram"]
    best, worst = table["total"].idxmin(), table["total"].idxmax()
    ratio = table.loc[worst, "total"] / table.loc[best, "total"]
    top = "; ".join(
        f"{df}: **{table.loc[df, levels].astype(float).idxmax()}**" for df in table.index
    )
    return Claim(
        f"On {layer}, **{best}** spends least ({table.loc[best, 'total']:g} µJ, "
        f"{table.loc[best, 'pj_per_mac']:g} pJ per MAC) and **{worst}** most "
        f"({table.loc[worst, 'total']:g} µJ, x{ratio:.2f}). "
        f"The level that costs most: {top}."
    )


def check_pes_used(answer: object, *, layer: str, dataflow: str) -> CheckResult:
    """PEs the spatial loops of the mapped nest occupy (product of ``parallel_for`` bounds)."""
    nest = loop_nest(_shape(layer), dataflow, hardware(HW))
    return compare(
        "PEs used",
        answer,
        nest.pes_used,
        hint="multiply the bounds of the parallel_for loops in the nest",
        hint2="only parallel_for loops occupy PEs; for loops run in time",
    )


def check_best_dataflow(answer: object, *, layer: str) -> CheckResult:
    """The dataflow with the lowest total energy on ``layer``."""
    best = str(energy_table(layer)["total"].idxmin())
    return compare(
        "lowest-energy dataflow",
        answer,
        best,
        hint="set the widget to the layer and compare the bars' total length",
        hint2="answer with a dataflow name, e.g. 'weight_stationary'",
        synonyms=_SYNONYMS,
    )
