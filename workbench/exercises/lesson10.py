"""Lesson 10, latency, throughput and tails: tables and self-checks on the serving simulator."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._check import FIGURE, CheckResult, compare
from workbench.exercises._claims import Claim, gated
from workbench.exercises._moves import ControlMove, phrase_move
from workbench.exercises._shared import hardware
from workbench.exercises._text import LessonText
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
    "PANEL",
    "RATES",
    "check_knee_rate",
    "check_littles_law",
    "check_tail_prediction",
    "estimate_claim",
    "interpolated_knee",
    "knee_claim",
    "knee_estimate",
    "latency_table",
    "load_claim",
    "panel_claim",
    "panel_moves",
    "panel_sweep",
    "pitfall_claim",
    "question_claim",
    "step_table",
    "sweep",
    "tail_claim",
    "takeaway_claim",
    "trace_claim",
    "trace_table",
    "unstable_claim",
    "widget_claim",
    "widget_moves",
]

_TEXT = LessonText("lesson10")

#: Offered rates of the lesson's sweep and its panel, requests/s.
RATES = (1.0, 3.0, 5.0, 7.0, 9.0)
#: The LatencyPanel's controls as the lesson builds it (1,500 requests per rate, :data:`RATES`).
PANEL: dict[str, object] = {
    "model": "llama2-7b",
    "hardware": "h100-sxm",
    "trace": "production-chat",
    "max_batch": 32,
    "sla_ms": 15000.0,
}


def step_table(model: str, hardware_name: str, max_batch: int = 32) -> TableStepTime:
    """Mapper step times of ``model`` on ``hardware_name`` on a coarse grid (cached)."""
    return mapper_step_time(
        model, hardware(hardware_name), **batcher_grid(max_batch, PRESETS[model].max_seq)
    )


def sweep(
    model: str,
    hardware_name: str,
    rates: tuple[float, ...],
    *,
    trace: str = "production-chat",
    n: int = 1500,
    max_batch: int = 32,
    variance: bool = True,
    seed: int = 0,
) -> tuple[LoadPoint, ...]:
    """Replay ``n`` requests of a built-in trace at each rate on one replica."""
    h = hardware(hardware_name)
    return sweep_load(
        rates,
        load_builtin_trace(trace).head(n),
        step_table(model, hardware_name, max_batch),
        max_batch=max_batch,
        variance=h.runtime_variance if variance else None,
        seed=seed,
    )


#: Offered load as fractions of the replica's saturation rate, when no rates are given.
SATURATION_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.15)


@lru_cache(maxsize=64)
def panel_sweep(
    model: str,
    hardware_name: str,
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
        hardware_name: Hardware profile name.
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
        sat = saturation_rate(step_table(model, hardware_name, max_batch), work, max_batch)
        rates = tuple(sat * f for f in fractions)
    return sweep(model, hardware_name, rates, trace=trace, n=n, max_batch=max_batch)


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
        return _TEXT.claim("knee_none", sla=sla_s)
    if bad is None:
        return _TEXT.claim(
            "knee_unreached",
            ok_rate=ok.offered_rate_per_s,
            sla=sla_s,
            ok_p99=ok.p99_e2e_s,
            tail=_tail_sentence(points),
        )
    return _TEXT.claim("knee", sla=sla_s, **_bracket(ok, bad), tail=_tail_sentence(points))


def _bracket(ok: LoadPoint, bad: LoadPoint) -> dict[str, float]:
    """The last load that meets an SLA and the first that breaks it, as the texts name them."""
    return {
        "ok_rate": ok.offered_rate_per_s,
        "ok_p99": ok.p99_e2e_s,
        "bad_rate": bad.offered_rate_per_s,
        "bad_p99": bad.p99_e2e_s,
    }


def _tail_sentence(points: tuple[LoadPoint, ...]) -> str:
    """Where the p99 leaves its low-load level (x :data:`TAIL_KNEE_FACTOR`), as a sentence."""
    low = min(points, key=lambda p: p.offered_rate_per_s)
    past = tail_knee(points)
    return _TEXT.render(
        "tail_sentence",
        factor=TAIL_KNEE_FACTOR,
        low=low.p99_e2e_s,
        rate=past.offered_rate_per_s if past is not None else None,
    )


def tail_claim(points: tuple[LoadPoint, ...]) -> Claim:
    """Mean against p99, and the time to first token from the lightest to the heaviest load.

    Args:
        points: A sweep, lightest load first.

    Returns:
        Markdown: p99 over mean at the lightest load, and p99 TTFT (s) from there to the
        heaviest stable load (an unstable one has no steady tail to quote).
    """
    lo = points[0]
    hi = [p for p in points if p.stable][-1] if lo.stable else lo
    return _TEXT.claim(
        "tail",
        lo_rate=lo.offered_rate_per_s,
        ratio=lo.p99_e2e_s / lo.mean_e2e_s,
        p99=lo.p99_e2e_s,
        mean=lo.mean_e2e_s,
        lo_ttft=lo.p99_ttft_s or 0,
        hi_ttft=hi.p99_ttft_s or 0,
        hi_rate=hi.offered_rate_per_s,
    )


def trace_claim(table: pd.DataFrame) -> Claim:
    """The tail of the synthetic trace against the production-like one, from :func:`trace_table`."""
    syn = table.loc["synthetic-fixed", "p99_over_p50"]
    prod = table.loc["production-chat", "p99_over_p50"]
    return _TEXT.claim("trace", synthetic=syn, production=prod)


def latency_table(points: tuple[LoadPoint, ...]) -> pd.DataFrame:
    """Mean against p50/p95/p99 end-to-end latency (s) and throughput per load level.

    An unstable level (served below offered: :attr:`LoadPoint.stable`) has no steady latency:
    its latency cells read ``grows`` (its queue grows through the replay), never a figure.
    """

    def cell(p: LoadPoint, field: str, digits: int) -> float | str:
        v = p.steady(field)
        return "grows" if v is None else round(v, digits)

    return pd.DataFrame(
        [
            {
                "offered_per_s": round(p.offered_rate_per_s, 2),
                "achieved_per_s": round(p.achieved_rate_per_s, 2),
                "tokens_per_s": round(p.output_tokens_per_s or 0.0, 1),
                "queue": "steady" if p.stable else "grows",
                "mean_s": cell(p, "mean_e2e_s", 2),
                "p50_s": cell(p, "p50_e2e_s", 2),
                "p95_s": cell(p, "p95_e2e_s", 2),
                "p99_s": cell(p, "p99_e2e_s", 2),
                "p99_ttft_s": cell(p, "p99_ttft_s", 3),
            }
            for p in points
        ]
    ).set_index("offered_per_s")


def unstable_claim(
    points: tuple[LoadPoint, ...], *, model: str, hardware_name: str, n: int = 1500
) -> Claim:
    """Why an unstable load has no steady mean or p99: the same load replayed twice as long.

    Args:
        points: The sweep (``n`` requests a rate).
        model: Decoder preset.
        hardware_name: Hardware profile name.
        n: Requests per rate of ``points``.

    Returns:
        Markdown: the heaviest stable load, and for the first unstable load its served rate
        against offered and its mean and p99 over ``n`` and over ``2 n`` requests.
    """
    stable = [p for p in points if p.stable]
    bad = next((p for p in points if not p.stable), None)
    if bad is None:
        return _TEXT.claim("unstable_none", top=points[-1].offered_rate_per_s)
    longer = sweep(model, hardware_name, (bad.offered_rate_per_s,), n=2 * n)[0]
    return _TEXT.claim(
        "unstable",
        rate=bad.offered_rate_per_s,
        served=bad.sustained_rate_per_s,
        arrived=bad.window_arrival_rate_per_s,
        achieved=bad.achieved_rate_per_s,
        n=n,
        n2=2 * n,
        mean=bad.mean_e2e_s,
        mean2=longer.mean_e2e_s,
        p99=bad.p99_e2e_s,
        p992=longer.p99_e2e_s,
        grows=longer.mean_e2e_s > bad.mean_e2e_s,
        top=stable[-1].offered_rate_per_s if stable else None,
    )


def trace_table(model: str, hardware_name: str, rate: float, n: int = 1500) -> pd.DataFrame:
    """The same rate replayed from the production-like and the synthetic fixed-shape trace."""
    rows = []
    for trace in ("synthetic-fixed", "production-chat"):
        p = sweep(model, hardware_name, (rate,), trace=trace, n=n)[0]
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
    answer: float,
    *,
    model: str,
    hardware_name: str,
    rate: float,
    n: int = 1500,
    strict: bool | None = None,
) -> CheckResult:
    """Check L = lambda x W: the mean number of requests in the system at ``rate``."""
    work = load_builtin_trace("production-chat").head(n).scaled_to_rate(rate)
    r = simulate(
        work,
        step_table(model, hardware_name),
        max_batch=32,
        variance=hardware(hardware_name).runtime_variance,
    )
    return compare(
        "littles_law",
        answer,
        r.arrival_rate_per_s * r.mean_latency_s,
        rel_tol=0.05,
        **_TEXT.hints("littles_law"),
        strict=strict,
    )


#: The name :func:`check_knee_rate` reports (:func:`estimate_claim` is gated behind it).
KNEE_EXERCISE = "knee_rate"


def interpolated_knee(points: tuple[LoadPoint, ...], sla_s: float) -> tuple[LoadPoint, LoadPoint]:
    """The two swept loads whose p99 straddle ``sla_s``: the last that meets it, the first that not.

    Args:
        points: A sweep.
        sla_s: p99 end-to-end SLA, seconds.

    Returns:
        ``(last_ok, first_break)``, both stable loads (steady p99s to draw a line through).

    Raises:
        WorkbenchError: When no pair of stable loads straddles the SLA (every load breaks it,
            none does, or the first that breaks it is unstable: it has no steady p99).
    """
    knee = find_knee(points, sla_s)
    ok, bad = knee.last_ok, knee.first_break
    if ok is None or bad is None or not bad.stable:
        raise WorkbenchError(
            f"interpolated_knee: no two stable swept loads straddle a {sla_s:g} s p99 SLA; "
            "sweep rates on both sides of it"
        )
    return ok, bad


def knee_estimate(points: tuple[LoadPoint, ...], sla_s: float) -> float:
    """The offered rate (requests/s) where the p99 reaches ``sla_s``, on a straight line.

    The line runs through the two swept loads around the SLA (:func:`interpolated_knee`); a
    sweep measures the p99 only at its rates, so a plan between them is an estimate to replay.
    """
    ok, bad = interpolated_knee(points, sla_s)
    share = (sla_s - ok.p99_e2e_s) / (bad.p99_e2e_s - ok.p99_e2e_s)
    return ok.offered_rate_per_s + share * (bad.offered_rate_per_s - ok.offered_rate_per_s)


def check_knee_rate(
    answer: float, *, points: tuple[LoadPoint, ...], sla_s: float, strict: bool | None = None
) -> CheckResult:
    """Check the estimated knee at ``sla_s`` between two swept loads (:func:`knee_estimate`, 2 %).

    The SLA lies between two rows' p99, so the answer is computed from the measured
    latency-rate points, not read from a row.
    """
    return compare(
        KNEE_EXERCISE,
        answer,
        knee_estimate(points, sla_s),
        rel_tol=0.02,
        **_TEXT.hints("knee_rate"),
        strict=strict,
    )


def estimate_claim(
    points: tuple[LoadPoint, ...], sla_s: float, *, model: str, hardware_name: str, n: int = 1500
) -> Claim:
    """Exercise 2's estimate, and a replay at that rate that tests it (gated behind the check).

    Args:
        points: The sweep the estimate is drawn from.
        sla_s: p99 SLA, seconds.
        model: Decoder preset (for the replay).
        hardware_name: Hardware profile name.
        n: Requests the replay runs (as the sweep).

    Returns:
        Markdown: the two swept loads, the estimated rate, and the replayed p99 there against
        the SLA; hidden until :func:`check_knee_rate` passes or its answer is revealed.
    """
    ok, bad = interpolated_knee(points, sla_s)
    rate = knee_estimate(points, sla_s)
    replay = sweep(model, hardware_name, (rate,), n=n)[0]
    p99 = replay.steady("p99_e2e_s")
    claim = _TEXT.claim("estimate", sla=sla_s, **_bracket(ok, bad), rate=rate, replay_p99=p99)
    return gated(claim, after=KNEE_EXERCISE, label="Exercise 2")


def check_tail_prediction(
    answer: object,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    rate: float = 5.0,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: is the synthetic fixed-shape trace's p99 higher or lower than production's?"""
    table = trace_table(model, hardware_name, rate)
    return FIGURE.check(
        f"synthetic vs production p99 at {rate:g} requests/s",
        answer,
        float(table.loc["production-chat", "p99_s"]),
        float(table.loc["synthetic-fixed", "p99_s"]),
        hint=_TEXT.render("tail_prediction_hint"),
        strict=strict,
    )


