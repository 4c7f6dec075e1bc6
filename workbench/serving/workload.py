"""Request sources for the serving simulation: Poisson and bursty arrivals, length distributions.

A :class:`Workload` is a struct of arrays (one row per request, sorted by arrival time) so the
simulator can index it without building one Python object per request. Times are seconds from the
start of the workload; lengths are tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from workbench.serving._errors import ServingError

__all__ = [
    "LengthDistribution",
    "LogNormalLengths",
    "Workload",
    "gamma_arrivals",
    "poisson_arrivals",
]

_Z99 = 2.3263478740408408  # standard-normal quantile at 0.99


def _frozen_array(values: object, dtype: type, name: str) -> np.ndarray:
    out: np.ndarray = np.array(values, dtype=dtype)
    if out.ndim != 1:
        raise ServingError(f"workload: {name} must be one-dimensional, got shape {out.shape}")
    out.setflags(write=False)
    return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Workload:
    """Requests as a struct of arrays, sorted by arrival time.

    Attributes:
        arrival_s: Arrival time of each request, seconds from the start (non-decreasing).
        prompt_tokens: Prompt length of each request, tokens (>= 1). Images: 1 per request.
        output_tokens: Tokens to generate per request (>= 1), the first one by the prefill.
        name: Short label (trace name or generator description).
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    name: str = "workload"

    def __post_init__(self) -> None:
        arr = _frozen_array(self.arrival_s, np.float64, "arrival_s")
        prm = _frozen_array(self.prompt_tokens, np.int64, "prompt_tokens")
        out = _frozen_array(self.output_tokens, np.int64, "output_tokens")
        object.__setattr__(self, "arrival_s", arr)
        object.__setattr__(self, "prompt_tokens", prm)
        object.__setattr__(self, "output_tokens", out)
        where = f"workload {self.name!r}"
        if not (arr.size == prm.size == out.size):
            raise ServingError(
                f"{where}: column lengths differ ({arr.size}, {prm.size}, {out.size})"
            )
        if arr.size == 0:
            raise ServingError(f"{where}: has no requests")
        if not np.all(np.isfinite(arr)) or arr[0] < 0:
            raise ServingError(f"{where}: arrival_s must be finite and >= 0")
        if np.any(np.diff(arr) < 0):
            raise ServingError(f"{where}: arrival_s must be sorted (non-decreasing)")
        if prm.min() < 1 or out.min() < 1:
            raise ServingError(f"{where}: prompt_tokens and output_tokens must be >= 1")

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def offered_rate_per_s(self) -> float:
        """Mean arrival rate, requests/s: (n - 1) intervals over the arrival span."""
        span = float(self.arrival_s[-1] - self.arrival_s[0])
        return (len(self) - 1) / span if span > 0 else math.inf

    def scaled_to_rate(self, rate_per_s: float) -> Workload:
        """Replay the same requests with arrival times compressed or stretched to a mean rate.

        Args:
            rate_per_s: Target mean arrival rate, requests/s (> 0).

        Returns:
            A workload with ``arrival_s * (current rate / rate_per_s)``; lengths unchanged.
        """
        if not rate_per_s > 0:
            raise ServingError(f"workload {self.name!r}: rate must be > 0, got {rate_per_s}")
        factor = self.offered_rate_per_s / rate_per_s if len(self) > 1 else 1.0
        return Workload(
            arrival_s=(self.arrival_s - self.arrival_s[0]) * factor,
            prompt_tokens=self.prompt_tokens,
            output_tokens=self.output_tokens,
            name=self.name,
        )

    def head(self, n: int) -> Workload:
        """The first ``n`` requests (by arrival)."""
        return Workload(
            arrival_s=self.arrival_s[:n],
            prompt_tokens=self.prompt_tokens[:n],
            output_tokens=self.output_tokens[:n],
            name=self.name,
        )


