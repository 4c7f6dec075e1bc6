"""The result type and comparison shared by every lesson's self-checks."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from workbench.errors import WorkbenchError

__all__ = ["CheckResult", "ExerciseError", "compare"]


class ExerciseError(WorkbenchError):
    """A self-check failed in strict mode."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """Outcome of one self-check.

    Attributes:
        name: Which exercise.
        passed: Whether the answer matched.
        expected: What the library computed.
        got: What the learner gave.
        hint: What to look at when it did not match.
    """

    name: str
    passed: bool
    expected: object
    got: object
    hint: str = ""

    def __repr__(self) -> str:
        if self.got is None and not self.passed:
            # NOTE: an untouched stub (``answer = None``) must not reveal the expected value.
            return f"{self.name}: no answer yet (replace None in the exercise cell)"
        mark = "correct" if self.passed else "not yet"
        text = f"{self.name}: {mark} (expected {self.expected!r}, got {self.got!r})"
        return text if self.passed or not self.hint else f"{text}; hint: {self.hint}"

    def __bool__(self) -> bool:
        return self.passed


def _strict_default() -> bool:
    return os.environ.get("WORKBENCH_STRICT_CHECKS", "") not in ("", "0")


def compare(
    name: str,
    got: object,
    expected: object,
    *,
    rel_tol: float = 1e-6,
    hint: str = "",
    strict: bool | None = None,
) -> CheckResult:
    """Compare an answer with the library's value (numbers within ``rel_tol``).

    Args:
        name: Exercise name shown in the result.
        got: The learner's answer.
        expected: The value the library computed.
        rel_tol: Relative tolerance for numbers.
        hint: Shown when the answer is wrong.
        strict: Raise on a wrong answer (default: ``WORKBENCH_STRICT_CHECKS`` env var).

    Returns:
        The :class:`CheckResult`.

    Raises:
        ExerciseError: In strict mode, when the answer is wrong.

    >>> compare("flops", 8, 8).passed
    True
    """
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        ok = math.isclose(float(got), float(expected), rel_tol=rel_tol, abs_tol=1e-12)
    else:
        ok = got == expected
    result = CheckResult(name=name, passed=ok, expected=expected, got=got, hint=hint)
    if not ok and (_strict_default() if strict is None else strict):
        raise ExerciseError(repr(result))
    return result
