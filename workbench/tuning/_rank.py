"""Spearman rank correlation with NumPy (average ranks for ties)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["average_ranks", "resolved_ranks", "spearman"]


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks 1..n of ``values``; tied values share the mean of their ranks.

    >>> average_ranks([10.0, 30.0, 20.0, 20.0]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    arr = np.asarray(values, dtype=float)
    order = np.argsort(arr, kind="stable")
    ranks = np.empty(arr.size, dtype=float)
    ranks[order] = np.arange(1, arr.size + 1, dtype=float)
    _, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


def resolved_ranks(
    medians: Sequence[float], lows: Sequence[float], highs: Sequence[float]
) -> np.ndarray:
    """Ranks 1..n by median, where candidates whose intervals overlap share their mean rank.

    Sorted by median, a candidate joins the group before it when its interval ``[low, high]``
    overlaps the group's (a chain of overlaps is one group): the measurement cannot order them,
    so it does not. Intervals are e.g. a measurement's p10 and p90 (seconds).

    >>> resolved_ranks([1.0, 1.1, 3.0], [0.9, 1.0, 2.9], [1.2, 1.3, 3.1]).tolist()
    [1.5, 1.5, 3.0]
    >>> resolved_ranks([1.0, 2.0], [0.9, 1.9], [1.1, 2.1]).tolist()
    [1.0, 2.0]
    """
    med = np.asarray(medians, dtype=float)
    order = np.argsort(med, kind="stable")
    ranks = np.empty(med.size, dtype=float)
    group: list[int] = []
    top = -np.inf
    for pos, i in enumerate(order):
        if group and lows[i] > top:
            ranks[group] = np.mean([p + 1 for p in range(pos - len(group), pos)])
            group, top = [], -np.inf
        group.append(int(i))
        top = max(top, float(highs[i]))
    if group:
        n = med.size
        ranks[group] = np.mean(range(n - len(group) + 1, n + 1))
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> tuple[float | None, str]:
    """Spearman's rho of two equally long sequences, with ties handled by average ranks.

    Args:
        a: First values (e.g. predicted seconds).
        b: Second values (e.g. measured seconds).

    Returns:
        ``(rho in [-1, 1], "")``, or ``(None, reason)`` when fewer than 3 pairs or one side is
        constant (the correlation is undefined).

    >>> spearman([1, 2, 3], [10, 20, 30])
    (1.0, '')
    >>> spearman([1, 2], [2, 1])[0] is None
    True
    """
    if len(a) != len(b):
        raise ValueError(f"spearman: lengths differ ({len(a)} vs {len(b)})")
    if len(a) < 3:
        return None, f"needs at least 3 candidates to rank, got {len(a)}"
    ra, rb = average_ranks(a), average_ranks(b)
    da, db = ra - ra.mean(), rb - rb.mean()
    denom = float(np.sqrt((da * da).sum() * (db * db).sum()))
    if denom == 0.0:
        return None, "one side is constant (all values tied)"
    return float(np.clip((da * db).sum() / denom, -1.0, 1.0)), ""
