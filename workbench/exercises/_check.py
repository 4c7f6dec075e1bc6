"""The result type and comparison shared by every lesson's self-checks.

A wrong answer never shows the expected value: the first wrong try gets the exercise's hint, the
second and later get a graded second hint (how far off, in which direction, and a more specific
pointer); the answer only on explicit request, :meth:`CheckResult.reveal` or :func:`reveal`.
Text answers match case- and
whitespace-insensitively and by the synonyms a check declares.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from workbench.errors import WorkbenchError

__all__ = ["CheckResult", "ExerciseError", "compare", "normalize_text", "reveal", "settled"]

#: Environment variable naming a file that each check appends one JSON line to (``workbench
#: grade`` sets it in the kernel it re-runs a notebook in; unset, nothing is written).
GRADE_LOG_ENV = "WORKBENCH_GRADE_LOG"


class ExerciseError(WorkbenchError):
    """A self-check failed in strict mode."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """Outcome of one self-check.

    Attributes:
        name: Which exercise.
        passed: Whether the answer matched.
        got: What the learner gave.
        hints: The hints shown for this try (empty when correct or unanswered).
        attempt: Wrong tries so far at this exercise in this session (0 when correct/unanswered).
        hints_used: Wrong tries (each showed hints) before this result, in this session.
        revealed: The answer was revealed (:func:`reveal`) before this check.
        expected: What the library computed; never in the repr, see :meth:`reveal`.
    """

    name: str
    passed: bool
    got: object
    hints: tuple[str, ...] = ()
    attempt: int = 0
    hints_used: int = 0
    revealed: bool = False
    expected: object = field(default=None, repr=False)

    @property
    def answered(self) -> bool:
        """False for an untouched stub (``None``, or a tuple of ``None``)."""
        return not _blank(self.got)

    @property
    def hint(self) -> str:
        """The hints of this try, joined (empty when none)."""
        return "; ".join(self.hints)

    def __repr__(self) -> str:
        if self.passed:
            return f"{self.name}: correct ({_show(self.got)}){self._help_note()}"
        if not self.answered:
            # NOTE: an untouched stub must not reveal the expected value.
            return f"{self.name}: no answer yet (replace None in the exercise cell)"
        text = f"{self.name}: not yet (got {_show(self.got)})"
        for i, h in enumerate(self.hints, start=1):
            text += f"\n  hint {i}: {h}"
        return text + "\n  (reveal() shows the answer)"

    def __bool__(self) -> bool:
        return self.passed

    def _help_note(self) -> str:
        """What help a correct answer had (``workbench grade`` reads it from the output)."""
        parts = []
        if self.hints_used:
            parts.append(
                f"after {self.hints_used} wrong {'try' if self.hints_used == 1 else 'tries'}"
            )
        if self.revealed:
            parts.append("answer revealed first")
        return f" [{'; '.join(parts)}]" if parts else ""

    def reveal(self) -> str:
        """The library's answer, on explicit request.

        >>> compare("ridge", 3, 4, strict=False).reveal()
        'ridge: the answer is 4'
        """
        # NOTE: a revealed exercise counts as settled (its gated claims show) and is recorded.
        _SETTLED.add(self.name)
        _REVEALED.add(self.name)
        return f"{self.name}: the answer is {_show(self.expected)}"


_ATTEMPTS: dict[str, int] = {}
_LAST: dict[str, CheckResult] = {}
#: Exercises answered correctly or revealed in this session: their gated claims show.
_SETTLED: set[str] = set()
_REVEALED: set[str] = set()


def settled(name: str) -> bool:
    """Whether exercise ``name`` was answered correctly or revealed in this session.

    A :class:`~workbench.exercises.Claim` that answers an exercise is shown only then.
    """
    return name in _SETTLED


def reveal(name: str | None = None) -> str:
    """The answer of the last checked exercise (or of ``name``), on explicit request.

    Args:
        name: Exercise name as shown in a check's result; default the last one checked.

    Returns:
        One line with the answer.

    Raises:
        ExerciseError: When no such exercise was checked in this session.
    """
    if not _LAST:
        raise ExerciseError("reveal(): no exercise has been checked in this session yet")
    key = name if name is not None else next(reversed(_LAST))
    if key not in _LAST:
        raise ExerciseError(
            f"reveal(): no exercise named {key!r} was checked (known: {list(_LAST)})"
        )
    return _LAST[key].reveal()


def normalize_text(text: object, synonyms: Mapping[str, Sequence[str]] | None = None) -> str:
    """Case-fold, collapse whitespace, map declared synonyms to their canonical form.

    >>> normalize_text("  Roll   Back ")
    'roll back'
    >>> normalize_text("rollback", {"roll back": ("rollback",)})
    'roll back'
    """
    norm = _fold(text)
    for canonical, alternates in (synonyms or {}).items():
        if norm in {_fold(a) for a in alternates}:
            return _fold(canonical)
    return norm


def _fold(text: object) -> str:
    """Case-fold; ``_`` and ``-`` read as spaces; whitespace runs collapse to one space."""
    return " ".join(str(text).casefold().replace("_", " ").replace("-", " ").split())


def _blank(got: object) -> bool:
    if got is None:
        return True
    return isinstance(got, tuple | list) and len(got) > 0 and all(g is None for g in got)


def _is_number(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _as_number(x: object) -> float | None:
    if _is_number(x):
        return float(x)  # type: ignore[arg-type]
    if isinstance(x, str):
        try:
            return float(x.replace(",", "").replace("_", "").strip())
        except ValueError:
            return None
    return None


def _show(x: object) -> str:
    """A value as a learner reads it: rounded numbers, plain strings."""
    if _is_number(x) and not isinstance(x, numbers.Integral):
        return f"{float(x):.6g}"  # type: ignore[arg-type]
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return f"{int(x):,}"
    if isinstance(x, tuple | list):
        return "(" + ", ".join(_show(v) for v in x) + ")"
    return repr(x)


def _matches(
    got: object, expected: object, rel_tol: float, synonyms: Mapping[str, Sequence[str]] | None
) -> bool:
    if isinstance(expected, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(expected):
            return False
        return all(_matches(g, e, rel_tol, synonyms) for g, e in zip(got, expected, strict=True))
    if _is_number(expected):
        g = _as_number(got)
        return g is not None and math.isclose(g, float(expected), rel_tol=rel_tol, abs_tol=1e-12)  # type: ignore[arg-type]
    if isinstance(expected, str) and isinstance(got, str):
        return normalize_text(got, synonyms) == normalize_text(expected, synonyms)
    return got == expected


def _graded(
    got: object,
    expected: object,
    rel_tol: float = 1e-6,
    synonyms: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """How far off a numeric answer is, coarse enough not to give the answer away.

    For a tuple: which parts are wrong (by the check's own tolerance and synonyms), and how far
    off a wrong numeric part is when it is the only one.
    """
    g, e = _as_number(got), _as_number(expected)
    if g is None or e is None or not _is_number(expected):
        if isinstance(expected, tuple | list):
            n = len(expected)
            if isinstance(got, tuple | list) and len(got) == n:
                wrong = [
                    i
                    for i, (a, b) in enumerate(zip(got, expected, strict=True))
                    if not _matches(a, b, rel_tol, synonyms)
                ]
                text = f"part {', '.join(str(i + 1) for i in wrong)} of {n} is not right yet"
                numeric = [i for i in wrong if _is_number(expected[i])]
                if len(numeric) == 1 and _as_number(got[numeric[0]]) is not None:
                    i = numeric[0]
                    text += f" (part {i + 1}: {_graded(got[i], expected[i])})"
                return text
            return f"the answer has {n} parts"
        if _is_number(expected):
            return "the answer is a number"
        return "the answer is one of the names the exercise lists (spelling is free of case)"
    if e == 0 or g == 0 or (g < 0) != (e < 0):
        return "the sign or zero-ness is off: recheck what is being counted"
    r = g / e
    word = "high" if r > 1 else "low"
    big = max(r, 1 / r)
    # NOTE: the direction and the kind of slip, never the factor itself: "too low by a factor
    # of 2" hands over the answer (issue 20).
    for factor in (1024**3, 1e9, 1024**2, 1e6, 1024, 1e3):
        if math.isclose(big, factor, rel_tol=0.01):
            return f"too {word}, by a whole unit step: check the units (B/KiB/GB, s/ms)"
    for factor in (2, 4, 8, 3):
        if math.isclose(big, factor, rel_tol=0.02):
            return f"too {word}, by a small whole factor: a count or a bytes-per-element is off"
    if big < 1.1:
        return f"close but a bit too {word}: check rounding and the exact inputs"
    if big < 2:
        return f"too {word}: one term is missing or extra"
    return f"too {word}, far off: check the formula and the units"


def _log(result: CheckResult) -> None:
    """Append the result to the grading log when ``workbench grade`` asked for one."""
    path = os.environ.get(GRADE_LOG_ENV, "")
    if not path:
        return
    row = {
        "name": result.name,
        "answered": result.answered,
        "passed": result.passed,
        "hints_used": result.hints_used,
        "revealed": result.revealed,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def _strict_default() -> bool:
    return os.environ.get("WORKBENCH_STRICT_CHECKS", "") not in ("", "0")


def compare(
    name: str,
    got: object,
    expected: object,
    *,
    rel_tol: float = 1e-6,
    hint: str = "",
    hint2: str = "",
    synonyms: Mapping[str, Sequence[str]] | None = None,
    strict: bool | None = None,
) -> CheckResult:
    """Compare an answer with the library's value.

    Numbers match within ``rel_tol`` (a numeric string is read as a number); strings match
    case- and whitespace-insensitively and through ``synonyms``; tuples match element by element.

    Args:
        name: Exercise name shown in the result.
        got: The learner's answer.
        expected: The value the library computed.
        rel_tol: Relative tolerance for numbers.
        hint: Shown at the first wrong try.
        hint2: A more specific hint, shown (with how far off the answer is) from the second try.
        synonyms: Canonical answer -> accepted alternates (``{"roll back": ("rollback",)}``).
        strict: Raise on a wrong answer (default: ``WORKBENCH_STRICT_CHECKS`` env var).

    Returns:
        The :class:`CheckResult`.

    Raises:
        ExerciseError: In strict mode, when the answer is wrong.

    >>> compare("flops", 8, 8).passed
    True
    >>> compare("decision", " Roll  Back", "roll back").passed
    True
    """
    ok = _matches(got, expected, rel_tol, synonyms)
    attempt = 0 if ok or _blank(got) else _ATTEMPTS.get(name, 0) + 1
    if attempt:
        _ATTEMPTS[name] = attempt
    return _settle(
        CheckResult(
            name=name,
            passed=ok,
            got=got,
            hints=_hints(attempt, hint, hint2, lambda: _graded(got, expected, rel_tol, synonyms)),
            attempt=attempt,
            hints_used=_ATTEMPTS.get(name, 0) if ok else attempt,
            revealed=name in _REVEALED,
            expected=expected,
        ),
        strict,
    )


def _hints(attempt: int, hint: str, hint2: str, graded: Callable[[], str]) -> tuple[str, ...]:
    """The hints of wrong try ``attempt`` (none for 0): the first, then also the graded one.

    ``graded`` says how far off the answer is (by the check's own tolerance and synonyms).
    """
    if not attempt:
        return ()
    first = hint or "recheck the definition in the lesson text"
    if attempt == 1:
        return (first,)
    return (first, graded() + (f"; {hint2}" if hint2 else ""))


def _settle(result: CheckResult, strict: bool | None) -> CheckResult:
    """Record ``result`` (last of its exercise, settled when passed, the grading log).

    Raises:
        ExerciseError: When it failed and ``strict`` (default: the environment) asks.
    """
    _LAST.pop(result.name, None)
    _LAST[result.name] = result
    if result.passed:
        _SETTLED.add(result.name)
    _log(result)
    if not result.passed and (_strict_default() if strict is None else strict):
        raise ExerciseError(repr(result).replace("\n", " "))
    return result


@dataclass(frozen=True, slots=True, kw_only=True)
class Scale:
    """The three answers of a "which way does it move?" prediction, and their spellings.

    Attributes:
        fall: The answer when the figure goes down by more than :data:`SAME_WITHIN`.
        rise: The answer when it goes up by more than that.
        same: The answer otherwise.
        synonyms: Canonical answer -> accepted alternates.
        hint2: The second hint when a check gives none: the three words.
    """

    fall: str
    rise: str
    same: str
    synonyms: Mapping[str, tuple[str, ...]]
    hint2: str

    def word(self, before: float, after: float) -> str:
        """The answer for a figure going from ``before`` to ``after`` (any unit, both the same).

        >>> STEP_TIME.word(1.0, 0.9), FIGURE.word(1.0, 1.004), FIGURE.word(0.0, 1.0)
        ('faster', 'same', 'same')
        """
        if before <= 0 or abs(after / before - 1) <= SAME_WITHIN:
            return self.same
        return self.fall if after < before else self.rise

    def check(
        self,
        name: str,
        answer: object,
        before: float,
        after: float,
        *,
        hint: str,
        hint2: str | None = None,
        strict: bool | None = None,
    ) -> CheckResult:
        """A prediction of which way a figure moves, checked against :meth:`word`.

        The expected answer is :meth:`word` of the two figures; a wrong answer gets ``hint``,
        then also ``hint2`` with how far off it is (:func:`compare`).

        Args:
            name: Exercise name.
            answer: The learner's prediction (one of the three words or a synonym).
            before: The figure before the change (computed by the library; any unit).
            after: The figure after it, in the same unit.
            hint: Shown at the first wrong try (what to reason about, not the answer).
            hint2: Shown from the second try; None: the scale's own (the three words).
            strict: Raise on a wrong answer.

        >>> FIGURE.check("doc-scale", "rises", 1.0, 2.0, hint="h").passed
        True
        """
        return compare(
            name,
            answer,
            self.word(before, after),
            hint=hint,
            hint2=hint2 or self.hint2,
            synonyms=self.synonyms,
            strict=strict,
        )


#: Relative change below which a prediction's answer is the scale's ``same`` (a fraction).
SAME_WITHIN = 0.005

#: Does the change make the step ``faster``, ``slower`` or the ``same``?
STEP_TIME = Scale(
    fall="faster",
    rise="slower",
    same="same",
    synonyms={
        "faster": ("quicker", "shorter", "less time", "down", "lower"),
        "slower": ("longer", "more time", "up", "higher"),
        "same": ("unchanged", "no change", "equal", "no effect", "nothing"),
    },
    hint2="one of faster, slower, same (within 0.5 %)",
)

#: Is the figure after the change ``higher``, ``lower`` or the ``same``?
FIGURE = Scale(
    fall="lower",
    rise="higher",
    same="same",
    synonyms={
        "higher": ("up", "more", "larger", "rises", "increases", "grows"),
        "lower": ("down", "less", "smaller", "falls", "decreases", "drops"),
        "same": ("unchanged", "no change", "equal"),
    },
    hint2="one of higher, lower, same (within 0.5 %)",
)


def direction(before_s: float, after_s: float) -> str:
    """``faster``, ``slower`` or ``same`` (within :data:`SAME_WITHIN`) for two step times."""
    return STEP_TIME.word(before_s, after_s)
