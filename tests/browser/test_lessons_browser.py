"""Every widget lesson in a real browser at 1,366 x 768 with the file browser open (issue 12).

For each lesson: Run All, then (1) no output element is wider than its cell (wide rows must
wrap or stack, charts fit the container), and (2) one interaction: a key press on the widget's
first slider changes its value and the chart redraws (a MutationObserver in the page sees the
chart change). Timings are printed for information only; ``benchmarks/bench_browser.py``
reports their percentiles. Screenshots go to ``test-artifacts/``.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import open_and_run, step_slider, too_wide, widget_outputs

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser

# Lessons with a charted widget (MappingExplorer, TilingLab or LatencyPanel).
WIDGET_LESSONS = [
    "01-operators-to-flops-and-bytes",
    "02-hardware-model-and-roofline",
    "03-tiling-and-wave-quantization",
    "04-fusion-boundaries",
    "05-quantization-and-layouts",
    "08-attention-and-bandwidth",
    "09-scheduling-vs-autotuning",
    "10-latency-throughput-tails",
    "11-choosing-a-platform",
]


@pytest.mark.parametrize("lesson", WIDGET_LESSONS, ids=lambda n: n[:2])
def test_lesson_fits_and_redraws(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    try:
        open_and_run(page, base, token, f"lessons/{lesson}.ipynb")
        wide = too_wide(page)
        output = widget_outputs(page).first
        output.scroll_into_view_if_needed()
        timing = step_slider(page, output)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson[:2]}-1366.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson[:2]}-failure.png"), full_page=True)
        raise
    print(
        f"\n{lesson[:2]}: slider {timing['value_before']} -> {timing['value_after']}, chart "
        f"redrawn {timing['first_ms']} .. {timing['last_ms']} ms after the key press"
    )
    assert not wide, f"{lesson}: elements wider than their cell at 1366 px: {wide}"
    assert timing["value_after"] != timing["value_before"], "the slider did not step"
    assert timing["mutations"] > 0, "the chart did not redraw after the slider stepped"
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)


# Lessons whose widget is H5's TriagePanel (no chart): the width check, and one interaction (a
# different scenario in its dropdown rewrites the panel).
TRIAGE_LESSONS = ["06-regression-triage", "07-senior-design-review"]


@pytest.mark.parametrize("lesson", TRIAGE_LESSONS, ids=lambda n: n[:2])
def test_triage_lesson_fits_and_responds(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    open_and_run(page, base, token, f"lessons/{lesson}.ipynb")
    wide = too_wide(page)
    output = page.locator(".jp-OutputArea-output:has(.widget-vbox):has(select)").first
    output.scroll_into_view_if_needed()
    select = output.locator(".widget-dropdown:has(label:text-is('scenario')) select").first
    options = select.locator("option").all_inner_texts()
    before_value = select.input_value()
    before_text = output.inner_text()
    target = next(o for o in options if o != before_value and not o.startswith("("))
    select.select_option(target)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    page.wait_for_function(
        "([el, t]) => el.innerText !== t", arg=[output.element_handle(), before_text]
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"lesson{lesson[:2]}-1366.png"))
    assert not wide, f"{lesson}: elements wider than their cell at 1366 px: {wide}"
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
