"""Lesson 13, dataflows and energy on a spatial accelerator: loop nests, tables and checks.

Conv layers are mapped on the Eyeriss-like profile (``hardware/eyeriss.yaml``) with
:mod:`workbench.scheduling.loopnest` and costed by :mod:`workbench.scheduling.nest_eval` (checked
against Timeloop's reference outputs): energy per level is words accessed x 2 bytes x the level's
``energy_pj_per_byte``, the NoC 2x a scratchpad word per word moved, and the MACs cost
``power.energy_pj_per_flop`` x 2 FLOPs each.
"""

from __future__ import annotations

import functools

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult
from workbench.exercises._claims import Claim
from workbench.exercises._figures import Figure
from workbench.exercises._lesson13_timeloop import (
    EXERCISES,
    TimeloopExercise,
    check_beats_greedy,
    greedy_map_claim,
    reference_table,
    search_claim,
    timeloop_claim,
    timeloop_exercise,
)
from workbench.exercises._moves import ControlMove, phrase_move
from workbench.exercises._shared import hardware
from workbench.exercises._text import LessonText
from workbench.report.charts.dataflow import energy_by_level_chart
from workbench.scheduling.loopnest import (
    DATAFLOWS,
    NOC_X_RF,
    SPAD_WORDS,
    WORD_BYTES,
    ConvShape,
    LoopNest,
    NestCost,
    cost,
    loop_nest,
)
from workbench.scheduling.nest_eval import Level, LevelMap, Problem, Tensor, evaluate

__all__ = [
    "ENERGY_COLUMNS",
    "EXERCISES",
    "HW",
    "LAYERS",
    "PANEL",
    "TIME_COLUMNS",
    "TimeloopExercise",
    "after",
    "check_beats_greedy",
    "check_best_dataflow",
    "check_hand_count",
    "check_pes_used",
    "energy_chart",
    "energy_claim",
    "energy_figure",
    "energy_rows",
    "energy_table",
    "greedy_map_claim",
    "instruction_claim",
    "move_claim",
    "nest_text",
    "profile_claim",
    "profile_table",
    "reference_table",
    "search_claim",
    "takeaway_claim",
    "timeloop_claim",
    "timeloop_exercise",
    "tiny_nest_text",
    "utilisation_claim",
    "widget_moves",
]

_TEXT = LessonText("lesson13")

#: The profile every cell uses.
HW = "eyeriss"

