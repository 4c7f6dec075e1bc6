"""What a serving simulation returns: per-request latencies and their summary at one load level."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["THROUGHPUT_TOLERANCE", "LatencyStats", "SimResult"]

#: A load level keeps up when its sustained completion rate is at least this fraction below its
#: arrival rate at most (0.05: within 5%). An assumption of this tool, not a published figure:
#: in steady state the two differ only by sampling noise, far below 5% at the default 2,000
#: requests per level.
THROUGHPUT_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyStats:
    """Summary of one latency, seconds: percentiles by ``np.percentile`` (linear interpolation).

    Attributes:
        p50_s: Median, seconds.
        p95_s: 95th percentile, seconds.
        p99_s: 99th percentile, seconds.
        mean_s: Mean, seconds.
        max_s: Maximum, seconds.
    """

    p50_s: float
    p95_s: float
    p99_s: float
    mean_s: float
    max_s: float

    @classmethod
    def of(cls, values: np.ndarray) -> LatencyStats:
        """Summarise an array of latencies, seconds (NaN entries are ignored)."""
        v = np.asarray(values, dtype=np.float64)
        v = v[~np.isnan(v)]
        p50, p95, p99 = (float(x) for x in np.percentile(v, (50, 95, 99)))
        return cls(p50_s=p50, p95_s=p95, p99_s=p99, mean_s=float(v.mean()), max_s=float(v.max()))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SimResult:
    """One simulated run of one replica at one load level.

    Attributes:
        workload: Name of the workload or trace.
        batching: ``"continuous"``, ``"static"`` or ``"dynamic"`` (images).
        n_requests: Requests simulated (all complete).
        offered_rate_per_s: Mean arrival rate of the workload, requests/s.
        achieved_rate_per_s: Completed requests over the makespan, requests/s (images/s).
        output_tokens_per_s: Generated tokens over the makespan, tokens/s (None for images).
        makespan_s: First arrival to last completion, seconds.
        e2e: End-to-end latency (arrival to last token), seconds.
        ttft: Time to first token (arrival to end of its prefill), seconds; None for images.
        tpot: Time per output token after the first, seconds; over requests with more than one
            output token; None for images or when no request has more than one.
        mean_in_system: Time-averaged number of requests in the system (waiting or running),
            integrated by the simulator from its own state: Little's law's L.
        mean_waiting: Time-averaged number of requests waiting to start, requests.
        mean_batch: Time-averaged batch size while the replica is busy, sequences or images.
        arrival_rate_per_s: Requests over the makespan, requests/s: Little's law's lambda.
        sustained_rate_per_s: Completions per second while arrivals are steady: over the window
            from the 10th to the 90th percentile arrival, requests/s. Unlike
            ``achieved_rate_per_s`` it does not include the drain after the last arrival, so a
            replica that keeps up shows the arrival rate and a saturated one its capacity.
        window_arrival_rate_per_s: Arrivals per second in that same window, requests/s.
        e2e_s: Per-request end-to-end latency, seconds (arrival order).
        ttft_s: Per-request time to first token, seconds (images: equals ``e2e_s``).
        tpot_s: Per-request time per output token, seconds (NaN where only one token).
    """

    workload: str
    batching: str
    n_requests: int
    offered_rate_per_s: float
    achieved_rate_per_s: float
    output_tokens_per_s: float | None
    makespan_s: float
    e2e: LatencyStats
    ttft: LatencyStats | None
    tpot: LatencyStats | None
    mean_in_system: float
    mean_waiting: float
    mean_batch: float
    arrival_rate_per_s: float
    sustained_rate_per_s: float
    window_arrival_rate_per_s: float
    e2e_s: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray

    @property
    def stable(self) -> bool:
        """Whether the replica kept up: served within :data:`THROUGHPUT_TOLERANCE` of arrivals.

        An unstable run's queue grows through the replay, so its mean and percentiles depend on
        how many requests were replayed: they are no steady-state figures.
        """
        return self.sustained_rate_per_s >= (1.0 - THROUGHPUT_TOLERANCE) * (
            self.window_arrival_rate_per_s
        )

    @property
    def mean_latency_s(self) -> float:
        """Mean end-to-end latency, seconds: Little's law's W."""
        return self.e2e.mean_s

    @property
    def littles_law_error(self) -> float:
        """Relative gap ``|L - lambda W| / L`` between measured occupancy and Little's law."""
        lw = self.arrival_rate_per_s * self.mean_latency_s
        return abs(self.mean_in_system - lw) / self.mean_in_system


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    """Raw outputs of an engine, before summary (times in seconds, arrays in arrival order)."""

    first_s: np.ndarray
    finish_s: np.ndarray
    area_in_system: float
    area_waiting: float
    area_batch: float
    busy_s: float


