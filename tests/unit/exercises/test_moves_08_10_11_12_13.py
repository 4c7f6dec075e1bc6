"""Every widget instruction of lessons 08, 10, 11, 12 and 13 is data its widget carries out.

For each lesson: the widget the notebook builds is the one the moves describe (its constructor
call, read from the notebook, has the module's settings); each :class:`ControlMove` performed on
the widget object changes the chart, or shows the refusal it is meant to teach; and what the
widget then shows carries the figures of the claim the lesson prints for that move (issue 20).
The browser test performs the same moves on the page (``tests/browser/_instructions_08_13.py``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from workbench.exercises import lesson08, lesson10, lesson11, lesson12, lesson13
from workbench.exercises._moves import ControlMove, phrase_move
from workbench.hw import load_hardware
from workbench.platform.compare import RATE_FRACTIONS
from workbench.platform.fit import setting_refusal

LESSONS = Path(__file__).resolve().parents[3] / "lessons"


def _cells(prefix: str) -> list[str]:
    (nb,) = LESSONS.glob(f"{prefix}-*.ipynb")
    return ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"]]


def _call(prefix: str, name: str) -> dict[str, object]:
    """The keyword arguments of the lesson's one ``name(...)`` call (literals, names as str)."""
    calls = [
        node
        for src in _cells(prefix)
        if f"{name}(" in src
        for node in ast.walk(ast.parse(src))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name
    ]
    assert len(calls) == 1, (prefix, name, len(calls))
    out: dict[str, object] = {}
    for kw in calls[0].keywords:
        v = kw.value
        out[str(kw.arg)] = v.id if isinstance(v, ast.Name) else ast.literal_eval(v)
    return out


def _set(widget, state: dict[str, object]) -> None:
    for k, v in state.items():
        if widget.controls[k].value != v:
            widget.controls[k].value = v


def _perform(widget, move: ControlMove, chart) -> tuple[object, object]:
    """Set the move's start state, then its end; the charts' specs before and after."""
    _set(widget, move.state())
    before = chart(widget)
    widget.controls[move.control].value = move.end
    return before, chart(widget)


# --- lesson 08: the explorer -------------------------------------------------------------------
def _explorer_chart(ex):
    return (ex.roofline_chart.to_dict(), ex.layer_chart.to_dict())


def test_lesson08_explorer_is_built_as_the_moves_say():
    args = _call("08", "MappingExplorer")
    want = {k: v for k, v in lesson08.EXPLORER.items() if k != "flash_attention"}
    assert args == want
    assert lesson08.EXPLORER["flash_attention"] is True  # every fusion rule on by default
    assert "lesson08.explorer_claim()" in _cells("08")


def test_lesson08_explorer_carries_out_every_move():
    from workbench.ui import MappingExplorer

    ex = MappingExplorer(**{k: v for k, v in lesson08.EXPLORER.items() if k != "flash_attention"})
    claim = lesson08.explorer_claim().text.splitlines()
    moves = lesson08.explorer_moves()
    assert len(claim) == len(moves)
    for move, line in zip(moves, claim, strict=True):
        assert line.startswith(f"- {phrase_move(move)}")
        before, after = _perform(ex, move, _explorer_chart)
        if move.refused:
            st = move.state(after=True)
            why = setting_refusal(str(st["model"]), load_hardware(str(st["hardware"])),
                                  phase=str(st["phase"]), batch=int(str(st["batch"])),
                                  seq=int(str(st["seq"])))  # fmt: skip
            assert why, move
            assert ex.error == why, move
            assert why in line  # the claim quotes the line the explorer shows
            assert after == before  # the last chart that maps stays
        else:
            assert ex.error == "", (move, ex.error)
            assert after != before, move
            assert f"{ex.mapping.time_s * 1e3:.3g} ms" in line, (line, ex.mapping.time_s)


def test_lesson08_exercise_and_tables_use_settings_the_explorer_accepts():
    hw = load_hardware("h100-sxm")
    args = _call("08", "check_decode_bottleneck")
    assert not setting_refusal("llama2-7b", hw, phase="decode", batch=1, seq=int(args["context"]))
    src = next(s for s in _cells("08") if "kv_growth_table(" in s)
    contexts = ast.literal_eval(re.search(r"contexts=(\([^)]*\))", src)[1])
    for ctx in contexts:
        assert not setting_refusal("llama2-7b", hw, phase="decode", batch=8, seq=ctx), ctx
    t = lesson08.widget_move_table("llama2-7b", "h100-sxm", batch=8)
    for _, batch, ctx in t.index:
        assert not setting_refusal("llama2-7b", hw, phase="decode", batch=batch, seq=ctx)


