"""Lesson 06's panel instructions, performed on the lesson's open TriagePanel (issue 20).

The instructions are data, :data:`workbench.exercises.lesson06.PANEL_MOVES` (the lesson prints
each with ``lesson06.panel_move_claim``). ``check_triage_lesson`` reaches :func:`perform` through
``_instruction_hooks.py`` once lesson 06 has run, so no lesson is opened again. Each move first
puts the panel where the move starts (its ``start`` and ``setting``), then picks the move's
option in one of the panel's two dropdowns and waits for the panel to redraw: the panel shows a
refusal exactly when the move teaches one, and a scenario move declares that scenario's changed
group. ``tests/unit/exercises/test_lesson06.py`` does the same on the widget objects.
"""

from __future__ import annotations

import time

from _lab import wait_kernel_idle

from workbench.exercises import lesson06
from workbench.review import SCENARIOS

REFUSAL = "REFUSED"
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
CHANGED = "([el, t]) => el.innerText !== t"


def _box(output, label):
    return output.locator(f".widget-dropdown:has(label:text-is('{label}')) select").first


def _pick(page, output, server, label, value) -> str:
    """Select ``value`` in dropdown ``label``; wait for the redraw; return the panel's text."""
    box = _box(output, label)
    if box.input_value() == value:
        return output.inner_text()
    before = output.inner_text()
    box.scroll_into_view_if_needed()
    box.select_option(value)
    page.wait_for_function(CHANGED, arg=[output.element_handle(), before])
    page.wait_for_timeout(300)  # the rest of the update reaches the page
    wait_kernel_idle(*server)
    page.wait_for_selector(IDLE, state="attached")
    page.wait_for_timeout(300)
    return output.inner_text()


def perform(page, output, lesson, server) -> list[str]:
    """Perform every move of ``PANEL_MOVES`` in order; return one line per move (timings)."""
    wait_kernel_idle(*server)  # the width check's own scenario change has finished
    page.wait_for_timeout(500)
    lines = []
    for move in lesson06.PANEL_MOVES:
        # where the move starts: the scenario first (it resets the declared group), then the rest
        start = move.state()
        for label in sorted(start, key=lambda k: k != "scenario"):
            _pick(page, output, server, label, str(start[label]))
        t0 = time.monotonic()
        text = _pick(page, output, server, move.control, str(move.end))
        assert _box(output, move.control).input_value() == move.end, move
        assert (REFUSAL in text) is move.refused, f"{lesson}: {move}: {text[:300]}"
        if move.control == "scenario":
            assert _box(output, "changed").input_value() == SCENARIOS[str(move.end)].changed
        lines.append(f"{move.control} -> {move.end} ({time.monotonic() - t0:.1f} s)")
    return lines


PERFORM = {"06": perform}
