"""Any finite time or SI figure prints in engineering notation, never ``1e+03 ns`` (issue 30)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench._format import fmt_si, fmt_time


@settings(max_examples=300, deadline=None)
@given(
    seconds=st.floats(min_value=1e-12, max_value=1e6),
    sign=st.sampled_from((1.0, -1.0)),
)
def test_a_time_is_never_shown_with_an_exponent(seconds, sign):
    number, unit = fmt_time(sign * seconds).split(" ")
    assert "e" not in number, (seconds, number, unit)
    assert abs(float(number.replace(",", ""))) < 1000 or unit == "s"


@settings(max_examples=300, deadline=None)
@given(value=st.floats(min_value=1.0, max_value=9.99e17), sign=st.sampled_from((1.0, -1.0)))
def test_an_si_figure_is_never_shown_with_an_exponent(value, sign):
    number = fmt_si(sign * value, "B").split(" ")[0]
    assert "e" not in number, (value, number)
    assert abs(float(number)) < 1000
