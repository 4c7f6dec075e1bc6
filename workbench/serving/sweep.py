"""Load sweeps: one simulation per offered rate, and the knee where the tail breaks the SLA."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from workbench.hw.schema import RuntimeVariance
from workbench.serving._errors import ServingError
from workbench.serving.images import simulate_batches
from workbench.serving.llm import simulate
from workbench.serving.result import THROUGHPUT_TOLERANCE, LatencyStats, SimResult
from workbench.serving.step_time import StepTimeModel
from workbench.serving.workload import Workload

__all__ = [
    "LATENCY_FIELDS",
    "TAIL_KNEE_FACTOR",
    "THROUGHPUT_TOLERANCE",
    "UNSTABLE_NOTE",
    "Knee",
    "LoadPoint",
    "find_knee",
    "sweep_image_load",
    "sweep_load",
    "tail_knee",
]

#: How far above its low-load level the p99 must rise for the tail to have "left" it: x2.
#: An assumption (no standard figure exists): at twice the unloaded tail, queueing time equals
#: the service time itself, the usual reading of where an M/G/1-like queue turns steep.
TAIL_KNEE_FACTOR = 2.0
#: What every reader of an unstable load level says instead of a steady latency.
UNSTABLE_NOTE = (
    "unstable: served below offered, the queue grows through the replay, so its mean and "
    "percentiles depend on how many requests are replayed (no steady value exists)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPoint:
    """One load level of a sweep, flat for tables and JSON (seconds, requests/s, tokens/s).

    ``*_ttft_s`` and ``*_tpot_s`` are None for image workloads, as is ``output_tokens_per_s``.
    ``sustained_rate_per_s`` and ``window_arrival_rate_per_s`` are completions and arrivals per
    second while arrivals are steady (:func:`workbench.serving.result.steady_window_rates`):
    a level whose completions fall behind its arrivals is saturated (:meth:`saturated`), and
    so unstable (:attr:`stable` is False): its queue grows for the whole replay, so its latency
    fields are what one replay of that length happened to give, not a steady-state figure
    (a longer replay gives a larger mean and p99). Read them through :meth:`steady`, which
    returns None for an unstable level.
    """

    workload: str
    batching: str
    offered_rate_per_s: float
    achieved_rate_per_s: float
    output_tokens_per_s: float | None
    p50_e2e_s: float
    p95_e2e_s: float
    p99_e2e_s: float
    mean_e2e_s: float
    p50_ttft_s: float | None
    p95_ttft_s: float | None
    p99_ttft_s: float | None
    p50_tpot_s: float | None
    p95_tpot_s: float | None
    p99_tpot_s: float | None
    mean_in_system: float
    mean_batch: float
    sustained_rate_per_s: float
    window_arrival_rate_per_s: float

    def saturated(self, tolerance: float = THROUGHPUT_TOLERANCE) -> bool:
        """Whether completions fall more than ``tolerance`` (a fraction) behind arrivals."""
        return self.sustained_rate_per_s < (1.0 - tolerance) * self.window_arrival_rate_per_s

    @property
    def stable(self) -> bool:
        """Whether the replica keeps up (served within :data:`THROUGHPUT_TOLERANCE` of offered).

        An unstable level has no steady latency: its queue, and so its mean and percentiles,
        grow with the replay's length.
        """
        return not self.saturated()

    def steady(self, field: str) -> float | None:
        """A latency field (seconds) as a steady-state figure: None when the level is unstable.

        Args:
            field: A latency field name, e.g. ``"p99_e2e_s"`` or ``"mean_e2e_s"``.

        Returns:
            The field's value, seconds, or None (unstable level, or not measured).
        """
        if field not in LATENCY_FIELDS:
            raise ServingError(f"LoadPoint.steady: {field!r} is not a latency field")
        return getattr(self, field) if self.stable else None

    @classmethod
    def of(cls, offered_rate_per_s: float, result: SimResult) -> LoadPoint:
        """Flatten a simulation result run at ``offered_rate_per_s`` requests/s."""

        def pct(stats: LatencyStats | None, q: str) -> float | None:
            return None if stats is None else getattr(stats, f"{q}_s")

        return cls(
            workload=result.workload,
            batching=result.batching,
            offered_rate_per_s=offered_rate_per_s,
            achieved_rate_per_s=result.achieved_rate_per_s,
            output_tokens_per_s=result.output_tokens_per_s,
            p50_e2e_s=result.e2e.p50_s,
            p95_e2e_s=result.e2e.p95_s,
            p99_e2e_s=result.e2e.p99_s,
            mean_e2e_s=result.e2e.mean_s,
            p50_ttft_s=pct(result.ttft, "p50"),
            p95_ttft_s=pct(result.ttft, "p95"),
            p99_ttft_s=pct(result.ttft, "p99"),
            p50_tpot_s=pct(result.tpot, "p50"),
            p95_tpot_s=pct(result.tpot, "p95"),
            p99_tpot_s=pct(result.tpot, "p99"),
            mean_in_system=result.mean_in_system,
            mean_batch=result.mean_batch,
            sustained_rate_per_s=result.sustained_rate_per_s,
            window_arrival_rate_per_s=result.window_arrival_rate_per_s,
        )

    def to_dict(self) -> dict[str, object]:
        """Plain dict of the fields and ``stable`` (JSON-ready)."""
        return {**dataclasses.asdict(self), "stable": self.stable}


#: The :class:`LoadPoint` fields that are latencies, seconds.
LATENCY_FIELDS = (
    *(f"{q}_{m}_s" for m in ("e2e", "ttft", "tpot") for q in ("p50", "p95", "p99")),
    "mean_e2e_s",
)


def _rates(rates: Sequence[float]) -> list[float]:
    out = [float(r) for r in rates]
    if not out or any(not (r > 0 and np.isfinite(r)) for r in out):
        raise ServingError(
            f"sweep: rates must be a non-empty list of positive numbers, got {rates}"
        )
    return sorted(out)


def _sweep(
    rates: Sequence[float],
    workload: Workload | Callable[[float], Workload],
    run: Callable[[Workload], SimResult],
) -> tuple[LoadPoint, ...]:
    """``run`` on the workload at each rate (a trace scaled to it, or the factory's), in order."""
    points = []
    for rate in _rates(rates):
        w = workload.scaled_to_rate(rate) if isinstance(workload, Workload) else workload(rate)
        points.append(LoadPoint.of(rate, run(w)))
    return tuple(points)


def sweep_load(
    rates: Sequence[float],
    workload: Workload | Callable[[float], Workload],
    step_time: StepTimeModel,
    *,
    batching: Literal["continuous", "static"] = "continuous",
    max_batch: int = 64,
    max_wait_s: float = 0.05,
    max_prefill_tokens: int | None = None,
    kv_capacity_tokens: int | None = None,
    variance: RuntimeVariance | None = None,
    seed: int = 0,
) -> tuple[LoadPoint, ...]:
    """Simulate an LLM replica at each offered rate (options as in :func:`simulate`).

    Args:
        rates: Offered rates, requests/s (simulated in increasing order).
        workload: A trace replayed at each rate (its arrival times scaled to the rate), or a
            factory ``rate -> Workload`` (e.g. ``lambda r: poisson_arrivals(r, 2000, seed=1)``).
        step_time: Prefill and decode iteration times, seconds.
        batching: ``"continuous"`` or ``"static"``.
        max_batch: Most sequences in one batch.
        max_wait_s: Static batching's longest wait for a full batch, seconds.
        max_prefill_tokens: Prompt-token budget of one prefill iteration, or None.
        kv_capacity_tokens: KV-cache capacity, tokens, or None.
        variance: Runtime-variance parameters, or None.
        seed: Seed of the variance draws (the same at every rate).

    Returns:
        One :class:`LoadPoint` per rate, in increasing rate.
    """
    return _sweep(rates, workload, lambda w: simulate(
        w, step_time, batching=batching, max_batch=max_batch, max_wait_s=max_wait_s,
        max_prefill_tokens=max_prefill_tokens, kv_capacity_tokens=kv_capacity_tokens,
        variance=variance, seed=seed,
    ))  # fmt: skip


def sweep_image_load(
    rates: Sequence[float],
    workload: Workload | Callable[[float], Workload],
    batch_time: Callable[[int], float],
    *,
    max_batch: int = 32,
    max_wait_s: float = 0.005,
    variance: RuntimeVariance | None = None,
    seed: int = 0,
) -> tuple[LoadPoint, ...]:
    """Simulate an image-serving replica at each offered rate (see :func:`simulate_batches`).

    Args:
        rates: Offered rates, images/s.
        workload: Arrivals replayed at each rate (scaled), or a factory ``rate -> Workload``.
        batch_time: ``batch -> seconds`` for one batch.
        max_batch: Largest batch, images.
        max_wait_s: Longest wait for a batch to fill, seconds.
        variance: Runtime-variance parameters, or None.
        seed: Seed of the variance draws.

    Returns:
        One :class:`LoadPoint` per rate, in increasing rate.
    """
    return _sweep(rates, workload, lambda w: simulate_batches(
        w, batch_time, max_batch=max_batch, max_wait_s=max_wait_s, variance=variance, seed=seed
    ))  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Knee:
    """Where a sweep stops being OK: the SLA breaks or the replica stops keeping up.

    Attributes:
        metric: The ``LoadPoint`` field compared (e.g. ``"p99_e2e_s"``).
        sla_s: The SLA, seconds.
        last_ok: The highest-rate point below ``first_break`` that is OK: it meets the SLA and
            is not saturated (None if the lowest rate already fails).
        first_break: The lowest-rate point that is not OK (None if none is).
        tolerance: The throughput tolerance used (a fraction; None: SLA only).
    """

    metric: str
    sla_s: float
    last_ok: LoadPoint | None
    first_break: LoadPoint | None
    tolerance: float | None = THROUGHPUT_TOLERANCE

    def status(self, point: LoadPoint) -> str:
        """``"ok"``, ``"sla"`` (the SLA breaks) or ``"saturated"`` for one point of the sweep."""
        value = getattr(point, self.metric)
        if value is None or value > self.sla_s:
            return "sla"
        if self.tolerance is not None and point.saturated(self.tolerance):
            return "saturated"
        return "ok"


def find_knee(
    points: Sequence[LoadPoint],
    sla_s: float,
    metric: str = "p99_e2e_s",
    *,
    tolerance: float | None = THROUGHPUT_TOLERANCE,
) -> Knee:
    """Find the highest load that is OK and the first load that is not.

    A load is OK when ``metric <= sla_s`` and, unless ``tolerance`` is None, the replica keeps
    up with it (:meth:`LoadPoint.saturated`): a finite trace can end before the queue of a
    saturated replica has pushed the tail latency past the SLA, so latency alone is not enough.

    Args:
        points: Load points (any order; sorted by offered rate here).
        sla_s: Latency limit, seconds: a point meets it when ``metric <= sla_s``.
        metric: A latency field of :class:`LoadPoint`, seconds.
        tolerance: Largest shortfall of completions behind arrivals, a fraction (None: SLA only).

    Returns:
        The :class:`Knee`.

    Example:
        >>> from workbench.serving import AnalyticStepTime, poisson_arrivals
        >>> make = lambda r: poisson_arrivals(r, 300, seed=0)
        >>> pts = sweep_load([1, 40], make, AnalyticStepTime())
        >>> k = find_knee(pts, sla_s=2.0)
        >>> k.last_ok.offered_rate_per_s, k.first_break.offered_rate_per_s
        (1.0, 40.0)
    """
    names = {f.name for f in dataclasses.fields(LoadPoint)}
    if metric not in names or not metric.startswith(("p50_", "p95_", "p99_", "mean_e2e")):
        raise ServingError(f"find_knee: unknown latency metric {metric!r}")
    if tolerance is not None and not 0 <= tolerance < 1:
        raise ServingError(f"find_knee: tolerance must be in [0, 1), got {tolerance}")
    knee = Knee(metric=metric, sla_s=sla_s, last_ok=None, first_break=None, tolerance=tolerance)
    ordered = sorted(points, key=lambda p: p.offered_rate_per_s)
    last_ok = None
    for point in ordered:
        if getattr(point, metric) is None:
            raise ServingError(f"find_knee: {metric} is not measured for {point.workload!r}")
        if knee.status(point) != "ok":
            return dataclasses.replace(knee, last_ok=last_ok, first_break=point)
        last_ok = point
    return dataclasses.replace(knee, last_ok=last_ok)


def tail_knee(
    points: Sequence[LoadPoint], metric: str = "p99_e2e_s", *, factor: float = TAIL_KNEE_FACTOR
) -> LoadPoint | None:
    """The lowest load whose tail has left its low-load level: ``metric > factor x`` the lightest.

    The knee of the curve itself, independent of any SLA: below it latency is flat (service
    time), above it queueing dominates. None when the sweep never reaches it (then the highest
    swept rate is not a knee, and a lesson or panel must say the sweep stopped short).

    Args:
        points: Load points (any order).
        metric: A latency field of :class:`LoadPoint`, seconds.
        factor: Rise over the lightest load's figure that marks the knee (> 1).

    Returns:
        The first point past the knee, or None.
    """
    if not factor > 1:
        raise ServingError(f"tail_knee: factor must be > 1, got {factor}")
    ordered = sorted(points, key=lambda p: p.offered_rate_per_s)
    if not ordered:
        return None
    base = getattr(ordered[0], metric)
    if base is None:
        raise ServingError(f"tail_knee: {metric} is not measured for {ordered[0].workload!r}")
    for point in ordered[1:]:
        value = getattr(point, metric)
        if value is not None and value > factor * base:
            return point
    return None