def _first(points: tuple[LoadPoint, ...], pred: Callable[[LoadPoint], bool]) -> LoadPoint | None:
    return next((p for p in points if pred(p)), None)


def load_claim(points: tuple[LoadPoint, ...]) -> Claim:
    """Where latency rises against where throughput flattens, read from a sweep.

    Throughput flattens at the first load whose completions fall behind its arrivals
    (:meth:`LoadPoint.saturated`, the simulator's own test); the tail leaves its low-load level
    at :func:`workbench.serving.tail_knee` (p99 past x :data:`TAIL_KNEE_FACTOR`). The sentence
    says which comes first, and how far the mean, the median and the p99 had risen at the last
    load before throughput flattened.

    Args:
        points: A sweep, lightest load first.

    Returns:
        Markdown.
    """
    lo = points[0]
    sat = _first(points, lambda p: p.saturated())
    tail = tail_knee(points)
    if sat is None:
        return _TEXT.claim("load_unsaturated", top=points[-1].offered_rate_per_s)
    i = points.index(sat)
    if tail is None or points.index(tail) > i:
        order = "later"
    elif points.index(tail) == i:
        order = "same"
    else:
        order = "earlier"
    below = None
    if i > 1:  # a load between the lightest and the one where throughput flattens
        b = points[i - 1]
        rise = {
            "mean": b.mean_e2e_s / lo.mean_e2e_s,
            "median": b.p50_e2e_s / lo.p50_e2e_s,
            "p99": b.p99_e2e_s / lo.p99_e2e_s,
        }
        below = {
            "rate": b.offered_rate_per_s,
            **rise,
            "p99_s": b.p99_e2e_s - lo.p99_e2e_s,
            "median_s": b.p50_e2e_s - lo.p50_e2e_s,
            "most": max(rise, key=lambda k: rise[k]),
        }
    return _TEXT.claim(
        "load",
        sat_rate=sat.offered_rate_per_s,
        sat_served=sat.achieved_rate_per_s,
        order=order,
        tail_rate=tail.offered_rate_per_s if tail is not None else None,
        factor=TAIL_KNEE_FACTOR,
        low_p99=lo.p99_e2e_s,
        below=below,
    )


