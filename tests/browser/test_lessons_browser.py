"""Widget lessons in a real browser at 1,366 x 768 with the file browser open (issue 12).

For each lesson: Run All, then (1) no output element is wider than its cell (wide rows must
wrap or stack, charts fit the container), and (2) one interaction: a key press on the widget's
first slider changes its value and the chart redraws (a MutationObserver in the page sees the
chart change). Timings are printed for information only; ``benchmarks/bench_browser.py``
reports their percentiles. Screenshots go to ``test-artifacts/``.

The first widget lesson is here; the other and the triage lesson are in
``test_lessons_browser_b.py`` (two files, so ``--dist loadfile`` runs them side by side).
Lessons 01, 10, 11, 12 and 13 get the same layout check in the redraw-latency test, which has
them open already (``_redraw.py``); 02, 04, 05, 07 and 09 in the instruction tests
(``test_instructions_02_04_05.py``, ``test_instructions_07_09.py``).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lesson_checks import WIDGET_LESSONS, check_widget_lesson

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lesson", WIDGET_LESSONS[:1], ids=lambda n: n[:2])
def test_lesson_fits_and_redraws(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    check_widget_lesson(page, errors, base, token, lesson)
