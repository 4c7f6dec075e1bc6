"""Self-check functions for the lessons' exercises.

Every exercise follows the spec / stub / check triad: the lesson states the task, the learner
fills in a stub, and a ``check_...`` function from this package compares the answer with what the
library computes (answers are never typed into a notebook). A check returns a
:class:`CheckResult` with a readable repr that never shows the expected value: a hint at the first
wrong try, a graded second hint after, the answer only through :func:`reveal` (or the result's
``reveal()``). With ``strict=True`` (or when
``WORKBENCH_STRICT_CHECKS=1``) a wrong answer raises :class:`ExerciseError`.

Lesson text with a number or a direction in it is a :class:`Claim` computed by a lesson module,
and a chart outside a widget a :class:`Figure` (static SVG), so both follow the library. The
sentences of lessons 01 to 14 are templates in ``text/<lesson>.yaml`` (see :mod:`._text`):
the module computes the values, the file holds the words.

Each lesson has a module (``lesson01`` ... ``lesson05``) with its checks and the small tables
its cells display.
"""

from workbench.exercises import lesson01, lesson02, lesson03, lesson04, lesson05
from workbench.exercises._check import CheckResult, ExerciseError, compare, reveal
from workbench.exercises._claims import Claim
from workbench.exercises._figures import Figure

__all__ = [
    "CheckResult",
    "Claim",
    "ExerciseError",
    "Figure",
    "compare",
    "lesson01",
    "lesson02",
    "lesson03",
    "lesson04",
    "lesson05",
    "reveal",
]
