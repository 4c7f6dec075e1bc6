"""Lessons 02, 04 and 05: every explorer instruction performed in JupyterLab (issue 20).

Each lesson is opened and run once here (it is no longer in ``_lesson_checks.WIDGET_LESSONS``):
the issue-12 width check, then every step of the lesson's ``explorer_steps()`` on its
MappingExplorer, one control change each, in order. After each step: the chart's SVG changed and
a MutationObserver saw it redraw, the explorer shows no refusal, and its summary shows the step
time the lesson's claim was computed from (``ExplorerStep.after.mapping()``). Lesson 05 (whose
walk has no slider) also gets issue 12's slider key press. Lesson 02 then performs,
on the same open explorer, the decode drags of its ``lesson08.widget_claim`` call
(``lesson08.widget_moves``: set the drag's start, then drag), which
``test_instructions_browser.py`` performs for lessons 01 and 08.
``tests/unit/exercises/test_steps_02_04_05_07_09.py`` drives the same steps on the widget
objects.
"""

import json
import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import open_and_run, step_slider
from _steps import REFUSAL, check_layout, perform, widget_output

from workbench._format import fmt_time
from workbench.exercises import lesson02, lesson04, lesson05, lesson08
from workbench.exercises._widget_steps import ExplorerSetting
from workbench.ui.explorer import BATCHES, SEQS

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CALL = re.compile(r'widget_claim\("([\w.-]+)", "([\w.-]+)", batch=(\d+)\)')
LESSONS = {
    "02": ("02-hardware-model-and-roofline", lesson02),
    "04": ("04-fusion-boundaries", lesson04),
    "05": ("05-quantization-and-layouts", lesson05),
}


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_every_explorer_instruction_redraws_to_the_claimed_mapping(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    name, module = LESSONS[lesson]
    path = f"lessons/{name}.ipynb"
    steps = module.explorer_steps()
    t0 = time.monotonic()
    try:
        open_and_run(page, base, token, path)
        ran = time.monotonic() - t0
        check_layout(page, name)
        output = widget_output(page, "MappingExplorer(")
        lines = []
        for step in steps:
            options = {"seq": SEQS, "batch": BATCHES}.get(step.control)
            if options is not None:
                options = tuple(sorted({*options, step.before.seq, step.before.batch}))
            seen = perform(page, (base, token, path), output, step.control, step.value,
                           options=options)  # fmt: skip
            want = f"step {fmt_time(step.after.mapping().time_s)}"
            lines.append(f"{step.control}->{step.value} ({seen['seconds']:.1f} s)")
            assert seen["svg_changed"], f"{lesson}: {step}: the chart's SVG did not change"
            assert seen["mutations"] > 0, f"{lesson}: {step}: no redraw after the action"
            assert REFUSAL not in seen["text"], f"{lesson}: {step}: refused: {seen['text'][:300]}"
            assert want in seen["text"], f"{lesson}: {step}: no '{want}' in the summary"
        drags = _drags(page, (base, token, path), output, lesson, steps[-1].after)
        lines += drags
        if not drags and not any(s.control in ("seq", "batch") for s in steps):
            timing = step_slider(page, output)
            assert timing["value_after"] != timing["value_before"], "the slider did not step"
            assert timing["mutations"] > 0, "the chart did not redraw after the slider stepped"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson}-1366.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson}-failure.png"), full_page=True)
        raise
    print(f"\n{lesson}: run all {ran:.1f} s; " + "; ".join(lines))
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)


def _drags(page, server, output, lesson, at: ExplorerSetting) -> list[str]:
    """Lesson 02's ``widget_claim`` drags on the open explorer, from where its walk ended."""
    if lesson != "02":
        return []
    (nb,) = Path(__file__).resolve().parents[2].glob(f"lessons/{lesson}-*.ipynb")
    source = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
    (call,) = CALL.findall(source)
    model, hw, batch = call[0], call[1], int(call[2])
    assert (at.model, at.hardware, at.phase) == (model, hw, "decode"), at
    lines = []
    for move in lesson08.widget_moves(model, hw, batch=batch):
        (b0, s0), (b1, s1) = move.settings()
        for name, value, options in (
            ("batch", b0, BATCHES),
            ("seq", s0, SEQS),
            (move.slider, move.end, SEQS if move.slider == "seq" else BATCHES),
        ):
            now = at.batch if name == "batch" else at.seq
            if now == value:
                continue
            seen = perform(page, server, output, name, value, options=options)
            at = at.set(name, value)
            want = f"step {fmt_time(at.mapping().time_s)}"
            assert seen["svg_changed"], f"{move}: {name} -> {value}: the chart did not change"
            assert REFUSAL not in seen["text"], f"{move}: {name} -> {value}: refused"
            assert want in seen["text"], f"{move}: {name} -> {value}: no '{want}'"
        assert (at.batch, at.seq) == (b1, s1), (move, at)
        lines.append(f"drag {move.slider} {move.start}->{move.end}")
    return lines
