"""Performing a lesson's instruction steps on its open widget in JupyterLab (issue 20).

Each step is one control change on the widget the lesson already shows (no new lesson opened):
a toggle button, a dropdown, a checkbox, or a slider stepped with arrow keys. After it the page
must show the redrawn chart (a MutationObserver saw it change and its SVG differs), no refusal,
and the figure the step's claim was computed from (the explorer's step time, the lab's
prediction, the panel's headline). Shared by ``test_instructions_02_04_05.py`` and
``test_instructions_07_09.py``.
"""

import time

from _lab import READ, WATCH, settle, too_wide, wait_kernel_idle

IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
CHARTS = "(root) => [...root.querySelectorAll('.vega-embed svg')].map(s => s.outerHTML).join('')"
REFUSAL = "no step time:"


def widget_output(page, builds: str, *, chart: bool = True):
    """The output of the one code cell whose source contains ``builds`` (e.g. ``"TilingLab("``)."""
    cells = page.locator(".jp-CodeCell").filter(has=page.locator(".jp-InputArea", has_text=builds))
    assert cells.count() == 1, f"expected one cell with {builds!r}, found {cells.count()}"
    has = ".vega-embed svg" if chart else "select"
    output = cells.first.locator(f".jp-OutputArea-output:has({has})").first
    output.scroll_into_view_if_needed()
    return output


def slider(output, name):
    """The slider labelled ``name`` in ``output``."""
    return output.locator(f".widget-slider:has(label:text-is('{name}'))").first


def readout(output, name) -> str:
    """The slider's displayed value (thousands separators removed)."""
    return slider(output, name).locator(".widget-readout").inner_text().replace(",", "").strip()


def drag(page, output, name, value, options) -> int:
    """Step slider ``name`` to ``value`` with arrow keys through ``options``; returns presses."""
    now = readout(output, name)
    steps = [str(o) for o in options].index(str(value)) - [str(o) for o in options].index(now)
    handle = slider(output, name).locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(abs(steps)):
        before = readout(output, name)
        page.keyboard.press("ArrowRight" if steps > 0 else "ArrowLeft")
        deadline = time.monotonic() + 10
        while readout(output, name) == before and time.monotonic() < deadline:
            page.wait_for_timeout(30)
    return abs(steps)


def act(page, output, control: str, value, *, options=None) -> None:
    """Set one control of a widget as a student would: click, pick, tick or drag."""
    if options is not None:
        assert drag(page, output, control, value, options) > 0, (control, value)
    elif control == "phase":
        output.locator(".widget-toggle-buttons button", has_text=str(value)).first.click()
    elif isinstance(value, bool):
        box = output.locator(".widget-checkbox", has_text=control).locator("input").first
        assert box.is_checked() != value, f"{control} is already {value}"
        box.click()
    else:
        box = output.locator(f".widget-dropdown:has(label:text-is('{control}')) select").first
        box.scroll_into_view_if_needed()
        box.select_option(str(value))


def perform(page, server, output, control, value, *, options=None, chart=True) -> dict:
    """One step: act, wait for the kernel and the redraw; returns what changed.

    Returns:
        ``{"svg_changed", "mutations", "text", "seconds"}`` (the output's text after the step).
    """
    svg = output.evaluate(CHARTS)
    text = output.inner_text()
    if options is not None:
        event = "keydown"
    elif control == "phase" or isinstance(value, bool):
        event = "click"
    else:
        event = "change"
    output.evaluate(WATCH, event)
    t0 = time.monotonic()
    act(page, output, control, value, options=options)
    page.wait_for_timeout(300)  # the change reaches the kernel
    page.wait_for_selector(IDLE, state="attached")
    wait_kernel_idle(*server)
    if chart:
        settle(page, 3000, quiet_ms=400)
    else:
        page.wait_for_function(
            "([el, t]) => el.innerText !== t", arg=[output.element_handle(), text]
        )
    seen = page.evaluate(READ)
    return {
        "svg_changed": output.evaluate(CHARTS) != svg,
        "mutations": seen["n"],
        "text": output.inner_text(),
        "seconds": time.monotonic() - t0,
    }


def check_layout(page, lesson) -> None:
    """Issue 12's width check on the open lesson (no output wider than its cell)."""
    wide = too_wide(page)
    assert not wide, f"{lesson}: elements wider than their cell at 1366 px: {wide}"