def question_claim(points: tuple[LoadPoint, ...], sla_s: float) -> Claim:
    """The senior-engineer question, its figures read from the sweep (not typed).

    The load test reports the heaviest stable load whose *mean* latency is under the SLA (an
    unstable load has no steady mean to report); the question is what to promise against a
    p99 SLA.
    """
    ok = [p for p in points if p.stable and p.mean_e2e_s <= sla_s]
    p = ok[-1] if ok else points[0]
    return _TEXT.claim(
        "question",
        served=p.achieved_rate_per_s,
        offered=p.offered_rate_per_s,
        mean=p.mean_e2e_s,
        sla=sla_s,
    )


def takeaway_claim(
    points: tuple[LoadPoint, ...], sla_s: float, *, model: str, hardware_name: str, n: int = 1500
) -> Claim:
    """The lesson's takeaways that state a direction, computed from the sweeps.

    Args:
        points: The production-like sweep.
        sla_s: p99 SLA, seconds.
        model: Decoder preset (for the synthetic sweep at the same rates).
        hardware_name: Hardware profile name.
        n: Requests per rate.

    Returns:
        Markdown bullets: planning at the knee against the heaviest stable load and the mean
        (an unstable load, served below offered, is named as one with no steady latency); the
        synthetic trace's capacity against the production mix's.
    """
    knee = find_knee(points, sla_s).last_ok
    steady = [p for p in points if p.stable] or list(points[:1])
    peak = max(steady, key=lambda p: p.achieved_rate_per_s)
    by_mean = [p for p in steady if p.mean_e2e_s <= sla_s]
    over = next((p for p in points if not p.stable), None)
    if knee is None:
        first = _TEXT.render("takeaway_no_knee", sla=sla_s)
    else:
        m = by_mean[-1] if by_mean else None
        first = _TEXT.render(
            "takeaway_knee",
            knee_rate=knee.offered_rate_per_s,
            sla=sla_s,
            peak_served=peak.achieved_rate_per_s,
            peak_offered=peak.offered_rate_per_s,
            peak_p99=peak.p99_e2e_s,
            peak_over_sla=peak.p99_e2e_s / sla_s,
            mean_is_peak=m is peak,
            mean_rate=m.offered_rate_per_s if m is not None else None,
            mean_p99=m.p99_e2e_s if m is not None else None,
            over_rate=over.offered_rate_per_s if over is not None else None,
            over_served=over.sustained_rate_per_s if over is not None else None,
        )
    rates = tuple(p.offered_rate_per_s for p in points)
    syn = sweep(model, hardware_name, rates, trace="synthetic-fixed", n=n)
    sk = find_knee(syn, sla_s)
    if sk.last_ok is None or knee is None:
        second = _TEXT.render("takeaway_no_compare")
    else:
        second = _TEXT.render(
            "takeaway_synthetic",
            rate=sk.last_ok.offered_rate_per_s,
            p99=sk.last_ok.p99_e2e_s,
            ratio=sk.last_ok.offered_rate_per_s / knee.offered_rate_per_s,
            unbounded=sk.first_break is None,
        )
    return Claim(first + "\n" + second)


