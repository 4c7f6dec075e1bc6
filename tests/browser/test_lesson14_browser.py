"""Lesson 14 in JupyterLab: Run All, no output wider than its cell at 1,366 px, and one step of
the SparsityPanel's density slider redraws its chart, with no JavaScript errors."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lesson_checks import check_widget_lesson

pytestmark = pytest.mark.browser


def test_lesson14_fits_and_redraws(jupyterlab, laptop_page):
    page, errors = laptop_page
    base, token = jupyterlab
    check_widget_lesson(page, errors, base, token, "14-sparsity-on-spatial-arrays")
