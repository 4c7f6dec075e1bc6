"""Hostile answers to the pair and decision checks (issue 28): a verdict, never a crash or a leak.

Whatever a student types into lesson 02's ``(intensity, class)`` stub or lesson 07's decision
stub (nested tuples, NaN, infinities, bytes, huge integers, the wrong arity), the check answers
with a result whose hints never state the expected value, and raises only in strict mode.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.exercises import ExerciseError, _check, lesson02, lesson07

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=8),
    st.sampled_from(["compute", "Bandwidth:HBM", " 437 ", "nan", "1e400", "roll back"]),
)
ANSWERS = st.recursive(
    _SCALARS, lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3)
)


def _leaks(result, expected) -> bool:
    hints = " ".join(result.hints)
    parts = expected if isinstance(expected, tuple) else (expected,)
    return any(
        (f"{p:.4g}" in hints if isinstance(p, float) and math.isfinite(p) else False) for p in parts
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=ANSWERS)
def test_side_of_ridge_answers_anything(answer):
    _check._ATTEMPTS.clear()
    for _ in range(2):  # the first and the graded second hint
        r = lesson02.check_side_of_ridge(answer, strict=False)
        assert isinstance(repr(r), str)
        assert not _leaks(r, r.expected)
    if not r.passed and r.answered:
        with pytest.raises(ExerciseError):
            lesson02.check_side_of_ridge(answer, strict=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=ANSWERS)
def test_team_decision_answers_anything(answer):
    # a wrong answer's hints are the same whatever it was: they cannot point at the answer
    def tries(a):
        _check._ATTEMPTS.clear()
        return [
            lesson07.check_release_decision("barrier-per-layer", a, scale=4, strict=False)
            for _ in range(2)
        ]

    got = tries(answer)
    if not got[0].passed and got[0].answered:
        assert [r.hints for r in got] == [r.hints for r in tries("ship")]
