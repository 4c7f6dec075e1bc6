"""Lessons 08 and 10-13: every widget instruction is wired to the page check that performs it.

The moves themselves run inside the browser checks that already have each lesson open
(``_instructions_08_13.py``, called through ``_instruction_hooks.py`` by ``_lesson_checks.py``
for 08 and by ``_redraw.py`` for 10-13), so this file opens no lesson: it checks, without a
browser, that each of these lessons has a performer, that the check which opens the lesson calls
it, and that the performer's moves are the lesson module's own (issue 20).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _instructions_08_13 as perf
from _instruction_hooks import performed_lessons
from _lesson_checks import WIDGET_LESSONS
from _redraw import CASES

from workbench.exercises import lesson08, lesson10, lesson11, lesson12, lesson13

MINE = ("08", "10", "11", "12", "13")


def test_each_lesson_has_a_performer_on_a_page_already_open():
    assert set(MINE) <= performed_lessons()
    opened = {n[:2] for n in WIDGET_LESSONS} | set(CASES)
    assert set(MINE) <= opened  # the performer runs where the lesson is open already


@pytest.mark.parametrize(
    ("lesson", "moves"),
    [
        ("10", lesson10.widget_moves()),
        ("11", lesson11.widget_moves()),
        ("12", lesson12.widget_moves()),
        ("13", lesson13.widget_moves()),
    ],
)
def test_the_page_performs_the_lesson_modules_moves(lesson, moves):
    assert perf.MOVES[lesson]() == moves
    assert all(m.widget in ("LatencyPanel", "LensPanel", "DataflowPanel") for m in moves)


def test_lesson08_page_moves_are_its_drags_then_its_explorer_moves():
    page = perf.MOVES["08"]()
    drags = lesson08.widget_moves("llama2-7b", "h100-sxm", batch=8)
    assert [(m.control, m.start, m.end) for m in page[:2]] == [
        (d.slider, d.start, d.end) for d in drags
    ]
    assert page[2:] == lesson08.explorer_moves()
    assert sum(m.refused for m in page) == 2