@runtime_checkable
class LengthDistribution(Protocol):
    """Anything that draws token lengths: ``sample(rng, n) -> int64 array of n lengths >= 1``."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` lengths, tokens."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class LogNormalLengths:
    """Lognormal token lengths given by their median and 99th percentile, clipped to a range.

    Attributes:
        median: Median length, tokens.
        p99: 99th-percentile length before clipping, tokens (> median).
        minimum: Smallest length returned, tokens.
        maximum: Largest length returned (the cap), tokens.

    Example:
        >>> d = LogNormalLengths(median=600, p99=6000, maximum=8192)
        >>> lengths = d.sample(np.random.default_rng(0), 10_000)
        >>> 500 < float(np.median(lengths)) < 700
        True
    """

    median: float
    p99: float
    minimum: int = 1
    maximum: int = 1 << 20

    def __post_init__(self) -> None:
        if not (0 < self.median < self.p99) or not (1 <= self.minimum <= self.maximum):
            raise ServingError(
                f"LogNormalLengths: need 0 < median < p99 and 1 <= min <= max: {self}"
            )

    @property
    def sigma(self) -> float:
        """Standard deviation of the underlying normal (log space)."""
        return math.log(self.p99 / self.median) / _Z99

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` lengths, tokens (rounded, clipped to [minimum, maximum])."""
        raw = rng.lognormal(mean=math.log(self.median), sigma=self.sigma, size=n)
        return np.clip(np.rint(raw), self.minimum, self.maximum).astype(np.int64)


def _lengths(
    spec: int | LengthDistribution, rng: np.random.Generator, n: int, what: str
) -> np.ndarray:
    if isinstance(spec, int | np.integer):
        if spec < 1:
            raise ServingError(f"{what} must be >= 1 token, got {spec}")
        return np.full(n, int(spec), dtype=np.int64)
    if isinstance(spec, LengthDistribution):
        return np.asarray(spec.sample(rng, n), dtype=np.int64)
    raise ServingError(f"{what} must be an int or have sample(rng, n), got {type(spec).__name__}")


def _check(rate_per_s: float, n_requests: int) -> None:
    if not rate_per_s > 0 or not math.isfinite(rate_per_s):
        raise ServingError(f"arrivals: rate_per_s must be a positive number, got {rate_per_s}")
    if n_requests < 1:
        raise ServingError(f"arrivals: n_requests must be >= 1, got {n_requests}")


def poisson_arrivals(
    rate_per_s: float,
    n_requests: int,
    prompt_len: int | LengthDistribution = 512,
    output_len: int | LengthDistribution = 128,
    seed: int = 0,
) -> Workload:
    """Requests arriving as a Poisson process (exponential inter-arrival times).

    Args:
        rate_per_s: Mean arrival rate, requests/s.
        n_requests: Number of requests.
        prompt_len: Prompt length in tokens, fixed or a distribution.
        output_len: Output length in tokens, fixed or a distribution.
        seed: Seed; the same seed gives the same workload.

    Returns:
        A workload whose first request arrives at 0 s.

    Example:
        >>> w = poisson_arrivals(10.0, 1000, seed=1)
        >>> len(w), round(w.offered_rate_per_s)
        (1000, 10)
    """
    return gamma_arrivals(rate_per_s, n_requests, 1.0, prompt_len, output_len, seed)


def gamma_arrivals(
    rate_per_s: float,
    n_requests: int,
    cv: float,
    prompt_len: int | LengthDistribution = 512,
    output_len: int | LengthDistribution = 128,
    seed: int = 0,
) -> Workload:
    """Requests with Gamma inter-arrival times: ``cv`` > 1 is burstier than Poisson (cv = 1).

    Args:
        rate_per_s: Mean arrival rate, requests/s.
        n_requests: Number of requests.
        cv: Coefficient of variation of the inter-arrival time (0 = uniform spacing).
        prompt_len: Prompt length in tokens, fixed or a distribution.
        output_len: Output length in tokens, fixed or a distribution.
        seed: Seed; the same seed gives the same workload.

    Returns:
        A workload whose first request arrives at 0 s.
    """
    _check(rate_per_s, n_requests)
    if cv < 0:
        raise ServingError(f"arrivals: cv must be >= 0, got {cv}")
    rng = np.random.default_rng(seed)
    mean_gap = 1.0 / rate_per_s
    if cv == 0:
        gaps = np.full(n_requests - 1, mean_gap)
    else:
        shape = 1.0 / (cv * cv)
        gaps = rng.gamma(shape, mean_gap / shape, size=n_requests - 1)
    arrival = np.concatenate(([0.0], np.cumsum(gaps)))
    name = "poisson" if cv == 1 else f"gamma(cv={cv:g})"
    return Workload(
        arrival_s=arrival,
        prompt_tokens=_lengths(prompt_len, rng, n_requests, "prompt_len"),
        output_tokens=_lengths(output_len, rng, n_requests, "output_len"),
        name=f"{name} {rate_per_s:g}/s",
    )
