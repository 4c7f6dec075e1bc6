"""Lesson 06, regression triage: self-checks, the real measured pair triaged, rules as claims.

The practice scenarios' checks (first failing mechanism and owner, the stall prediction), the
real DLRM A100 -> V100 pair as the tool reads and triages it
(:mod:`workbench.exercises._lesson06_measured`), the panel instructions as data
(:mod:`workbench.exercises._lesson06_panel`), the takeaways and pitfalls as checked claims
(:mod:`workbench.exercises._lesson06_rules`), and a first-principles exercise: the V100's
steady-state step time from its steps' start times.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from workbench.exercises._check import FIGURE, CheckResult
from workbench.exercises._claims import Claim, gated
from workbench.exercises._lesson06_measured import (
    A100_TRACE,
    HTA_DATA,
    V100_TRACE,
    launch_lag_claim,
    measured_headline_claim,
    measured_records,
    measured_triage,
    pair_differences_claim,
    read_pair_trace,
)
from workbench.exercises._lesson06_panel import (
    PANEL_MOVES,
    PANEL_SCENARIO,
    panel_move_claim,
)
from workbench.exercises._lesson06_rules import pitfalls, takeaways
from workbench.exercises._text import LessonText
from workbench.hw import load_hardware
from workbench.report.trace_text import pair_text, trace_text
from workbench.review import SCENARIOS, build_scenario, triage
from workbench.review.join.pairs import pair_document
from workbench.review.join.trace_summary import choose_hardware, trace_document

__all__ = [
    "A100_TRACE",
    "HTA_DATA",
    "PANEL_MOVES",
    "PANEL_SCENARIO",
    "V100_TRACE",
    "check_first_failing",
    "check_stall_prediction",
    "check_step_time",
    "exercise_move_claim",
    "expected_table_text",
    "first_failing_name",
    "gpu_lag_claim",
    "launch_lag_claim",
    "measured_headline_claim",
    "measured_pair",
    "measured_pair_text",
    "measured_records",
    "measured_triage",
    "pair_differences_claim",
    "panel_move_claim",
    "pitfalls",
    "step_timeline_ms",
    "synthetic_claim",
    "takeaways",
    "triage_scenario",
]


_TEXT = LessonText("lesson06")


def triage_scenario(scenario: str):  # -> TriageReport
    """Triage a practice scenario with its declared change (no serving simulation)."""
    base, cand = build_scenario(scenario)
    return triage(base, cand, changed=SCENARIOS[scenario].changed, simulate=False)


def first_failing_name(scenario: str) -> str:
    """The exercise name :func:`check_first_failing` reports for ``scenario``."""
    return f"first failing mechanism ({scenario})"


def exercise_move_claim(scenario: str, label: str) -> Claim:
    """The panel move that shows ``scenario``'s answer, hidden until its check passes.

    Selecting the scenario in the panel fills its *First failing mechanism* and *Owners*
    sections, which answer :func:`check_first_failing`; so the instruction shows only once the
    learner's prediction is checked (or revealed).

    Args:
        scenario: A practice scenario's name.
        label: How the lesson names the exercise ("Exercise 1").
    """
    claim = panel_move_claim("scenario", scenario)
    return gated(claim, after=first_failing_name(scenario), label=label)


def check_first_failing(
    scenario: str, mechanism: str, owner: str, *, strict: bool | None = None
) -> CheckResult:
    """Check the learner's first failing mechanism class and owner role for ``scenario``.

    The expected answer is computed by triage, not stored.

    >>> check_first_failing("eager-launch", "launch_sync_overhead", "runtime systems engineer")
    ... # doctest: +ELLIPSIS
    first failing mechanism (eager-launch): correct ...
    """
    r = triage_scenario(scenario)
    ff = r.first_failing
    expected = (ff.mechanism if ff else None, r.owner.role if r.owner else None)
    return _TEXT.check(
        "first_failing", first_failing_name(scenario), (mechanism, owner), expected, strict=strict
    )


def check_stall_prediction(
    prediction: object,
    *,
    scenario: str = "eager-launch",
    layer_type: str = "attention",
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: after ``scenario``'s change, is a layer type's stall fraction higher?

    The answer is ``higher``, ``lower`` or ``same`` (within 0.5 %) for ``layer_type``.

    Both fractions (memory-stall seconds over the layer type's time, 0..1) come from the
    scenario's two mapped runs; nothing is stored.
    """
    base, cand = build_scenario(scenario)
    return FIGURE.check(
        f"{layer_type} stall fraction ({scenario})",
        prediction,
        base.model.stall().get(layer_type, 0.0),
        cand.model.stall().get(layer_type, 0.0),
        hint=_TEXT.render("stall_hint"),
        strict=strict,
    )


