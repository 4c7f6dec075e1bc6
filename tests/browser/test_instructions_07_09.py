"""Lessons 07 and 09: the panel's and the lab's instructions performed in JupyterLab (issue 20).

Each lesson is opened and run once here (no longer in ``_lesson_checks``): the issue-12 width
check, then its steps. Lesson 09: every ``lab_steps()`` slider move on its TilingLab (arrow
keys), each redrawing the chart to the prediction the lesson's claim states, then **Measure**
(a measured time appears). Lesson 07: ``panel_steps()`` on its TriagePanel's scenario dropdown,
each rewriting the headline to the triage the claim was computed from.
"""

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import open_and_run
from _steps import check_layout, perform, widget_output

from workbench._format import fmt_time
from workbench.exercises import lesson07, lesson09
from workbench.ui.tiling_lab import TILE_SIZES

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _shot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=name.endswith("failure.png"))


def test_every_lab_instruction_redraws_to_the_claimed_prediction(jupyterlab, laptop_page):
    page, errors = laptop_page
    base, token = jupyterlab
    path = "lessons/09-scheduling-vs-autotuning.ipynb"
    steps = lesson09.lab_steps()
    try:
        open_and_run(page, base, token, path)
        check_layout(page, "09")
        output = widget_output(page, "TilingLab(")
        for step in steps:
            i = ("tile_m", "tile_n", "tile_k").index(step.control)
            options = tuple(sorted({*TILE_SIZES, step.before[i]}))
            seen = perform(page, (base, token, path), output, step.control, step.value,
                           options=options)  # fmt: skip
            want = f"predicted {fmt_time(lesson09.lab_prediction(step.after)[1].total_s)}"
            assert seen["svg_changed"], f"{step}: the chart's SVG did not change"
            assert seen["mutations"] > 0, f"{step}: no redraw after the key presses"
            assert want in seen["text"], f"{step}: no '{want}' in the lab's summary"
        output.locator("button", has_text="Measure").first.click()
        page.wait_for_function(
            # the median with its p10-p90 interval over the repeats (issue 28)
            r"(el) => /measured median [0-9.]+ ms \(p10-p90 [0-9.]+-[0-9.]+ ms, 7 runs\) on /"
            ".test(el.innerText)",
            arg=output.element_handle(),
        )
        _shot(page, "lesson09-1366.png")
    except Exception:
        _shot(page, "lesson09-failure.png")
        raise
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)


def test_every_panel_instruction_rewrites_the_headline(jupyterlab, laptop_page):
    page, errors = laptop_page
    base, token = jupyterlab
    path = "lessons/07-senior-design-review.ipynb"
    try:
        t0 = time.monotonic()
        open_and_run(page, base, token, path)
        check_layout(page, "07")
        output = widget_output(page, "TriagePanel(", chart=False)
        for step in lesson07.panel_steps():
            seen = perform(page, (base, token, path), output, "scenario", step.after, chart=False)
            r = lesson07.panel_report(step.after)
            b, c = (x.model.time_s * 1e6 for x in (r.baseline, r.candidate))
            assert f"{b:.1f} → {c:.1f} us" in seen["text"], (step, seen["text"][:300])
            assert r.first_failing.mechanism in seen["text"]
            assert f"decision: {r.decision}" in seen["text"]
        _shot(page, "lesson07-1366.png")
    except Exception:
        _shot(page, "lesson07-failure.png")
        raise
    print(f"\n07: run all and the panel step in {time.monotonic() - t0:.1f} s")
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
