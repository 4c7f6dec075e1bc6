"""How much slower is one measured run than another, and is that beyond the measurement noise?

The shift between two runs' iteration times is estimated distribution-free (Hollander & Wolfe,
*Nonparametric Statistical Methods*, the Hodges-Lehmann estimator with its Mann-Whitney interval):

- the estimate is the median of every pairwise difference ``candidate_j - baseline_i``;
- the 95% interval is the pair of order statistics ``d_(k)``, ``d_(N + 1 - k)`` of those
  ``N = n m`` differences, with ``k`` the largest rank whose Mann-Whitney tail probability
  ``P(U <= k - 1)`` is at most 0.025 (exact null distribution for ``n m <= 2,500``, the normal
  approximation beyond).

No normality is assumed, and a few slow warm-up iterations move neither the estimate nor the
interval much. Only steady-state iterations are compared (:attr:`MeasuredRun.steady_iterations`:
the warm-up step is left out on both sides).

When both runs have several steps (at least :data:`PAIRED_MIN` steady ones), step i of one is
paired with step i of the other and the shift is read from the per-step differences
``d_i = candidate_i - baseline_i`` (:func:`paired_shift95`): their mean, with the paired-t 95%
interval ``mean(d) +- t(0.975, n - 1) sd(d) / sqrt(n)`` (Student's t quantiles), and the sign test
(how many of the n differences are positive; its two-sided exact p-value ``2 P(Binomial(n, 1/2)
<= min(pos, neg))``). Pairing removes what the two runs' steps share (the step-to-step drift of
one input pipeline), so a deterministic +2.75 ms on every step is a regression, even when the
steps themselves vary by more than that.

A shift whose interval excludes 0 is beyond the noise. With very few repeats no rank reaches 95%;
the interval is then the full range of differences and ``coverage`` says what it covers.

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

__all__ = [
    "PAIRED_MIN",
    "Shift",
    "compare_runs",
    "compare_steps",
    "paired_shift95",
    "shift_interval95",
]

_EXACT_LIMIT = 2500
#: Fewest steady steps on each side for a paired comparison.
PAIRED_MIN = 3
#: Student's t 0.975 quantile by degrees of freedom 1..30 (standard tables); beyond, 1.96.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Shift:
    """Candidate minus baseline iteration time, s.

    Attributes:
        estimate_s: Hodges-Lehmann estimate of the shift, s (positive: candidate slower).
        low_s: Lower end of the interval, s.
        high_s: Upper end of the interval, s.
        coverage: The interval's actual coverage (0.95 or more with enough repeats).
        baseline_median_s: The baseline's median iteration, s (for a relative reading).
        method: ``hodges-lehmann`` (unpaired) or ``paired`` (per-step differences).
        pairs: Steps paired (0 when unpaired).
        positive: Paired differences above 0 (the sign test's count; 0 when unpaired).
        sign_p: The sign test's two-sided exact p-value (1.0 when unpaired).
    """

    estimate_s: float
    low_s: float
    high_s: float
    coverage: float
    baseline_median_s: float
    method: str = "hodges-lehmann"
    pairs: int = 0
    positive: int = 0
    sign_p: float = 1.0

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes 0 (the shift is not explained by run-to-run noise)."""
        return self.low_s > 0 or self.high_s < 0

    @property
    def relative(self) -> float:
        """The estimate as a fraction of the baseline's median (0.1 = 10% slower)."""
        return self.estimate_s / self.baseline_median_s if self.baseline_median_s else 0.0


def compare_runs(
    baseline: MeasuredRun, candidate: MeasuredRun, *, paired: bool | None = None
) -> Shift:
    """The shift in steady-state iteration time from ``baseline`` to ``candidate`` (module doc).

    Args:
        baseline: The reference run.
        candidate: The run compared with it.
        paired: Pair step i with step i (None: when both have :data:`PAIRED_MIN` steady steps
            or more; the first ``min(n, m)`` steps are paired).

    Raises:
        TraceError: Either run has fewer than 2 repeats (no noise estimate is possible).
    """
    for run in (baseline, candidate):
        if run.repeats < 2:
            raise TraceError(
                f"{run.source}: comparing measured runs needs at least 2 repeats "
                f"(ProfilerStep#N iterations) on each side; it has {run.repeats}"
            )
    base = [it.wall_s for it in baseline.steady_iterations]
    cand = [it.wall_s for it in candidate.steady_iterations]
    return compare_steps(base, cand, paired=paired)


def compare_steps(
    baseline: Sequence[float], candidate: Sequence[float], *, paired: bool | None = None
) -> Shift:
    """The shift between two runs' steady-state step times, s: the one comparison of measured runs.

    ``workbench trace --against`` (two traces) and triage of two run records read from traces
    both call this, so they reach the same verdict on the same files.

    Args:
        baseline: The baseline's steady step times in step order, s (at least 2).
        candidate: The candidate's, s (at least 2).
        paired: Pair step i with step i (None: when both have :data:`PAIRED_MIN` steps or more;
            the first ``min(n, m)`` steps are paired); else the unpaired Hodges-Lehmann shift.

    Raises:
        TraceError: Either side has fewer than 2 steps.

    >>> s = compare_steps([0.10, 0.13, 0.11, 0.14], [0.102, 0.132, 0.112, 0.142])
    >>> s.method, s.pairs, s.beyond_noise
    ('paired', 4, True)
    """
    if paired is None:
        paired = min(len(baseline), len(candidate)) >= PAIRED_MIN
    if paired:
        n = min(len(baseline), len(candidate))
        return paired_shift95(baseline[:n], candidate[:n])
    return shift_interval95(baseline, candidate)


def paired_shift95(baseline: Sequence[float], candidate: Sequence[float]) -> Shift:
    """Shift from per-step differences ``candidate_i - baseline_i`` (module doc).

    The mean difference, its paired-t 95% interval and the sign test.

    Args:
        baseline: The baseline's step times in step order, s.
        candidate: The candidate's, as many, s.

    Returns:
        The shift (``method="paired"``); the interval's coverage is 0.95.

    >>> s = paired_shift95([0.10, 0.13, 0.11, 0.14], [0.10275, 0.13275, 0.11275, 0.14275])
    >>> round(s.estimate_s * 1e3, 2), s.beyond_noise, s.positive
    (2.75, True, 4)
    """
    n = len(baseline)
    if n < 2 or len(candidate) != n:
        raise TraceError("paired shift: each side needs the same number of steps, at least 2")
    d = [c - b for b, c in zip(baseline, candidate, strict=True)]
    mean = statistics.fmean(d)
    # NOTE: differences equal to within rounding (a deterministic shift) have a zero spread.
    sd = statistics.stdev(d) if n > 1 else 0.0
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    half = t * sd / math.sqrt(n)
    pos, neg = sum(x > 0 for x in d), sum(x < 0 for x in d)
    tail = sum(math.comb(pos + neg, i) for i in range(min(pos, neg) + 1)) / 2.0 ** (pos + neg)
    return Shift(
        estimate_s=mean,
        low_s=mean - half,
        high_s=mean + half,
        coverage=0.95,
        baseline_median_s=statistics.median(baseline),
        method="paired",
        pairs=n,
        positive=pos,
        sign_p=min(1.0, 2 * tail) if pos + neg else 1.0,
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