#: Kept for callers of the earlier name: one trace's run and operators, read once.
_read = read_pair_trace


@lru_cache(maxsize=1)
def measured_pair() -> dict[str, Any]:
    """The A100 -> V100 DLRM pair as :func:`workbench.review.join.pairs.pair_document` gives it."""
    return pair_document(*read_pair_trace(A100_TRACE), *read_pair_trace(V100_TRACE))


def measured_pair_text() -> str:
    """The pair as ``workbench trace A --against B`` prints it."""
    return pair_text(measured_pair())


def gpu_lag_claim() -> Claim:
    """What the measured pair says, computed from it: medians, change, the paired shift."""
    return _TEXT.claim("gpu_lag", step=measured_pair()["step"])


def expected_table_text(top: int = 5) -> str:
    """The V100 trace's kernels beside their expected time on its GPU (``workbench trace``)."""
    run, ops = read_pair_trace(V100_TRACE)
    hw = load_hardware(choose_hardware(run, None))
    return trace_text(trace_document(run, ops, hardware=hw, top=max(top, 10)), top=top)


def step_timeline_ms() -> tuple[dict[int, float], float]:
    """The V100 trace's steps on the GPU timeline: each step's first GPU activity, ms.

    Returns:
        ``({step: start}, end)``: times in ms from the first step's start (to the microsecond
        the trace records), and the end of the last step's GPU activity.
    """
    run = read_pair_trace(V100_TRACE)[0]
    first = run.iterations[0].start_s or 0.0
    starts = {it.index: round(((it.start_s or 0.0) - first) * 1e3, 3) for it in run.iterations}
    last = run.iterations[-1]
    end = (last.start_s or 0.0) + last.wall_s
    return starts, round((end - first) * 1e3, 3)


def check_step_time(answer: object, *, strict: bool | None = None) -> CheckResult:
    """Check the V100's steady-state step time, ms, computed from :func:`step_timeline_ms`.

    The expected value is the tool's own median iteration time
    (:meth:`workbench.evidence.MeasuredRun.median_iteration_s`), computed from the trace, not
    stored.
    """
    run = read_pair_trace(V100_TRACE)[0]
    return _TEXT.check(
        "step_time",
        "V100 steady-state step time (ms)",
        answer,
        run.median_iteration_s() * 1e3,
        rel_tol=1e-4,
        strict=strict,
    )


def synthetic_claim(pair: Any) -> Claim:
    """How the synthetic trace pair was made: the generator's jitter and gap, the steps read back.

    Args:
        pair: A :class:`workbench.review.scenarios.synthetic.TracePair`.
    """
    import inspect

    from workbench.evidence import read_trace
    from workbench.review.scenarios.synthetic import synthetic_kernels

    defaults = inspect.signature(synthetic_kernels).parameters
    jitter, gap = defaults["jitter"].default, defaults["gap_s"].default
    steps = read_trace(pair.baseline_trace).repeats
    return _TEXT.claim("synthetic", jitter=jitter, gap=gap, steps=steps)