def steady_window_rates(arrival_s: np.ndarray, finish_s: np.ndarray) -> tuple[float, float]:
    """``(completions/s, arrivals/s)`` over the window from the 10th to the 90th percentile arrival.

    In steady state the two agree (completions trail arrivals by the latency at both ends of
    the window); when the replica cannot keep up, completions run at its capacity instead.
    With fewer than 10 requests, or all arriving at once, both are over the whole run.

    Args:
        arrival_s: Arrival times, seconds, sorted.
        finish_s: Completion times, seconds, in arrival order.

    Returns:
        Completions and arrivals per second in the window, requests/s.
    """
    n = int(arrival_s.size)
    lo_i, hi_i = n // 10, (9 * n) // 10
    if n >= 10:
        lo, hi = float(arrival_s[lo_i]), float(arrival_s[hi_i])
        if hi > lo:
            done = int(np.count_nonzero((finish_s >= lo) & (finish_s < hi)))
            return done / (hi - lo), (hi_i - lo_i) / (hi - lo)
    span = float(finish_s.max() - arrival_s[0]) or 1.0
    return n / span, n / span


def summarise(
    workload_name: str,
    batching: str,
    arrival_s: np.ndarray,
    output_tokens: np.ndarray | None,
    offered_rate_per_s: float,
    run: _Run,
) -> SimResult:
    """Turn an engine's raw outputs into a :class:`SimResult`."""
    e2e = run.finish_s - arrival_s
    ttft = run.first_s - arrival_s
    makespan = float(run.finish_s.max() - arrival_s[0])
    n = int(arrival_s.size)
    horizon = makespan if makespan > 0 else 1.0
    if output_tokens is None:
        tpot = np.full(n, np.nan)
        tokens_per_s, ttft_stats, tpot_stats = None, None, None
    else:
        steps = output_tokens - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            tpot = np.where(steps > 0, (run.finish_s - run.first_s) / steps, np.nan)
        tokens_per_s = float(output_tokens.sum()) / horizon
        ttft_stats = LatencyStats.of(ttft)
        tpot_stats = LatencyStats.of(tpot) if np.any(steps > 0) else None
    for arr in (e2e, ttft, tpot):
        arr.setflags(write=False)
    sustained, window_arrivals = steady_window_rates(arrival_s, run.finish_s)
    return SimResult(
        workload=workload_name,
        batching=batching,
        n_requests=n,
        offered_rate_per_s=offered_rate_per_s,
        achieved_rate_per_s=n / horizon,
        output_tokens_per_s=tokens_per_s,
        makespan_s=makespan,
        e2e=LatencyStats.of(e2e),
        ttft=ttft_stats,
        tpot=tpot_stats,
        mean_in_system=run.area_in_system / horizon,
        mean_waiting=run.area_waiting / horizon,
        mean_batch=run.area_batch / run.busy_s if run.busy_s > 0 else 0.0,
        arrival_rate_per_s=n / horizon,
        sustained_rate_per_s=sustained,
        window_arrival_rate_per_s=window_arrivals,
        e2e_s=e2e,
        ttft_s=ttft,
        tpot_s=tpot,
    )
