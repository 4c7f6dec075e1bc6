"""Lessons 02, 04, 05, 07, 09: every typed widget instruction is data the widget carries out.

For each lesson the instructions are steps (``explorer_steps``, ``lab_steps``, ``panel_steps``)
whose claims are computed from the step's setting. Here the lesson's own widget, built with the
notebook's arguments, is driven through the same steps: no refusal, the chart changes, and the
widget shows exactly the mapping (or prediction, or triage) the claim was computed from. The
browser test ``tests/browser/test_instructions_02_04_05.py`` (and ``_07_09``) performs the same
steps in JupyterLab.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.exercises import lesson02, lesson04, lesson05, lesson07, lesson09
from workbench.exercises._widget_steps import ExplorerSetting, explorer_walk
from workbench.options import FUSION_RULES

LESSONS = Path(__file__).resolve().parents[3] / "lessons"
EXPLORER_LESSONS = {"02": lesson02, "04": lesson04, "05": lesson05}


def _calls(prefix: str, func: str) -> list[ast.Call]:
    """Every call of ``func`` (a name or ``module.name``) in the lesson's code cells."""
    (nb,) = LESSONS.glob(f"{prefix}-*.ipynb")
    out = []
    for cell in json.loads(nb.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name == func:
                    out.append(node)
    return out


def _args(call: ast.Call) -> tuple[list, dict]:
    return [ast.literal_eval(a) for a in call.args], {
        k.arg: ast.literal_eval(k.value) for k in call.keywords
    }


def _widget_kwargs(prefix: str, widget: str) -> dict:
    (call,) = _calls(prefix, widget)
    args, kw = _args(call)
    assert not args, f"lesson {prefix}: build {widget} with keywords"
    return kw


def _explorer_start(prefix: str) -> ExplorerSetting:
    return ExplorerSetting(**_widget_kwargs(prefix, "MappingExplorer"))


# --- the claims are about the steps the tests perform -------------------------------------------


@pytest.mark.parametrize("prefix", sorted(EXPLORER_LESSONS))
def test_the_explorer_steps_start_where_the_notebook_builds_the_explorer(prefix):
    steps = EXPLORER_LESSONS[prefix].explorer_steps()
    assert steps[0].before == _explorer_start(prefix)


def test_the_notebooks_claims_use_the_steps_the_tests_perform():
    (call,) = _calls("02", "explorer_claim")
    assert _args(call) == ([], {})  # the defaults: lesson02.explorer_steps()
    for name in ("epilogue_claim", "flash_claim"):
        (call,) = _calls("04", name)
        (model, hw), kw = _args(call)
        assert (
            lesson04.explorer_steps(model, hw, seqs=(kw["seq"], 2 * kw["seq"]))[:3]
            == (lesson04.explorer_steps()[:3])
        )
    (call,) = _calls("04", "seq_claim")
    (model, hw), kw = _args(call)
    assert lesson04.explorer_steps(model, hw, **kw) == lesson04.explorer_steps()
    (call,) = _calls("05", "explorer_claim")
    (model, hw), kw = _args(call)
    assert lesson05.explorer_steps(model, hw, **kw) == lesson05.explorer_steps()
    (call,) = _calls("09", "lab_claim")
    assert _args(call) == ([lesson09.LAB_MOVES], {})
    assert _widget_kwargs("09", "TilingLab") == dataclasses.asdict(lesson09.LAB)
    (call,) = _calls("07", "panel_claim")
    assert _args(call) == ([lesson07.PANEL_START, lesson07.PANEL_MOVES], {})
    assert _widget_kwargs("07", "TriagePanel") == {"scenario": lesson07.PANEL_START}


# --- the explorer lessons: the real widget, driven ---------------------------------------------


@pytest.mark.parametrize("prefix", sorted(EXPLORER_LESSONS))
def test_the_explorer_carries_out_every_instruction(prefix):
    from workbench.ui import MappingExplorer
    from workbench.ui.explorer import BATCHES, SEQS

    start = _explorer_start(prefix)
    ex = MappingExplorer(**_widget_kwargs(prefix, "MappingExplorer"))
    for step in EXPLORER_LESSONS[prefix].explorer_steps():
        before = ex.roofline_chart.to_dict()
        if step.control in ("seq", "batch"):
            assert step.value in (SEQS if step.control == "seq" else BATCHES), step
        ex.controls[step.control].value = step.value
        assert ex.error == "", (prefix, step, ex.error)
        want = step.after.mapping()
        assert ex.mapping.time_s == pytest.approx(want.time_s, rel=1e-12), (prefix, step)
        assert len(ex.mapping.kernels) == len(want.kernels)
        assert ex.roofline_chart.to_dict() != before, (prefix, step)
    assert start == EXPLORER_LESSONS[prefix].explorer_steps()[0].before


def test_a_refused_instruction_is_an_error():
    start = ExplorerSetting(model="llama2-7b", hardware="h100-sxm", phase="decode", seq=2048)
    with pytest.raises(WorkbenchError, match="context is 4096 tokens"):
        explorer_walk(start, [("seq", 8192)])
    with pytest.raises(WorkbenchError, match="does not fit"):
        explorer_walk(start, [("batch", 512)])
    with pytest.raises(WorkbenchError, match="changes nothing"):
        explorer_walk(start, [("phase", "decode")])
    with pytest.raises(WorkbenchError, match="no control"):
        explorer_walk(start, [("tile_m", 64)])
    with pytest.raises(WorkbenchError, match="True/False"):
        explorer_walk(start, [("flash_attention", "off")])
    with pytest.raises(WorkbenchError, match="refuses"):
        ExplorerSetting(model="llama2-7b", hardware="h100-sxm", seq=8192).mapping()


def test_a_fusion_step_keeps_the_rules_in_their_order():
    s = ExplorerSetting(model="gpt2", hardware="h100-sxm", seq=512)
    off = s.set("flash_attention", False).set("gemm_epilogue", False)
    assert off.disabled_fusion == tuple(r for r in FUSION_RULES if r in off.disabled_fusion)
    assert off.set("flash_attention", True).disabled_fusion == ("gemm_epilogue",)
    assert off.options.disabled_fusion == off.disabled_fusion


# --- lesson 09: the tiling lab -----------------------------------------------------------------


def test_the_lab_carries_out_every_instruction_and_measures():
    from workbench.ui import TilingLab

    lab = TilingLab(**dataclasses.asdict(lesson09.LAB))
    steps = lesson09.lab_steps()
    t = lab.tiling
    assert steps[0].before == (t.tile_m, t.tile_n, t.tile_k, t.stages, t.split_k)
    for step in steps:
        before = lab.chart.to_dict()
        assert step.value in lab.controls[step.control].options
        lab.controls[step.control].value = step.value
        tiling, cost = lesson09.lab_prediction(step.after)
        assert lab.tiling == tiling
        assert lab.cost.total_s == pytest.approx(cost.total_s, rel=1e-12)
        assert lab.chart.to_dict() != before
    assert lab.measure() > 0
    assert lab.measure_note.startswith("measured ")


def test_a_lab_step_that_changes_nothing_is_an_error():
    t = lesson09.lab_steps()[0].before
    with pytest.raises(WorkbenchError, match="changes nothing"):
        lesson09.lab_steps((("tile_m", t[0]),))
    with pytest.raises(WorkbenchError, match="no slider"):
        lesson09.lab_steps((("seq", 128),))


# --- lesson 07: the triage panel ---------------------------------------------------------------


def test_the_panel_carries_out_the_instruction():
    from workbench.ui import TriagePanel

    panel = TriagePanel(scenario=lesson07.PANEL_START)
    for step in lesson07.panel_steps():
        before = panel.headline.value
        panel.scenario.value = step.after
        got, want = panel.report, lesson07.panel_report(step.after)
        assert got.decision == want.decision
        assert got.candidate.model.time_s == want.candidate.model.time_s
        assert panel.headline.value != before
        b, c = (x.model.time_s * 1e6 for x in (want.baseline, want.candidate))
        assert f"{b:.1f} &rarr; {c:.1f} us" in panel.headline.value
    with pytest.raises(WorkbenchError, match="not a different scenario"):
        lesson07.panel_steps("unchanged", ("unchanged",))
