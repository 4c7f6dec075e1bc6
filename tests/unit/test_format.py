"""Engineering notation: the unit is chosen after rounding (issue 30: ``-1e+03 ns``)."""

from __future__ import annotations

import pytest

from workbench._format import fmt_delta, fmt_si, fmt_time


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-9.996e-7, "-1 us"),
        (9.9996e-4, "1 ms"),
        (0.99951, "1 s"),
        (9.996e-10, "1 ns"),
        (1234.5, "1,234 s"),
        (999.7, "1,000 s"),
        (1.24e-5, "12.4 us"),
    ],
)
def test_a_time_just_below_a_unit_is_shown_in_that_unit(seconds, text):
    assert fmt_time(seconds) == text


def test_a_one_microsecond_shift_is_not_minus_1e03_ns():
    assert fmt_delta(-9.996e-7) == "-1 us"
    assert fmt_delta(1e-6) == "+1 us"


def test_an_si_figure_just_below_a_prefix_takes_that_prefix():
    assert fmt_si(999.96, "B") == "1 kB"
    assert fmt_si(-9.9996e8, "B/s") == "-1 GB/s"