def pitfall_claim(
    points: tuple[LoadPoint, ...],
    *,
    model: str,
    hardware_name: str,
    rate: float,
    n: int = 1500,
    few: int = 100,
) -> Claim:
    """The lesson's pitfalls that state a direction, each computed (or worded as found).

    Args:
        points: The production-like sweep (1,500 requests a rate).
        model: Decoder preset.
        hardware_name: Hardware profile name.
        rate: The offered rate the few-requests and variance comparisons replay, requests/s.
        n: Requests per rate of ``points``.
        few: The small request count of the few-requests comparison.

    Returns:
        Markdown bullets: the mean against the p99; a p99 from ``few`` requests against the
        sweep's; one load level (:func:`load_claim`'s order); runtime variance's effect on the
        mean and on the p99.
    """
    lo = points[0]
    full = next(p for p in points if p.offered_rate_per_s == rate)
    small = sweep(model, hardware_name, (rate,), n=few)[0]
    calm = sweep(model, hardware_name, (rate,), n=n, variance=False)[0]
    d_mean = full.mean_e2e_s / calm.mean_e2e_s - 1
    d_p99 = full.p99_e2e_s / calm.p99_e2e_s - 1
    if d_p99 > 2 * max(d_mean, 0):
        variance = "tail"
    elif d_mean > 2 * max(d_p99, 0):
        variance = "mean"
    else:
        variance = "alike"
    sat = _first(points, lambda p: p.saturated())
    tail = tail_knee(points)
    tail_first = sat is not None and tail is not None and points.index(tail) <= points.index(sat)
    return _TEXT.claim(
        "pitfall",
        lo_rate=lo.offered_rate_per_s,
        lo_ratio=lo.p99_e2e_s / lo.mean_e2e_s,
        rate=rate,
        few=few,
        few_p99=small.p99_e2e_s,
        n=n,
        full_p99=full.p99_e2e_s,
        sat_rate=sat.offered_rate_per_s if sat is not None else None,
        tail_rate=tail.offered_rate_per_s if tail_first and tail is not None else None,
        d_mean=d_mean,
        d_p99=d_p99,
        variance=variance,
    )


