"""The per-lesson browser checks of issue 12, shared by the two lesson files (split so that
``--dist loadfile`` can run them on two workers at once; every lesson is still checked)."""

from pathlib import Path

from _instruction_hooks import perform_instructions
from _lab import open_and_run, step_slider, too_wide, widget_outputs

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Lessons with a charted widget (MappingExplorer, TilingLab or LatencyPanel) not checked by the
# redraw-latency test: that test runs the same layout check on 01, 10, 11, 12 and 13 while it
# has them open (``_redraw.py``), so no lesson is opened and run twice for it. Lessons 02, 04,
# 05 and 09 get the same checks in ``test_instructions_02_04_05.py`` and
# ``test_instructions_07_09.py``, which perform their instructions while they are open.
WIDGET_LESSONS = [
    "03-tiling-and-wave-quantization",
    "08-attention-and-bandwidth",
]

# Lessons whose widget is H5's TriagePanel (no chart): the width check, and one interaction (a
# different scenario in its dropdown rewrites the panel). Lesson 07: ``test_instructions_07_09``.
TRIAGE_LESSONS = ["06-regression-triage"]


def check_widget_lesson(page, errors, base, token, lesson):
    """Run All, then no output wider than its cell, and one slider step redraws the chart."""
    try:
        open_and_run(page, base, token, f"lessons/{lesson}.ipynb")
        wide = too_wide(page)
        output = widget_outputs(page).first
        output.scroll_into_view_if_needed()
        timing = step_slider(page, output)
        # the lesson's instructions, on the widget already open (issue 20)
        server = (base, token, f"lessons/{lesson}.ipynb")
        for line in perform_instructions(page, output, lesson[:2], server):
            print(f"\nINSTRUCTION {line}")
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


def check_triage_lesson(page, errors, base, token, lesson):
    """Run All, then no output wider than its cell, and a new scenario rewrites the panel."""
    open_and_run(page, base, token, f"lessons/{lesson}.ipynb")
    wide = too_wide(page)
    output = page.locator(".jp-OutputArea-output:has(.widget-vbox):has(select)").first
    output.scroll_into_view_if_needed()
    select = output.locator(".widget-dropdown:has(label:text-is('scenario')) select").first
    options = select.locator("option").all_text_contents()  # NOTE: innerText is "" off screen
    before_value = select.input_value()
    before_text = output.inner_text()
    target = next(o for o in options if o != before_value and not o.startswith("("))
    select.select_option(target)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    page.wait_for_function(
        "([el, t]) => el.innerText !== t", arg=[output.element_handle(), before_text]
    )
    # the lesson's instructions, on the panel already open (issue 20)
    server = (base, token, f"lessons/{lesson}.ipynb")
    for line in perform_instructions(page, output, lesson[:2], server):
        print(f"\nINSTRUCTION {line}")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"lesson{lesson[:2]}-1366.png"))
    assert not wide, f"{lesson}: elements wider than their cell at 1366 px: {wide}"
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
