"""The widget instructions of lessons 08, 10, 11, 12 and 13, performed on the page (issue 20).

Each instruction is data in its lesson module (:class:`workbench.exercises._moves.ControlMove`,
and lesson 08's slider drags, :func:`workbench.exercises.lesson08.widget_moves`). On a lesson the
browser suite already has open and run (``_lesson_checks.py`` for 08, ``_redraw.py`` for 10-13,
through ``_instruction_hooks.py``), each move sets its start state on the widget's controls, then
moves the one control, and checks: (a) the charts' SVG changed, and no refusal line shows, or,
for a move that teaches a refusal, the refusal line shows; (b) the control reads the end value.
Nothing here opens a lesson; each move waits for the kernel, never a fixed redraw time. The unit
twin, on the widget objects, is ``tests/unit/exercises/test_moves_08_10_11_12_13.py``.
"""

import time

from _lab import wait_kernel_idle

from workbench.exercises import lesson08, lesson10, lesson11, lesson12, lesson13
from workbench.exercises._moves import ControlMove

IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
CHARTS = "(root) => [...root.querySelectorAll('.vega-embed svg')].map(s => s.outerHTML).join('')"
#: What each widget prints instead of a result when it refuses a setting.
REFUSAL = {
    "MappingExplorer": "no step time:",
    "LatencyPanel": "not drawn:",
    "LensPanel": "not drawn:",
}


def _lesson08_moves() -> tuple[ControlMove, ...]:
    """Lesson 08's slider drags (its widget_claim, batch 8) and its other explorer moves."""
    drags = []
    for m in lesson08.widget_moves("llama2-7b", "h100-sxm", batch=8):
        held = ("batch", m.batch) if m.slider == "seq" else ("seq", m.seq)
        drags.append(ControlMove(widget="MappingExplorer", control=m.slider, start=m.start,
                                 end=m.end, setting=(("phase", "decode"), held)))  # fmt: skip
    return (*drags, *lesson08.explorer_moves())


MOVES = {
    "08": _lesson08_moves,
    "10": lesson10.widget_moves,
    "11": lesson11.widget_moves,
    "12": lesson12.widget_moves,
    "13": lesson13.widget_moves,
}


def _slider(output, name):
    return output.locator(f".widget-slider:has(label:text-is('{name}'))").first


def _dropdown(output, name):
    return output.locator(f".widget-dropdown:has(label:text-is('{name}')) select").first


def _checkbox(output, name):
    return output.locator(f".widget-checkbox:has(span:text-is('{name}')) input").first


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _value(output, name):
    """The control's value as the page shows it (None: no such control here)."""
    if _dropdown(output, name).count():
        return _dropdown(output, name).input_value()
    if _slider(output, name).count():
        return _number(_slider(output, name).locator(".widget-readout").inner_text())
    if _checkbox(output, name).count():
        return _checkbox(output, name).is_checked()
    active = output.locator(".widget-toggle-buttons button.mod-active")
    return active.first.inner_text().strip() if active.count() else None


def _same(shown, value) -> bool:
    if isinstance(value, bool) or isinstance(shown, bool):
        return shown is value
    if isinstance(value, int | float):
        return shown is not None and abs(float(shown) - value) <= 1e-6 * max(1.0, abs(value))
    return shown == value


def _step(page, output, name, value) -> None:
    """Arrow keys on slider ``name`` until its readout shows ``value``."""
    slider = _slider(output, name)
    readout = slider.locator(".widget-readout")
    handle = slider.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(16):
        now = _number(readout.inner_text())
        if _same(now, value):
            return
        page.keyboard.press("ArrowRight" if value > now else "ArrowLeft")
        deadline = time.monotonic() + 20
        while _number(readout.inner_text()) == now and time.monotonic() < deadline:
            page.wait_for_timeout(30)
    raise AssertionError(f"slider {name} never reached {value}")


def _set(page, output, server, move: ControlMove, name: str, value) -> None:
    """Set one control on the page, then wait until the kernel has handled it."""
    shown = _value(output, name)
    if _same(shown, value):
        return
    if _dropdown(output, name).count():
        _dropdown(output, name).select_option(str(value))
    elif _slider(output, name).count():
        _step(page, output, name, value)  # NOTE: every instructed value is a slider position
    elif _checkbox(output, name).count():
        _checkbox(output, name).click()
    else:
        output.locator(f".widget-toggle-buttons button:text-is('{value}')").first.click()
    page.wait_for_timeout(200)  # the change reaches the kernel
    page.wait_for_selector(IDLE, state="attached")
    wait_kernel_idle(*server, timeout_s=180)


def _label(move: ControlMove, control: str) -> str:
    """The on-screen name of ``control`` (the move's label for its own control)."""
    if control == move.control:
        return move.name
    return {"max_batch": "max batch", "sla_ms": "SLA ms"}.get(control, control)


def perform(page, output, lesson, server) -> list[str]:
    """Perform every instruction of ``lesson`` on its open widget ``output``; one line each."""
    lines = []
    for move in MOVES[lesson]():
        t0 = time.monotonic()
        for control, value in move.state().items():
            _set(page, output, server, move, _label(move, control), value)
        before = output.evaluate(CHARTS)
        _set(page, output, server, move, move.name, move.end)
        refusal = REFUSAL.get(move.widget)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = output.inner_text()
            if (refusal in text) if move.refused else (output.evaluate(CHARTS) != before):
                break
            page.wait_for_timeout(100)
        text = output.inner_text()
        what = f"{lesson}: {move.name} {move.start} -> {move.end}"
        assert _same(_value(output, move.name), move.end), f"{what}: control not at the end"
        if move.refused:
            assert refusal in text, f"{what}: the refusal it teaches is not on screen"
        else:
            assert output.evaluate(CHARTS) != before, f"{what}: the chart did not change"
            assert not refusal or refusal not in text, f"{what}: refused: {text[:300]}"
        lines.append(f"{what} ({time.monotonic() - t0:.1f} s{', refused' if move.refused else ''})")
    return lines


#: The hook's entry point: lesson -> performer (see ``_instruction_hooks.py``).
PERFORM = dict.fromkeys(MOVES, perform)
