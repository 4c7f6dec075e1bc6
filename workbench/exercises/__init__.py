"""Self-check functions for the lessons' exercises.

Every exercise follows the spec / stub / check triad: the lesson states the task, the learner
fills in a stub, and a ``check_...`` function from this package compares the answer with what the
library computes (answers are never typed into a notebook). A check returns a
:class:`CheckResult` with a readable repr; with ``strict=True`` (the default under nbval, or when
``WORKBENCH_STRICT_CHECKS=1``) a wrong answer raises :class:`ExerciseError`.
"""

from workbench.exercises._check import CheckResult, ExerciseError, compare

__all__ = ["CheckResult", "ExerciseError", "compare"]
