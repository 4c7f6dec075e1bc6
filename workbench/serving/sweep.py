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
from workbench.serving.result import LatencyStats, SimResult
from workbench.serving.step_time import StepTimeModel
from workbench.serving.workload import Workload

__all__ = ["Knee", "LoadPoint", "find_knee", "sweep_image_load", "sweep_load"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPoint:
    """One load level of a sweep, flat for tables and JSON (seconds, requests/s, tokens/s).

    ``*_ttft_s`` and ``*_tpot_s`` are None for image workloads, as is ``output_tokens_per_s``.
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
        )

    def to_dict(self) -> dict[str, object]:
        """Plain dict of the fields (JSON-ready)."""
        return dataclasses.asdict(self)


def _rates(rates: Sequence[float]) -> list[float]:
    out = [float(r) for r in rates]
    if not out or any(not (r > 0 and np.isfinite(r)) for r in out):
        raise ServingError(
            f"sweep: rates must be a non-empty list of positive numbers, got {rates}"
        )
    return sorted(out)


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
    points = []
    for rate in _rates(rates):
        w = workload.scaled_to_rate(rate) if isinstance(workload, Workload) else workload(rate)
        result = simulate(
            w, step_time, batching=batching, max_batch=max_batch, max_wait_s=max_wait_s,
            max_prefill_tokens=max_prefill_tokens, kv_capacity_tokens=kv_capacity_tokens,
            variance=variance, seed=seed,
        )  # fmt: skip
        points.append(LoadPoint.of(rate, result))
    return tuple(points)


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
    points = []
    for rate in _rates(rates):
        w = workload.scaled_to_rate(rate) if isinstance(workload, Workload) else workload(rate)
        result = simulate_batches(
            w, batch_time, max_batch=max_batch, max_wait_s=max_wait_s, variance=variance, seed=seed
        )
        points.append(LoadPoint.of(rate, result))
    return tuple(points)


@dataclass(frozen=True, slots=True, kw_only=True)
class Knee:
    """Where a latency metric crosses the SLA along a sweep.

    Attributes:
        metric: The ``LoadPoint`` field compared (e.g. ``"p99_e2e_s"``).
        sla_s: The SLA, seconds.
        last_ok: The highest-rate point below ``first_break`` that meets the SLA (None if the
            lowest rate already breaks it).
        first_break: The lowest-rate point that breaks the SLA (None if none does).
    """

    metric: str
    sla_s: float
    last_ok: LoadPoint | None
    first_break: LoadPoint | None


def find_knee(points: Sequence[LoadPoint], sla_s: float, metric: str = "p99_e2e_s") -> Knee:
    """Find the highest load that meets an SLA and the first load that breaks it.

    Args:
        points: Load points (any order; sorted by offered rate here).
        sla_s: Latency limit, seconds: a point meets it when ``metric <= sla_s``.
        metric: A latency field of :class:`LoadPoint`, seconds.

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
    ordered = sorted(points, key=lambda p: p.offered_rate_per_s)
    last_ok = None
    for point in ordered:
        value = getattr(point, metric)
        if value is None:
            raise ServingError(f"find_knee: {metric} is not measured for {point.workload!r}")
        if value > sla_s:
            return Knee(metric=metric, sla_s=sla_s, last_ok=last_ok, first_break=point)
        last_ok = point
    return Knee(metric=metric, sla_s=sla_s, last_ok=last_ok, first_break=None)
