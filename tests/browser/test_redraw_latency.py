"""Slider or dropdown -> redrawn chart in the widget lessons, timed in the page (issue 12).

For each lesson one control is stepped back and forth (a slider by key presses, a dropdown by
picking an option); a MutationObserver on the chart stamps every change with
``performance.now()``; the latency of one step is the last chart mutation minus the user's
action. The test prints ``REDRAW <lesson> ...`` lines with p50/p95 and the spread over settings
shown before, and each first visit of a new setting apart; it asserts only that every step
redrew (no timing in assertions); ``benchmarks/bench_browser.py`` runs it and reports the
percentiles against the goal (p95 < 300 ms on 2 cores).

Lesson 12 also times one model change (a model not mapped yet: seconds, announced by the
panel's "computing" line), reported as ``SLOW`` and kept out of the percentiles.

The same run is these lessons' layout check (no output wider than its cell at 1,366 px with the
file browser open; a screenshot in ``test-artifacts/``), so each is opened once in the suite.

The check is in ``_redraw.py``; lessons 12 and 13 run from ``test_redraw_latency_b.py`` (two
files, so ``--dist loadfile`` runs them beside 01, 10 and 11).

Environment: ``WORKBENCH_REDRAW_STEPS`` (steps per lesson, default 10; the benchmark uses 20),
``WORKBENCH_REDRAW_LESSONS`` (comma-separated lesson numbers, default all).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _redraw import CASES, FIRST_FILE, WANTED, check_redraw

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lesson", [w for w in CASES if w in WANTED and w in FIRST_FILE])
def test_redraw_latency(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    check_redraw(page, errors, base, token, lesson)