#: AlexNet's conv layers (Krizhevsky et al., NeurIPS 2012; the layers Eyeriss reports on, Chen et
#: al., JSSC 2017), batch 1; conv1 at its real stride 4 (227 x 227 input -> 55 x 55 output),
#: conv2's groups folded into C = 48; plus a ResNet-style 3x3 layer.
LAYERS: dict[str, ConvShape] = {
    "alexnet conv1": ConvShape(K=96, C=3, P=55, Q=55, R=11, S=11, U=4),
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
    """The storage levels the loop-nest model uses: capacity (words; per PE for the scratchpads).

    The scratchpads are split by operand as on the Eyeriss chip (:data:`SPAD_WORDS`); the NoC
    row is the cost of moving one word between the global buffer and a PE.
    """
    hw = hardware(HW)
    rf, glb, dram = hw.memory[0], hw.sram, hw.offchip
    spad = SPAD_WORDS[HW]
    rows = [
        {"level": f"{name}_spad", "capacity_words": spad[t], "pj_per_word": rf.energy_pj_per_byte}
        for name, t in (("ifmap", "I"), ("filter", "W"), ("psum", "O"))
    ]
    rows += [
        {"level": "noc", "capacity_words": 0, "pj_per_word": NOC_X_RF * rf.energy_pj_per_byte},
        {"level": "glb", "capacity_words": glb.capacity_bytes / WORD_BYTES,
         "pj_per_word": glb.energy_pj_per_byte},
        {"level": "dram", "capacity_words": dram.capacity_bytes / WORD_BYTES,
         "pj_per_word": dram.energy_pj_per_byte},
    ]  # fmt: skip
    frame = pd.DataFrame(rows).set_index("level")
    frame["pj_per_word"] *= WORD_BYTES
    frame["capacity_words"] = frame["capacity_words"].astype(int)
    return frame


def profile_claim() -> Claim:
    """The array's shape and what a byte costs at each level relative to the scratchpad."""
    hw = hardware(HW)
    me = hw.matrix_engine
    t = profile_table()
    base = t.loc["ifmap_spad", "pj_per_word"]
    ratio = {n: t.loc[n, "pj_per_word"] / base for n in ("noc", "glb", "dram")}
    spad = SPAD_WORDS[HW]
    return _TEXT.claim(
        "profile",
        hardware=HW,
        rows=me.native_tile_m,
        cols=me.native_tile_n,
        pes=me.native_tile_m * me.native_tile_n,
        ifmap=spad["I"],
        filter=spad["W"],
        psum=spad["O"],
        noc=ratio["noc"],
        glb=ratio["glb"],
        dram=ratio["dram"],
        mac_pj=2 * hw.power.energy_pj_per_flop["fp16"],
    )


_LEVELS = ("mac", "spad", "noc", "glb", "dram")
#: The energy half and the time half of :func:`energy_table` (each fits a notebook cell).
ENERGY_COLUMNS = [*_LEVELS, "total", "pj_per_mac"]
TIME_COLUMNS = ["pes_used", "pe_utilisation", "cycles", "latency_ms", "utilisation"]


@functools.cache
def _nest_and_cost(layer: str, dataflow: str) -> tuple[LoopNest, NestCost]:
    """The mapped nest and its cost (cached: the widget redraws the same layers)."""
    hw = hardware(HW)
    nest = loop_nest(_shape(layer), dataflow, hw)
    return nest, cost(nest, hw)


def energy_rows(layer: str) -> list[dict[str, object]]:
    """Energy (µJ) per dataflow and level (``mac``, ``spad``, ``noc``, ``glb``, ``dram``)."""
    rows: list[dict[str, object]] = []
    for df in DATAFLOWS:
        c = _nest_and_cost(layer, df)[1]
        rows += [
            {"dataflow": df, "level": lv, "energy_uj": c.energy_pj[lv] / 1e6} for lv in _LEVELS
        ]
    return rows


def energy_table(layer: str) -> pd.DataFrame:
    """One row per dataflow: µJ per level, total, pJ per MAC, PEs, cycles and utilisation.

    ``pes_used`` is what the spatial loops occupy; ``pe_utilisation`` is ``pes_used`` / PEs;
    ``cycles`` are MACs per PE or a level's bandwidth if longer; ``latency_ms`` at the profile's
    clock; ``utilisation`` is useful MACs / (PEs x cycles), spatial and temporal together.
    """
    shape = _shape(layer)
    frame = pd.DataFrame(energy_rows(layer)).pivot(
        index="dataflow", columns="level", values="energy_uj"
    )
    frame = frame[list(_LEVELS)]
    frame["total"] = frame.sum(axis=1)
    frame["pj_per_mac"] = frame["total"] * 1e6 / shape.macs
    costs = {df: _nest_and_cost(layer, df)[1] for df in frame.index}
    frame["pes_used"] = [costs[df].pes_used for df in frame.index]
    frame["pe_utilisation"] = [costs[df].spatial_utilisation for df in frame.index]
    frame["cycles"] = [costs[df].cycles for df in frame.index]
    frame["latency_ms"] = [costs[df].latency_s * 1e3 for df in frame.index]
    frame["utilisation"] = [costs[df].utilisation for df in frame.index]
    frame.columns.name = None
    return frame.round(3).loc[list(DATAFLOWS)]


def utilisation_claim(table: pd.DataFrame, layer: str) -> Claim:
    """PEs used, cycles and the fastest dataflow, read from :func:`energy_table`."""
    pes = hardware(HW).matrix_engine.native_tile_m * hardware(HW).matrix_engine.native_tile_n
    fast = table["cycles"].idxmin()
    parts = [
        _TEXT.render(
            "utilisation_part",
            dataflow=df,
            used=int(table.loc[df, "pes_used"]),
            pes=pes,
            cycles=int(table.loc[df, "cycles"]),
            ms=table.loc[df, "latency_ms"],
        )
        for df in table.index
    ]
    return _TEXT.claim(
        "utilisation", layer=layer, parts=parts, fast=fast, least=table["total"].idxmin()
    )


def nest_text(layer: str, dataflow: str) -> Claim:
    """The loop nest the library maps for ``layer`` with ``dataflow``, as a Markdown code block."""
    _shape(layer)
    if dataflow not in DATAFLOWS:
        raise WorkbenchError(f"dataflow {dataflow!r}: expected one of {', '.join(DATAFLOWS)}")
    return _TEXT.claim("nest", code=_nest_and_cost(layer, dataflow)[0].text())


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
    levels = list(_LEVELS)
    best, worst = table["total"].idxmin(), table["total"].idxmax()
    ratio = table.loc[worst, "total"] / table.loc[best, "total"]
    tops = [
        _TEXT.render("energy_top", dataflow=df, level=table.loc[df, levels].astype(float).idxmax())
        for df in table.index
    ]
    return _TEXT.claim(
        "energy",
        layer=layer,
        best=best,
        best_uj=table.loc[best, "total"],
        best_pj_per_mac=table.loc[best, "pj_per_mac"],
        worst=worst,
        worst_uj=table.loc[worst, "total"],
        ratio=ratio,
        tops=tops,
    )


def takeaway_claim(layers: tuple[str, ...] | None = None) -> Claim:
    """The takeaways measured over the lesson's layers: the MACs' share, and energy vs speed.

    Args:
        layers: Names in :data:`LAYERS` (default: all of them).

    Returns:
        Markdown bullets: the range of the MACs' share of the total energy over every layer and
        dataflow, the level that costs most most often, and on which layers the lowest-energy
        dataflow is also the fastest (from :func:`energy_table`).
    """
    names = tuple(layers or LAYERS)
    shares: list[float] = []
    tops: dict[str, int] = {}
    agree: list[str] = []
    differ: list[str] = []
    for layer in names:
        t = energy_table(layer)
        shares += list(t["mac"] / t["total"])
        for df in t.index:
            lv = str(t.loc[df, list(_LEVELS)].astype(float).idxmax())
            tops[lv] = tops.get(lv, 0) + 1
        (agree if t["total"].idxmin() == t["cycles"].idxmin() else differ).append(layer)
    top = max(tops, key=lambda k: tops[k])
    return _TEXT.claim(
        "takeaway",
        layers=len(names),
        dataflows=len(DATAFLOWS),
        mac_min=min(shares),
        mac_max=max(shares),
        minority=max(shares) < 0.5,
        top=top,
        top_count=tops[top],
        mappings=sum(tops.values()),
        agree=agree,
        differ=differ,
    )


def check_pes_used(answer: object, *, layer: str, dataflow: str) -> CheckResult:
    """PEs the spatial loops of the mapped nest occupy (product of ``parallel_for`` bounds)."""
    _shape(layer)
    nest = loop_nest(_shape(layer), dataflow, hardware(HW))
    return _TEXT.check("pes_used", "PEs used", answer, nest.pes_used)


def check_best_dataflow(answer: object, *, layer: str) -> CheckResult:
    """The dataflow with the lowest total energy on ``layer``."""
    best = str(energy_table(layer)["total"].idxmin())
    return _TEXT.check("best_dataflow", "lowest-energy dataflow", answer, best, synonyms=_SYNONYMS)


# --- a tiny nest to count by hand -------------------------------------------------------------
#: ``for k in range(2): for p in range(3): O[k][p] += W[k] * I[p]`` with all loops at DRAM and a
#: one-word buffer per operand next to the MAC.
_TINY = Problem(
    bounds=(("K", 2), ("P", 3)),
    tensors=(
        Tensor("W", ((("K", 1),),)),
        Tensor("I", ((("P", 1),),)),
        Tensor("O", ((("K", 1),), (("P", 1),)), read_write=True),
    ),
)
_TINY_NEST = (
    LevelMap(Level("dram", frozenset("WIO")), (("K", 2), ("P", 3))),
    LevelMap(Level("buffer", frozenset("WIO"), capacity_words=3)),
)


def tiny_nest_text() -> Claim:
    """The tiny nest of the hand-count exercise, as a code block."""
    return _TEXT.claim("tiny_nest")


def check_hand_count(answer: object) -> CheckResult:
    """Words the buffer fills from DRAM for W and I together in :func:`tiny_nest_text`.

    The expected value is computed by the evaluator the Timeloop golden tests check.
    """
    st = evaluate(_TINY, _TINY_NEST)
    want = st.fills["buffer", "W"] + st.fills["buffer", "I"]
    return _TEXT.check("hand_count", "words filled from DRAM (W + I)", answer, want)


# --- the widget's instructions as data ----------------------------------------------------------
#: The DataflowPanel's controls as the lesson builds it.
PANEL: dict[str, str] = {"layer": "alexnet conv3", "dataflow": "row_stationary"}


def widget_moves() -> tuple[ControlMove, ControlMove]:
    """The lesson's two instructions: conv1 for Exercise 2, then weight-stationary for Exercise 3.

    The second starts where the first ends (``layer`` at conv1).
    """
    conv1 = "alexnet conv1"
    return (
        ControlMove(widget="DataflowPanel", control="layer", start=PANEL["layer"], end=conv1,
                    setting=(("dataflow", PANEL["dataflow"]),)),
        ControlMove(widget="DataflowPanel", control="dataflow", start=PANEL["dataflow"],
                    end="weight_stationary", setting=(("layer", conv1),)),
    )  # fmt: skip


def instruction_claim(i: int) -> Claim:
    """Move ``i`` (0-based) of :func:`widget_moves` as the instruction (no figures: an exercise).

    >>> str(instruction_claim(1))  # doctest: +ELLIPSIS
    'Set the widget: Switch **dataflow** ... (**layer** at `alexnet conv1`).'
    """
    m = widget_moves()[i]
    return _TEXT.claim("instruction", move=phrase_move(m), held=m.setting)


def move_claim(i: int) -> Claim:
    """What the panel shows after move ``i``, from its own status line's table.

    Move 0 (a new layer) names the lowest-energy dataflow and the level that separates it from
    the runner-up most; move 1 (a new dataflow) gives the status line's PEs, cycles and energy
    against the other dataflows' on the same layer.
    """
    m = widget_moves()[i]
    st = m.state(after=True)
    layer, flow = str(st["layer"]), str(st["dataflow"])
    t = energy_table(layer)
    order = t["total"].sort_values()
    best, second = str(order.index[0]), str(order.index[1])
    if m.control == "layer":
        gap = (t.loc[second, list(_LEVELS)] - t.loc[best, list(_LEVELS)]).astype(float)
        lvl = str(gap.idxmax())
        return _TEXT.claim(
            "move_layer",
            move=phrase_move(m),
            best=best,
            layer=layer,
            best_uj=t.loc[best, "total"],
            second=second,
            second_uj=t.loc[second, "total"],
            level=lvl,
            level_gap=gap[lvl],
            gap=order.iloc[1] - order.iloc[0],
        )
    row = t.loc[flow]
    others = [
        _TEXT.render(
            "move_other",
            dataflow=d,
            used=int(t.loc[d, "pes_used"]),
            cycles=int(t.loc[d, "cycles"]),
        )
        for d in t.index
        if d != flow
    ]
    return _TEXT.claim(
        "move_dataflow",
        move=phrase_move(m),
        used=int(row["pes_used"]),
        utilisation=row["pe_utilisation"],
        cycles=int(row["cycles"]),
        total=row["total"],
        others=others,
    )


def after(check: CheckResult | str, claim: Claim, exercise: int) -> Claim:
    """``claim`` once ``check`` (Exercise ``exercise``'s result) passed, or on ``"reveal"``.

    A claim that answers an exercise stays hidden on Run All until the student's check passes.

    >>> from workbench.exercises._check import compare
    >>> after(compare("x", None, 1), Claim("the answer is 1"), 2).text.startswith("*This answers")
    True
    """
    if check == "reveal" or (isinstance(check, CheckResult) and check.passed):
        return claim
    return _TEXT.claim("gated", exercise=exercise)
