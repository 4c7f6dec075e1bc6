"""Shift between two measured runs: Hodges-Lehmann estimate and its distribution-free interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.evidence import (
    TraceError,
    compare_runs,
    paired_shift95,
    read_trace,
    shift_interval95,
    write_kineto_trace,
)
from workbench.evidence.compare import _u_cdf, _u_counts


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (4, 4), (5, 9)])
def test_mann_whitney_null_distribution_is_exact(n, m):
    counts = _u_counts(min(n, m), max(n, m))
    assert len(counts) == n * m + 1
    assert sum(counts) == math.comb(n + m, n)
    assert counts == counts[::-1]  # symmetric about nm / 2
    assert _u_cdf(n * m, n, m) == pytest.approx(1.0)


def test_published_critical_value():
    # Two-sided 5% Mann-Whitney critical value for n = m = 8 is U = 13 (standard tables):
    # P(U <= 13) <= 0.025 < P(U <= 14).
    assert _u_cdf(13, 8, 8) <= 0.025 < _u_cdf(14, 8, 8)


def test_a_clear_slowdown_is_beyond_noise_and_estimated():
    rng = np.random.default_rng(0)
    base = list(1.0 + 0.01 * rng.standard_normal(12))
    cand = list(1.1 + 0.01 * rng.standard_normal(12))
    s = shift_interval95(base, cand)
    assert s.beyond_noise
    assert s.low_s <= s.estimate_s <= s.high_s
    assert s.estimate_s == pytest.approx(0.1, abs=0.01)
    assert s.relative == pytest.approx(0.1, abs=0.01)
    assert s.coverage >= 0.95


def test_noise_alone_is_not_a_shift():
    rng = np.random.default_rng(1)
    s = shift_interval95(
        list(1 + 0.05 * rng.standard_normal(10)), list(1 + 0.05 * rng.standard_normal(10))
    )
    assert not s.beyond_noise
    assert s.low_s < 0 < s.high_s


def test_too_few_repeats_give_the_full_range_and_say_so():
    s = shift_interval95([1.0, 1.1], [2.0, 2.2])
    assert (s.low_s, s.high_s) == pytest.approx((0.9, 1.2))
    assert s.coverage == pytest.approx(1 - 2 / 6)  # P(U <= 0) = 1 / C(4, 2)


def test_compare_runs_on_traces(tmp_path, make_steps):
    fast = read_trace(write_kineto_trace(tmp_path / "a.json", make_steps(8)))
    slow = read_trace(write_kineto_trace(tmp_path / "b.json", make_steps(8, slow=2.0)))
    s = compare_runs(fast, slow)
    assert s.beyond_noise
    assert s.estimate_s == pytest.approx(1e-3)  # the GEMM went from 1 ms to 2 ms
    one = read_trace(write_kineto_trace(tmp_path / "c.json", make_steps(1)))
    with pytest.raises(TraceError, match="at least 2 repeats"):
        compare_runs(fast, one)


def test_a_deterministic_shift_on_every_step_is_a_regression_when_paired():
    # Steps vary by +-15 ms (an input pipeline's drift, the same in both runs); the candidate is
    # 2.75 ms slower on every step. Unpaired, the shift hides in the spread; paired, it is exact.
    rng = np.random.default_rng(3)
    base = list(0.1 + 0.015 * rng.standard_normal(8))
    cand = [b + 2.75e-3 for b in base]
    unpaired = shift_interval95(base, cand)
    assert not unpaired.beyond_noise
    s = paired_shift95(base, cand)
    assert s.method == "paired"
    assert s.pairs == 8
    assert s.positive == 8
    assert s.sign_p == pytest.approx(2 / 2**8)
    assert s.beyond_noise
    assert s.estimate_s == pytest.approx(2.75e-3, rel=1e-9)


def test_paired_noise_is_not_a_shift():
    rng = np.random.default_rng(4)
    base = list(0.1 + 0.01 * rng.standard_normal(10))
    cand = [b + 0.002 * rng.standard_normal() for b in base]
    s = paired_shift95(base, cand)
    assert s.low_s < 0 < s.high_s
    assert not s.beyond_noise


def test_compare_runs_leaves_the_warm_up_step_out(tmp_path, make_steps):
    fast = read_trace(write_kineto_trace(tmp_path / "a.json", make_steps(6)))
    slow = read_trace(write_kineto_trace(tmp_path / "b.json", make_steps(6, slow=2.0)))
    s = compare_runs(fast, slow)
    assert s.method == "paired"
    assert s.pairs == len(fast.steady_iterations) == 5
    steady = [b.wall_s for b in fast.steady_iterations]
    assert s.baseline_median_s == pytest.approx(float(np.median(steady)))
    unpaired = compare_runs(fast, slow, paired=False)
    assert unpaired.method == "hodges-lehmann"
    assert unpaired.estimate_s == pytest.approx(1e-3)