# --- lessons 10 and 11: the latency panel -------------------------------------------------------
def _panel_chart(panel):
    return panel.chart.to_dict()


@pytest.mark.parametrize(
    ("prefix", "module", "n", "rates", "fractions"),
    [
        ("10", lesson10, 1500, lesson10.RATES, None),
        ("11", lesson11, 1000, None, RATE_FRACTIONS),
    ],
)
def test_latency_panel_carries_out_every_move(prefix, module, n, rates, fractions):
    from workbench.ui.platform_panel import LatencyPanel

    args = _call(prefix, "LatencyPanel")
    panel_args = {k: v for k, v in args.items() if k in module.PANEL}
    assert {**module.PANEL, **panel_args} == module.PANEL  # the notebook's panel is PANEL's
    assert args["n_requests"] == n
    assert args.get("rates", "rates" if rates else None) == ("rates" if rates else None)
    kwargs = {"rates": rates} if rates else {"fractions": fractions}
    panel = LatencyPanel(**module.PANEL, n_requests=n, prepare=False, **kwargs)
    claim = module.widget_claim(n=n).text.splitlines()
    moves = module.widget_moves()
    assert len(claim) == len(moves) >= 2
    for move, line in zip(moves, claim, strict=True):
        assert line.startswith(f"- {phrase_move(move)}")
        before, after = _perform(panel, move, _panel_chart)
        assert panel.refusal_text == "", move
        assert after != before, move
        # the panel's knee line states the rate the claim gives after the arrow
        rate = re.search(r"-> \*\*(?:knee|no knee up to) ([\d.]+) requests/s", line)[1]
        assert f"{rate} requests/s" in panel.knee_text, (line, panel.knee_text)


# --- lesson 12: the lens panel ------------------------------------------------------------------
def test_lesson12_lens_carries_out_every_move():
    from workbench.ui.lens_panel import LensPanel

    assert _call("12", "LensPanel") == lesson12.PANEL
    panel = LensPanel(**lesson12.PANEL)
    claim = lesson12.widget_claim().text.splitlines()
    moves = lesson12.widget_moves()
    assert len(claim) == len(moves)
    assert [m.refused for m in moves] == [False, False, True]
    for move, line in zip(moves, claim, strict=True):
        assert line.startswith(f"- {phrase_move(move)}")
        before, after = _perform(panel, move, lambda p: p.chart.to_dict())
        if move.refused:
            assert panel.refusal_text.startswith("<b>not drawn: does not fit on one tpu-v5e")
            assert panel.refusal()
            assert panel.refusal() in line  # the claim quotes the panel's line
            assert after == before
            continue
        assert panel.refusal_text == ""
        assert after != before, move
        st = move.state(after=True)
        t = lesson12.trajectory_table(str(st["model"]), str(st["hardware"]), str(st["level"]))
        assert f"pressure {t['pressure_pct'].min():g} to {t['pressure_pct'].max():g} %" in line
        # the points drawn are the table's steps at the new level or platform
        steps = [
            rows
            for rows in panel.chart.to_dict()["datasets"].values()
            if rows and "saturated" in rows[0]
        ]
        assert len(steps) == 1
        drawn = {r["variant"]: round(r["pressure"] * 100, 1) for r in steps[0]}
        assert drawn == dict(t["pressure_pct"]), (drawn, t)


# --- lesson 13: the dataflow panel --------------------------------------------------------------
def test_lesson13_panel_carries_out_every_move():
    from workbench.ui.dataflow_panel import DataflowPanel

    assert _call("13", "DataflowPanel") == lesson13.PANEL
    moves = lesson13.widget_moves()
    # the exercises ask about exactly the settings the moves reach
    assert _call("13", "check_best_dataflow") == {"layer": moves[0].end}
    assert _call("13", "check_pes_used") == {"layer": moves[1].state()["layer"],
                                               "dataflow": moves[1].end}  # fmt: skip
    panel = DataflowPanel(**lesson13.PANEL)
    for i, move in enumerate(moves):
        before, after = _perform(panel, move, lambda p: (p.chart.to_dict(), p.status_text))
        assert after != before, move
        line = lesson13.move_claim(i).text
        assert line.startswith(phrase_move(move))
        assert phrase_move(move) in lesson13.instruction_claim(i).text
        t = lesson13.energy_table(str(move.state(after=True)["layer"]))
        row = t.loc[panel.controls["dataflow"].value]
        assert f"{int(row['cycles']):,} cycles" in panel.status_text
        if move.control == "dataflow":
            assert f"{int(row['pes_used'])} PEs in use" in line
            assert f"{int(row['cycles']):,} cycles" in line
        else:
            assert f"**{t['total'].idxmin()}** spends least" in line
