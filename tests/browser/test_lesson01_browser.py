"""Lesson 01 in a real browser: run all cells, move a slider, the chart redraws, no JS errors.

JupyterLab serves the repository; headless Debian Chromium (driven by Playwright) opens lesson 01,
runs every cell from the Run menu, waits for an idle kernel and the explorer's roofline ``svg``,
drags the explorer's ``batch`` slider, and checks that the slider's value and the chart's ``svg``
both changed. Uncaught page exceptions and console errors fail the test (none are ignored).
A screenshot is left in ``test-artifacts/lesson01.png``.
"""

import json
import time
import urllib.request
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

LESSON = "lessons/01-operators-to-flops-and-bytes.ipynb"
# Console errors that are expected and harmless offline. Keep this list explicit and short.
BENIGN: tuple[str, ...] = ()

pytestmark = pytest.mark.browser

ALL_CELLS_RAN = """() => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


def _wait_kernel_idle(base, token, timeout_s=60.0):
    """Wait until the server has a session for the lesson whose kernel is idle."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as resp:
            sessions = json.load(resp)
        states = [s["kernel"]["execution_state"] for s in sessions if s["path"] == LESSON]
        if states == ["idle"]:
            return
        time.sleep(0.25)
    pytest.fail(f"no idle kernel for {LESSON} after {timeout_s} s")


def _run_all(page, attempts=3):
    """Run > Run All Cells; again if the kernel was not connected yet and nothing started."""
    for _ in range(attempts):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        dialog = page.locator(".jp-Dialog .jp-mod-accept")
        if dialog.count():  # "Select Kernel": the session was still starting
            dialog.first.click()
        try:
            page.wait_for_function(STARTED, timeout=10_000)
            return
        except Exception:  # playwright's TimeoutError: the kernel was still connecting
            continue
    pytest.fail("Run All Cells did not start any cell")


STARTED = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""


def _svg(chart):
    return chart.evaluate("el => el.outerHTML")


def _wait_changed(read, before, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    now = read()
    while now == before and time.monotonic() < deadline:
        time.sleep(0.1)
        now = read()
    return now


def test_lesson01_runs_and_chart_follows_slider(jupyterlab, browser_page):
    page, errors = browser_page
    try:
        _drive(page, errors, *jupyterlab)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "lesson01-failure.png"), full_page=True)
        raise


def _drive(page, errors, base, token):
    page.set_default_timeout(60_000)
    page.goto(f"{base}/lab/tree/{LESSON}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", state="attached")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    _wait_kernel_idle(base, token)
    page.wait_for_timeout(500)  # the page's websocket to the kernel opens just after

    _run_all(page)
    page.wait_for_function(ALL_CELLS_RAN, timeout=60_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")

    output = page.locator(".jp-OutputArea-output:has(.widget-slider)").first
    chart = output.locator(".vega-embed svg").first
    chart.wait_for(state="attached")
    output.scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # let vega finish its first draw
    before = _svg(chart)

    slider = output.locator(".widget-slider:has(.widget-label:text-is('batch'))").first
    readout = slider.locator(".widget-readout")
    value_before = readout.inner_text()
    handle = slider.locator(".noUi-handle")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    assert box is not None, "batch slider handle is not laid out"
    # NOTE: one step (batch 1 -> 2): a long drag along the decade slider lands on a batch whose
    # KV cache does not fit the chip, which the explorer refuses without redrawing.
    handle.focus()
    page.keyboard.press("ArrowRight")

    assert _wait_changed(readout.inner_text, value_before) != value_before, "slider did not move"
    after = _wait_changed(lambda: _svg(chart), before)
    ARTIFACTS.mkdir(exist_ok=True)
    output.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "lesson01.png"))

    assert after != before, "the roofline svg did not re-render after the batch slider moved"
    real = [e for e in errors if not any(b in e for b in BENIGN)]
    assert not real, "JavaScript errors:\n" + "\n".join(real)
