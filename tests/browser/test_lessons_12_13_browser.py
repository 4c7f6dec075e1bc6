"""Lessons 12 and 13 in a real browser at 1,366 x 768 with the file browser open (issue 12).

Their widgets have dropdowns, not sliders: Run All, check that no output element is wider than
its cell, then pick another option in one dropdown and check that the chart redraws (a
MutationObserver on the chart sees it change).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import open_and_run, too_wide, widget_outputs

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser

WATCH = """(root) => {
    const target = root.querySelector('.vega-embed') || root;
    window.__wb13 = {n: 0};
    const obs = new MutationObserver(() => { window.__wb13.n += 1; });
    obs.observe(target, {subtree: true, childList: true, attributes: true, characterData: true});
    window.__wb13.obs = obs;
}"""
READ = "() => { window.__wb13.obs.disconnect(); return window.__wb13.n; }"

# lesson -> (dropdown label, option to pick)
CASES = {
    "12-the-bandwidth-lens": ("level", "l2"),
    "13-dataflows-and-energy": ("layer", "alexnet conv1"),
}


@pytest.mark.parametrize("lesson", list(CASES), ids=lambda n: n[:2])
def test_dropdown_lesson_fits_and_redraws(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    label, option = CASES[lesson]
    try:
        open_and_run(page, base, token, f"lessons/{lesson}.ipynb")
        wide = too_wide(page)
        output = widget_outputs(page).first
        output.scroll_into_view_if_needed()
        select = output.locator(f".widget-dropdown:has(label:text-is('{label}')) select").first
        assert select.input_value() != option
        output.evaluate(WATCH)
        select.select_option(option)
        page.wait_for_selector(
            ".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached"
        )
        page.wait_for_timeout(1500)
        mutations = page.evaluate(READ)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson[:2]}-1366.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson[:2]}-failure.png"), full_page=True)
        raise
    assert not wide, f"{lesson}: elements wider than their cell at 1366 px: {wide}"
    assert mutations > 0, f"{lesson}: the chart did not redraw after {label} -> {option}"
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
