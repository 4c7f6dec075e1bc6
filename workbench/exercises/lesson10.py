"""Lesson 10, latency, throughput and tails: tables and self-checks on the serving simulator."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from workbench.exercises._check import CheckResult, check_level, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware
from workbench.models.presets import PRESETS
from workbench.serving import (
    TAIL_KNEE_FACTOR,
    LoadPoint,
    batcher_grid,
    find_knee,
    load_builtin_trace,
    mapper_step_time,
    saturation_rate,
    simulate,
    sweep_load,
    tail_knee,
)
from workbench.serving.step_time import TableStepTime

__all__ = [
    "check_knee_rate",
    "check_littles_law",
    "check_tail_prediction",
    "knee_claim",
    "latency_table",
    "panel_sweep",
    "step_table",
    "sweep",
    "tail_claim",
    "trace_claim",
    "trace_table",
]


def step_table(model: str, hw: str, max_batch: int = 32) -> TableStepTime:
    """Mapper step times of ``model`` on ``hw`` on a coarse grid (cached by the library)."""
    return mapper_step_time(model, hardware(hw), **batcher_grid(max_batch, PRESETS[model].max_seq))


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


#: Offered load as fractions of the replica's saturation rate, when no rates are given.
SATURATION_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.15)


@lru_cache(maxsize=64)
def panel_sweep(
    model: str,
    hw: str,
    *,
    trace: str = "production-chat",
    max_batch: int = 32,
    n: int = 1500,
    rates: tuple[float, ...] | None = None,
    fractions: tuple[float, ...] = SATURATION_FRACTIONS,
) -> tuple[LoadPoint, ...]:
    """The sweep the lessons' LatencyPanel shows, so its tables and the panel agree.

    Memoised (the sweep is seeded, so a setting always gives the same points): moving a control
    back to a value it had redraws at once.

    :func:`sweep` at ``rates``, or at fractions of the saturation rate
    (``fractions``) when ``rates`` is None.

    Args:
        model: Decoder preset.
        hw: Hardware profile.
        trace: Built-in trace name.
        max_batch: Largest batch.
        n: Requests per load level.
        rates: Offered rates, requests/s, or None.
        fractions: Offered rates as fractions of the saturation rate (when ``rates`` is None).

    Returns:
        One load point per rate.
    """
    if rates is None:
        work = load_builtin_trace(trace).head(n)
        sat = saturation_rate(step_table(model, hw, max_batch), work, max_batch)
        rates = tuple(sat * f for f in fractions)
    return sweep(model, hw, rates, trace=trace, n=n, max_batch=max_batch)


def knee_claim(points: tuple[LoadPoint, ...], sla_s: float) -> Claim:
    """The knee of ``points`` at a p99 SLA, as a sentence (the panel prints the same line).

    Args:
        points: A sweep.
        sla_s: p99 end-to-end SLA, seconds.

    Returns:
        Markdown: the last offered rate that meets the SLA and the first that breaks it.
    """
    knee = find_knee(points, sla_s=sla_s)
    ok, bad = knee.last_ok, knee.first_break
    if ok is None:
        return Claim(f"Every swept rate breaks the {sla_s:g} s p99 SLA.")
    if bad is None:
        text = (
            f"Every swept rate up to **{ok.offered_rate_per_s:.3g} requests/s** meets the "
            f"{sla_s:g} s p99 SLA (p99 {ok.p99_e2e_s:.3g} s there): the sweep never reached the "
            "knee, so that rate is a lower bound on capacity, not the knee; sweep higher"
        )
    else:
        text = (
            f"At a {sla_s:g} s p99 SLA the knee is at **{ok.offered_rate_per_s:.3g} requests/s**"
            f" offered (p99 {ok.p99_e2e_s:.3g} s); at {bad.offered_rate_per_s:.3g} requests/s "
            f"the p99 is {bad.p99_e2e_s:.3g} s"
        )
    return Claim(text + ". " + _tail_sentence(points))


def _tail_sentence(points: tuple[LoadPoint, ...]) -> str:
    """Where the p99 leaves its low-load level (x :data:`TAIL_KNEE_FACTOR`), as a sentence."""
    low = min(points, key=lambda p: p.offered_rate_per_s)
    past = tail_knee(points)
    rise = f"x{TAIL_KNEE_FACTOR:g} its low-load {low.p99_e2e_s:.3g} s"
    if past is None:
        return f"The p99 never rises past {rise} in this sweep: no tail knee was reached."
    return (
        f"The p99 leaves its low-load level (past {rise}) at "
        f"{past.offered_rate_per_s:.3g} requests/s."
    )


def tail_claim(points: tuple[LoadPoint, ...]) -> Claim:
    """Mean against p99, and the time to first token from the lightest to the heaviest load.

    Args:
        points: A sweep, lightest load first.

    Returns:
        Markdown: p99 over mean at the lightest load, and p99 TTFT (s) at both ends.
    """
    lo, hi = points[0], points[-1]
    return Claim(
        f"At {lo.offered_rate_per_s:.3g} requests/s the p99 is x{lo.p99_e2e_s / lo.mean_e2e_s:.2g} "
        f"the mean ({lo.p99_e2e_s:.3g} s against {lo.mean_e2e_s:.3g} s): most requests are "
        f"short and a few are very long. The p99 time to first token goes from "
        f"{lo.p99_ttft_s or 0:.3g} s at {lo.offered_rate_per_s:.3g} requests/s to "
        f"{hi.p99_ttft_s or 0:.3g} s at {hi.offered_rate_per_s:.3g}: near saturation requests "
        "queue for a prefill slot."
    )


def trace_claim(table: pd.DataFrame) -> Claim:
    """The tail of the synthetic trace against the production-like one, from :func:`trace_table`."""
    syn = table.loc["synthetic-fixed", "p99_over_p50"]
    prod = table.loc["production-chat", "p99_over_p50"]
    return Claim(
        f"The synthetic load's p99 is x{syn:g} its median, the production mix's x{prod:g}: "
        + (
            "a fixed-shape load cannot show a tail, and a capacity plan built on it promises a "
            "latency the production mix will not deliver."
            if syn < prod
            else "here the synthetic load has the longer tail."
        )
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


def check_tail_prediction(
    answer: object,
    *,
    model: str = "llama2-7b",
    hw: str = "h100-sxm",
    rate: float = 5.0,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: is the synthetic fixed-shape trace's p99 higher or lower than production's?"""
    table = trace_table(model, hw, rate)
    return check_level(
        f"synthetic vs production p99 at {rate:g} requests/s",
        answer,
        float(table.loc["production-chat", "p99_s"]),
        float(table.loc["synthetic-fixed", "p99_s"]),
        hint="which trace has requests far longer than its median, and what do they do to the "
        "requests queued behind them?",
        strict=strict,
    )