def _knee_phrase(points: tuple[LoadPoint, ...], sla_s: float) -> str:
    """The knee as the LatencyPanel's line states it, short."""
    found = find_knee(points, sla_s)
    ok = found.last_ok
    return _TEXT.render(
        "knee_phrase",
        ok_rate=ok.offered_rate_per_s if ok is not None else None,
        unbounded=found.first_break is None,
        ok_p99=ok.p99_e2e_s if ok is not None else None,
    )


#: The LatencyPanel's on-screen names of controls whose key differs.
_LABELS = {"max_batch": "max batch", "sla_ms": "SLA ms"}


def panel_moves(
    panel: dict[str, object], ends: tuple[tuple[str, object], ...]
) -> tuple[ControlMove, ...]:
    """One :class:`ControlMove` of a LatencyPanel per ``(control, end)``, each from ``panel``."""
    return tuple(
        ControlMove(
            widget="LatencyPanel",
            control=c,
            start=panel[c],
            end=end,
            setting=tuple((k, v) for k, v in panel.items() if k != c),
            label=_LABELS.get(c, ""),
        )
        for c, end in ends
    )


def panel_claim(
    moves: tuple[ControlMove, ...],
    *,
    n: int,
    rates: tuple[float, ...] | None = None,
    fractions: tuple[float, ...] = SATURATION_FRACTIONS,
) -> Claim:
    """What each instructed move does to the LatencyPanel's knee, computed with its own sweep.

    The panel's sweep (:func:`panel_sweep`, memoised: the panel and this claim share it) before
    and after each move, and the knee the panel's line then states (:func:`find_knee`).

    Args:
        moves: LatencyPanel moves (see :func:`panel_moves`).
        n: Requests per rate, as the panel replays.
        rates: The panel's offered rates (None: ``fractions`` of the saturation rate).
        fractions: The panel's rate fractions when ``rates`` is None.

    Returns:
        Markdown, one bullet per move.
    """
    lines = []
    for m in moves:
        knees = []
        for state in (m.state(), m.state(after=True)):
            pts = panel_sweep(
                str(state["model"]), str(state["hardware"]), trace=str(state["trace"]),
                max_batch=int(str(state["max_batch"])),
                n=n, rates=rates, fractions=fractions,
            )  # fmt: skip
            knees.append(_knee_phrase(pts, float(str(state["sla_ms"])) / 1e3))
        lines.append(
            _TEXT.render("panel_move", move=phrase_move(m), before=knees[0], after=knees[1])
        )
    return Claim("\n".join(lines))


def widget_moves() -> tuple[ControlMove, ...]:
    """The instructions of lesson 10's panel, as data: trace, batch limit, platform, SLA."""
    ends = (("trace", "synthetic-fixed"), ("max_batch", 4), ("hardware", "h200"),
            ("sla_ms", 20000.0))  # fmt: skip
    return panel_moves(PANEL, ends)


def widget_claim(n: int = 1500, rates: tuple[float, ...] = RATES) -> Claim:
    """Lesson 10's panel instructions and the knee each one moves to (:func:`panel_claim`)."""
    return panel_claim(widget_moves(), n=n, rates=rates)
