"""How much slower is one measured run than another, and is that beyond the measurement noise?

The shift between two runs' iteration times is estimated distribution-free (Hollander & Wolfe,
*Nonparametric Statistical Methods*, the Hodges-Lehmann estimator with its Mann-Whitney interval):

- the estimate is the median of every pairwise difference ``candidate_j - baseline_i``;
- the 95% interval is the pair of order statistics ``d_(k)``, ``d_(N + 1 - k)`` of those
  ``N = n m`` differences, with ``k`` the largest rank whose Mann-Whitney tail probability
  ``P(U <= k - 1)`` is at most 0.025 (exact null distribution for ``n m <= 2,500``, the normal
  approximation beyond).

No normality is assumed, and a few slow warm-up iterations move neither the estimate nor the
interval much. A shift whose interval excludes 0 is beyond the noise. With very few repeats no
rank reaches 95%; the interval is then the full range of differences and ``coverage`` says what
it actually covers.

>>> from workbench.evidence.compare import shift_interval95
>>> s = shift_interval95([1.00, 1.02, 0.99, 1.01, 1.00, 1.03], [1.10, 1.12, 1.09, 1.11, 1.13, 1.10])
>>> round(s.estimate_s, 3), s.beyond_noise, s.coverage >= 0.95
(0.1, True, True)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from workbench.evidence.run import MeasuredRun, TraceError

__all__ = ["Shift", "compare_runs", "shift_interval95"]

_EXACT_LIMIT = 2500


@dataclass(frozen=True, slots=True, kw_only=True)
class Shift:
    """Candidate minus baseline iteration time, s.

    Attributes:
        estimate_s: Hodges-Lehmann estimate of the shift, s (positive: candidate slower).
        low_s: Lower end of the interval, s.
        high_s: Upper end of the interval, s.
        coverage: The interval's actual coverage (0.95 or more with enough repeats).
        baseline_median_s: The baseline's median iteration, s (for a relative reading).
    """

    estimate_s: float
    low_s: float
    high_s: float
    coverage: float
    baseline_median_s: float

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes 0 (the shift is not explained by run-to-run noise)."""
        return self.low_s > 0 or self.high_s < 0

    @property
    def relative(self) -> float:
        """The estimate as a fraction of the baseline's median (0.1 = 10% slower)."""
        return self.estimate_s / self.baseline_median_s if self.baseline_median_s else 0.0


def compare_runs(baseline: MeasuredRun, candidate: MeasuredRun) -> Shift:
    """The shift in iteration wall time from ``baseline`` to ``candidate`` (see module doc).

    Raises:
        TraceError: Either run has fewer than 2 repeats (no noise estimate is possible).
    """
    for run in (baseline, candidate):
        if run.repeats < 2:
            raise TraceError(
                f"{run.source}: comparing measured runs needs at least 2 repeats "
                f"(ProfilerStep#N iterations) on each side; it has {run.repeats}"
            )
    return shift_interval95(
        [it.wall_s for it in baseline.iterations], [it.wall_s for it in candidate.iterations]
    )


def shift_interval95(baseline: Sequence[float], candidate: Sequence[float]) -> Shift:
    """Hodges-Lehmann shift ``candidate - baseline`` with its distribution-free 95% interval.

    Args:
        baseline: The baseline's repeated times, s.
        candidate: The candidate's repeated times, s.

    Returns:
        The shift, its interval and the interval's coverage.
    """
    n, m = len(baseline), len(candidate)
    if n < 1 or m < 1:
        raise TraceError("shift: each side needs at least one time")
    diffs = sorted(c - b for b in baseline for c in candidate)
    total = n * m
    k = _lower_rank(n, m)
    return Shift(
        estimate_s=statistics.median(diffs),
        low_s=diffs[k - 1],
        high_s=diffs[total - k],
        coverage=1.0 - 2.0 * _u_cdf(k - 1, n, m),
        baseline_median_s=statistics.median(baseline),
    )


def _lower_rank(n: int, m: int) -> int:
    """Largest 1-based rank k (at most (nm + 1) // 2) with P(U <= k - 1) <= 0.025; at least 1."""
    k = 1
    while k + 1 <= (n * m + 1) // 2 and _u_cdf(k, n, m) <= 0.025:
        k += 1
    return k


def _u_cdf(u: int, n: int, m: int) -> float:
    """P(U <= u) for the Mann-Whitney U statistic of sample sizes n, m under the null."""
    if u < 0:
        return 0.0
    if n * m > _EXACT_LIMIT:
        mean = n * m / 2
        sd = math.sqrt(n * m * (n + m + 1) / 12)
        return 0.5 * math.erfc(-(u + 0.5 - mean) / (sd * math.sqrt(2)))
    counts = _u_counts(min(n, m), max(n, m))
    return sum(counts[: u + 1]) / math.comb(n + m, n)


@lru_cache(maxsize=64)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """Number of orderings giving each U = 0..nm (the recursion f(n, m) = f(n-1, m) + f(n, m-1)).

    Built row by row: ``row[j][u]`` counts orderings of i baseline and j candidate values.
    """
    prev = [[1] for _ in range(m + 1)]  # i = 0: U = 0 only
    for i in range(1, n + 1):
        cur: list[list[int]] = [[1]]  # j = 0: U = 0 only
        for j in range(1, m + 1):
            size = i * j + 1
            row = [0] * size
            # NOTE: the largest value is a candidate one (adds i to U) or a baseline one (adds 0).
            for u, c in enumerate(cur[j - 1]):
                row[u + i] += c
            for u, c in enumerate(prev[j]):
                row[u] += c
            cur.append(row)
        prev = cur
    return tuple(prev[m])
