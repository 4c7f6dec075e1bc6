"""The rest of the lesson browser checks of ``test_lessons_browser.py`` (issue 12): the other
widget lesson, and the TriagePanel lesson 06 (the width check, and a different scenario in the
dropdown rewrites the panel)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lesson_checks import TRIAGE_LESSONS, WIDGET_LESSONS, check_triage_lesson, check_widget_lesson

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lesson", WIDGET_LESSONS[1:], ids=lambda n: n[:2])
def test_lesson_fits_and_redraws(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    check_widget_lesson(page, errors, base, token, lesson)


@pytest.mark.parametrize("lesson", TRIAGE_LESSONS, ids=lambda n: n[:2])
def test_triage_lesson_fits_and_responds(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    check_triage_lesson(page, errors, base, token, lesson)
