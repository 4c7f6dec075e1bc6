"""Lesson 10, latency, throughput and tails: tables and self-checks on the serving simulator."""

from __future__ import annotations

import pandas as pd

from workbench.exercises._check import CheckResult, compare
from workbench.exercises._shared import hardware
from workbench.models.presets import PRESETS
from workbench.serving import (
    LoadPoint,
    find_knee,
    load_builtin_trace,
    mapper_step_time,
    simulate,
    sweep_load,
)
from workbench.serving.step_time import TableStepTime

__all__ = [
    "check_knee_rate",
    "check_littles_law",
    "latency_table",
    "step_table",
    "sweep",
    "trace_table",
]


def step_table(model: str, hw: str, max_batch: int = 32) -> TableStepTime:
    """Mapper step times of ``model`` on ``hw`` on a coarse grid (cached by the library)."""
    cap = PRESETS[model].max_seq
    return mapper_step_time(
        model,
        hardware(hw),
        batches=(1, max(1, max_batch // 4), max_batch),
        prompt_tokens=tuple(sorted({min(v, cap) for v in (128, 512, 2048)})),
        contexts=tuple(sorted({min(v, cap) for v in (128, 1024, 4096)})),
    )


def sweep(
    model: str,
    hw: str,
    rates: tuple[float, ...],
    *,
    trace: str = "production-chat",
    n: int = 1500,
    max_batch: int = 32,
    variance: bool = True,
    seed: int = 0,
) -> tuple[LoadPoint, ...]:
    """Replay ``n`` requests of a built-in trace at each rate on one replica."""
    h = hardware(hw)
    return sweep_load(
        rates,
        load_builtin_trace(trace).head(n),
        step_table(model, hw, max_batch),
        max_batch=max_batch,
        variance=h.runtime_variance if variance else None,
        seed=seed,
    )


def latency_table(points: tuple[LoadPoint, ...]) -> pd.DataFrame:
    """Mean against p50/p95/p99 end-to-end latency (s) and throughput per load level."""
    return pd.DataFrame(
        [
            {
                "offered_per_s": round(p.offered_rate_per_s, 2),
                "achieved_per_s": round(p.achieved_rate_per_s, 2),
                "tokens_per_s": round(p.output_tokens_per_s or 0.0, 1),
                "mean_s": round(p.mean_e2e_s, 2),
                "p50_s": round(p.p50_e2e_s, 2),
                "p95_s": round(p.p95_e2e_s, 2),
                "p99_s": round(p.p99_e2e_s, 2),
                "p99_ttft_s": round(p.p99_ttft_s or 0.0, 3),
            }
            for p in points
        ]
    ).set_index("offered_per_s")


def trace_table(model: str, hw: str, rate: float, n: int = 1500) -> pd.DataFrame:
    """The same rate replayed from the production-like and the synthetic fixed-shape trace."""
    rows = []
    for trace in ("synthetic-fixed", "production-chat"):
        p = sweep(model, hw, (rate,), trace=trace, n=n)[0]
        rows.append(
            {
                "trace": trace,
                "tokens_per_s": round(p.output_tokens_per_s or 0.0, 1),
                "p50_s": round(p.p50_e2e_s, 2),
                "p99_s": round(p.p99_e2e_s, 2),
                "p99_over_p50": round(p.p99_e2e_s / p.p50_e2e_s, 1),
            }
        )
    return pd.DataFrame(rows).set_index("trace")


def check_littles_law(
    answer: float, *, model: str, hw: str, rate: float, n: int = 1500, strict: bool | None = None
) -> CheckResult:
    """Check L = lambda x W: the mean number of requests in the system at ``rate``."""
    work = load_builtin_trace("production-chat").head(n).scaled_to_rate(rate)
    r = simulate(work, step_table(model, hw), max_batch=32, variance=hardware(hw).runtime_variance)
    return compare(
        "littles_law",
        answer,
        r.arrival_rate_per_s * r.mean_latency_s,
        rel_tol=0.05,
        hint="multiply the arrival rate by the mean end-to-end latency",
        hint2="L = rate (requests/s) * mean latency (s): a count of requests in the system",
        strict=strict,
    )


def check_knee_rate(
    answer: float, *, points: tuple[LoadPoint, ...], sla_s: float, strict: bool | None = None
) -> CheckResult:
    """Check the highest offered rate whose p99 end-to-end latency meets ``sla_s``."""
    knee = find_knee(points, sla_s).last_ok
    expected = knee.offered_rate_per_s if knee else 0.0
    return compare(
        "knee_rate",
        answer,
        round(expected, 2),
        rel_tol=0.01,
        hint="the last row whose p99_s is at or below the SLA",
        hint2="scan offered_per_s upward; stop before the first p99_s above the SLA",
        strict=strict,
    )
