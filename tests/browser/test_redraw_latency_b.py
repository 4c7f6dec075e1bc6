"""Redraw latency of the dropdown lessons (12, 13): the rest of ``test_redraw_latency.py``."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _redraw import CASES, FIRST_FILE, WANTED, check_redraw

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lesson", [w for w in CASES if w in WANTED and w not in FIRST_FILE])
def test_redraw_latency(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    check_redraw(page, errors, base, token, lesson)
