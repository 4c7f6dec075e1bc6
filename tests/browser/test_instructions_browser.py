"""Every drag a lesson instructs, performed on its MappingExplorer in a real browser (issue 20).

Lessons 01, 02 and 08 call ``lesson08.widget_claim(model, hw, batch=...)``; the drags it
describes are :func:`workbench.exercises.lesson08.widget_moves` (the instructions as data).
Lesson 02's are performed by ``test_instructions_02_04_05.py`` and lesson 08's by
``_instructions_08_13.py``, on the lessons those tests already have open. For lesson 01: Run All
(one kernel), find the cell that builds the explorer, switch it to decode, set the held slider and
the start (arrow keys on the slider handle), then press the arrow key on the instructed slider
until it reaches the instructed end. After each drag: (a) the chart's SVG markup changed and a
MutationObserver saw it redraw, (b) the explorer shows no refusal ("no step time:", its refusal
prefix in ``MappingExplorer.update``), (c) the slider reads the end value.
``tests/unit/exercises/test_widget_moves.py`` does the same on the widget objects.
"""

import json
import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import READ, WATCH, open_and_run, wait_kernel_idle

from workbench.exercises import lesson08
from workbench.ui.explorer import BATCHES, SEQS

pytestmark = pytest.mark.browser

LESSONS = Path(__file__).resolve().parents[2] / "lessons"
CALL = re.compile(r'widget_claim\("([\w.-]+)", "([\w.-]+)", batch=(\d+)\)')
REFUSAL = "no step time:"
OPTIONS = {"seq": SEQS, "batch": BATCHES}
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
CHARTS = "(root) => [...root.querySelectorAll('.vega-embed svg')].map(s => s.outerHTML).join('')"


def _instruction(prefix: str) -> tuple[str, tuple[str, str, int]]:
    """The lesson's notebook path and its single ``widget_claim`` call's arguments."""
    (nb,) = LESSONS.glob(f"{prefix}-*.ipynb")
    calls = [
        (m[1], m[2], int(m[3]))
        for cell in json.loads(nb.read_text())["cells"]
        for m in CALL.finditer("".join(cell["source"]))
    ]
    assert len(calls) == 1, f"{nb.name}: expected one widget_claim call, found {calls}"
    return f"lessons/{nb.name}", calls[0]


def _slider(output, name):
    return output.locator(f".widget-slider:has(label:text-is('{name}'))").first


def _readout(output, name) -> int:
    return int(_slider(output, name).locator(".widget-readout").inner_text().replace(",", ""))


def _settle(page, base, token, path, settle_ms=1000):
    page.wait_for_timeout(300)  # the last change reaches the kernel
    page.wait_for_selector(IDLE, state="attached")
    wait_kernel_idle(base, token, path)
    page.wait_for_timeout(settle_ms)  # the redraw burst finishes


def _drag(page, output, name, value) -> int:
    """Step slider ``name`` to ``value`` with arrow keys; return the number of key presses."""
    opts = OPTIONS[name]
    now = _readout(output, name)
    steps = opts.index(value) - opts.index(now)
    handle = _slider(output, name).locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(abs(steps)):
        before = _readout(output, name)
        page.keyboard.press("ArrowRight" if steps > 0 else "ArrowLeft")
        deadline = time.monotonic() + 10
        while _readout(output, name) == before and time.monotonic() < deadline:
            page.wait_for_timeout(30)
    return abs(steps)


def _explorer_output(page):
    cells = page.locator(".jp-CodeCell").filter(
        has=page.locator(".jp-InputArea", has_text="MappingExplorer(")
    )
    assert cells.count() == 1, f"expected one cell building a MappingExplorer, {cells.count()}"
    output = cells.first.locator(".jp-OutputArea-output:has(.vega-embed svg)").first
    output.scroll_into_view_if_needed()
    return output


# NOTE: lessons 02 and 08 have their drags performed on the lessons other browser tests already
# have open (test_instructions_02_04_05.py, _instructions_08_13.py), so they are not opened here.
@pytest.mark.parametrize("lesson", ["01"])
def test_every_instructed_drag_redraws_without_refusal(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    path, (model, hw, batch) = _instruction(lesson)
    moves = lesson08.widget_moves(model, hw, batch=batch)
    t_start = time.monotonic()
    open_and_run(page, base, token, path)
    t_ran = time.monotonic()
    output = _explorer_output(page)
    decode = output.locator(".widget-toggle-buttons button", has_text="decode").first
    if "mod-active" not in (decode.get_attribute("class") or ""):
        decode.click()
        _settle(page, base, token, path)
    lines = []
    for move in moves:
        (b0, s0), (b1, s1) = move.settings()
        _drag(page, output, "batch", b0)  # the setting the instruction starts from
        _drag(page, output, "seq", s0)
        _settle(page, base, token, path)
        assert (_readout(output, "batch"), _readout(output, "seq")) == (b0, s0), move
        assert REFUSAL not in output.inner_text(), f"{lesson}: the start {move} is refused"
        chart_before = output.evaluate(CHARTS)
        output.evaluate(WATCH, "keydown")
        t0 = time.monotonic()
        presses = _drag(page, output, move.slider, move.end)
        _settle(page, base, token, path)
        seen = page.evaluate(READ)
        chart_after = output.evaluate(CHARTS)
        text = output.inner_text()
        lines.append(
            f"{move.slider} {move.start}->{move.end} ({presses} presses, "
            f"{seen['n']} chart mutations, {time.monotonic() - t0:.1f} s)"
        )
        assert presses > 0, f"{lesson}: {move} asks for no drag"
        assert chart_after != chart_before, f"{lesson}: {move}: the chart's SVG did not change"
        assert seen["n"] > 0, f"{lesson}: {move}: no mutation of the chart after the key presses"
        assert REFUSAL not in text, f"{lesson}: {move}: the explorer refused: {text[:300]}"
        assert _readout(output, move.slider) == move.end, f"{lesson}: {move}: slider not at end"
        assert (_readout(output, "batch"), _readout(output, "seq")) == (b1, s1), move
    print(
        f"\n{lesson} ({model} on {hw}, batch={batch}): run all {t_ran - t_start:.1f} s; "
        + "; ".join(lines)
    )
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
