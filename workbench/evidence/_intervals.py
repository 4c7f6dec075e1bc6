"""Unions of time intervals: the one merge every busy-time, breakdown and timeline figure uses.

A union is kept as sorted, disjoint ``[start, end]`` spans (C doubles) with a prefix sum of their
lengths, so the busy time inside any window is two binary searches. Intervals that touch or
overlap merge; with ``gap_s`` > 0, intervals closer than ``gap_s`` merge too (a drawing's
resolution). All times are seconds.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate

__all__ = ["Intervals", "union_s"]


class Intervals:
    """The union of ``(start, end)`` intervals, merged once, queried by window in O(log n).

    Args:
        spans: The intervals, s, in any order.
        gap_s: Also merge intervals whose gap is at most this, s (0: only touching ones).

    >>> Intervals([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]).within(2.0, 5.5)
    1.5
    """

    def __init__(self, spans: Iterable[tuple[float, float]], *, gap_s: float = 0.0) -> None:
        ordered = sorted(spans)
        self._merge([s for s, _ in ordered], [e for _, e in ordered], gap_s)

    @classmethod
    def from_sorted(
        cls, starts: Sequence[float], ends: Sequence[float], *, gap_s: float = 0.0
    ) -> Intervals:
        """The union of ``zip(starts, ends)`` (s), given in ascending order of start.

        Ties among equal starts may come in any order: the union is the same.
        """
        self = cls.__new__(cls)
        self._merge(starts, ends, gap_s)
        return self

    def _merge(self, starts: Sequence[float], ends: Sequence[float], gap_s: float) -> None:
        # NOTE: C doubles (8 bytes each, not a float object per interval): a big trace's unions
        # hold about one interval per activity. ``firsts`` holds, per merged span, the position
        # (in start order) of the first interval it absorbed.
        out_s = array("d")
        out_e = array("d")
        firsts = array("q")
        lo = hi = 0.0
        first = True
        for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
            if first:
                lo, hi, first = start, end, False
                firsts.append(i)
            elif start <= hi + gap_s:
                if end > hi:
                    hi = end
            else:
                out_s.append(lo)
                out_e.append(hi)
                firsts.append(i)
                lo, hi = start, end
        if not first:
            out_s.append(lo)
            out_e.append(hi)
        self.starts = out_s
        self.ends = out_e
        self.firsts = firsts
        self.prefix = array("d", [0.0])
        self.prefix.extend(accumulate(e - s for s, e in zip(out_s, out_e, strict=True)))

    def spans(self) -> list[tuple[float, float]]:
        """The disjoint spans ``(start, end)`` of the union, s, in time order."""
        return list(zip(self.starts, self.ends, strict=True))

    @property
    def total_s(self) -> float:
        """Length of the union, s."""
        return self.prefix[-1]

    def within(self, lo: float, hi: float) -> float:
        """Length of the union inside ``[lo, hi]``, s (0 for an empty window)."""
        if hi <= lo or not self.starts:
            return 0.0
        i = bisect.bisect_right(self.ends, lo)  # first interval ending after lo
        j = bisect.bisect_left(self.starts, hi)  # intervals [i, j) start before hi
        if j <= i:
            return 0.0
        total = self.prefix[j] - self.prefix[i]
        total -= max(lo - self.starts[i], 0.0)
        total -= max(self.ends[j - 1] - hi, 0.0)
        return max(total, 0.0)

    def intersect(self, other: Intervals) -> Intervals:
        """The intersection of two unions (two-pointer sweep)."""
        out = []
        i = j = 0
        while i < len(self.starts) and j < len(other.starts):
            lo = max(self.starts[i], other.starts[j])
            hi = min(self.ends[i], other.ends[j])
            if hi > lo:
                out.append((lo, hi))
            if self.ends[i] < other.ends[j]:
                i += 1
            else:
                j += 1
        return Intervals(out)


def union_s(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length of the union of ``(start, end)`` intervals, s.

    >>> union_s([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)])
    4.0
    """
    return Intervals(intervals).total_s
