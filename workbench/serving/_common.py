"""Pieces the engines share: the batch former and per-batch-size step-time curves."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from workbench.serving._errors import ServingError

__all__ = ["Curves", "check_positive", "form_batch"]


def check_positive(name: str, value: float, *, integer: bool = False) -> None:
    """Raise a one-line :class:`ServingError` unless ``value`` is a positive number."""
    bad = not (value > 0) or (integer and int(value) != value)
    if bad:
        kind = "a positive integer" if integer else "a positive number"
        raise ServingError(f"simulate: {name} must be {kind}, got {value}")


def form_batch(
    arrival_s: np.ndarray, i: int, t: float, max_batch: int, max_wait_s: float
) -> tuple[float, int]:
    """When the next batch starts and where it ends, for a server that is free from ``t``.

    The batch starts when ``max_batch`` requests have arrived, or ``max_wait_s`` after its oldest
    request arrived, or when the last request of the workload has arrived, whichever is first,
    but not before ``t``; it takes every request that has arrived by then, up to ``max_batch``.

    Args:
        arrival_s: Arrival times, seconds (sorted).
        i: Index of the oldest request not yet served.
        t: Time the server becomes free, seconds.
        max_batch: Largest batch, requests.
        max_wait_s: Longest the oldest request waits for the batch to fill, seconds.

    Returns:
        ``(launch time in seconds, index one past the batch's last request)``.
    """
    n = arrival_s.size
    full_at = float(arrival_s[i + max_batch - 1]) if i + max_batch - 1 < n else math.inf
    ready = min(full_at, float(arrival_s[i]) + max_wait_s, float(arrival_s[-1]))
    launch = max(t, ready)
    j = min(i + max_batch, int(np.searchsorted(arrival_s, launch, side="right")))
    return launch, j


class Curves:
    """Step times over a token axis, built once per batch size (mutable cache, internal)."""

    __slots__ = ("_cache", "_fn", "_length", "_prefix", "_what")

    def __init__(self, fn: Callable[[int, np.ndarray], object], length: int, what: str) -> None:
        self._fn = fn
        self._length = length
        self._what = what
        self._cache: dict[int, np.ndarray] = {}
        self._prefix: dict[int, np.ndarray] = {}

    def __call__(self, batch: int) -> np.ndarray:
        """Times for tokens ``0 .. length - 1`` at this batch size, seconds."""
        curve = self._cache.get(batch)
        if curve is None:
            curve = self._build(batch)
            self._cache[batch] = curve
        return curve

    def prefix(self, batch: int) -> np.ndarray:
        """Running sums: ``prefix(b)[c]`` is the time of steps at tokens ``0 .. c - 1``, seconds."""
        out = self._prefix.get(batch)
        if out is None:
            out = np.concatenate(([0.0], np.cumsum(self(batch))))
            self._prefix[batch] = out
        return out

    def _build(self, batch: int) -> np.ndarray:
        tokens = np.arange(self._length)
        try:
            out = np.asarray(self._fn(batch, tokens), dtype=np.float64)
        except (TypeError, ValueError):
            out = np.empty(0)
        if out.shape != tokens.shape:
            out = np.array([float(self._fn(batch, int(x))) for x in tokens])  # type: ignore[arg-type]
        if not np.all(np.isfinite(out[1:])) or np.any(out[1:] <= 0):
            raise ServingError(
                f"step-time model: {self._what}(batch={batch}) gave a non-positive or "
                "non-finite time"
            )
        return out
