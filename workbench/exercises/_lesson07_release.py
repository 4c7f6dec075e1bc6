"""Lesson 07's Exercise 2: a release decision the student computes from criteria and deltas.

The triage panel applies the built-in rollback criteria and shows their decision, so asking for
that decision would be a read-off. The exercise asks instead for the decision of a team whose
criteria are looser (every threshold ``scale`` times the built-in one, :func:`scaled_guardrails`),
from a table of the triage's regressions beside that team's thresholds
(:func:`criteria_table`, no status and no decision in it). The decision rule is the library's
(:func:`workbench.review.decision.closure.decide`); the sentence that states the team's
decision (:func:`decision_claim`) is gated behind the check.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._claims import Claim, gated
from workbench.exercises._text import LessonText
from workbench.review import SCENARIOS, build_scenario, load_guardrails, triage
from workbench.review.decision.closure import METRIC_LABELS, Guardrails, amount
from workbench.review.decision.verdict import TriageReport

__all__ = [
    "CANARY_SCALE",
    "criteria_table",
    "decision_check_name",
    "decision_claim",
    "release_report",
    "scaled_guardrails",
]

_TEXT = LessonText("lesson07")

#: Exercise 2's team policy: every built-in threshold times this (an assumption of the
#: exercise: a team that releases debug builds to a canary first tolerates more).
CANARY_SCALE = 4.0


def scaled_guardrails(scale: float) -> Guardrails:
    """The built-in guardrails with every flag and roll-back threshold times ``scale``.

    Raises:
        WorkbenchError: ``scale`` is not a positive finite number.
    """
    if not isinstance(scale, int | float) or not 0 < scale < float("inf"):
        raise WorkbenchError(f"guardrail scale must be a positive number, got {scale!r}")
    base = load_guardrails()
    rows = tuple(
        g.model_copy(update={"flag_at": g.flag_at * scale, "rollback_at": g.rollback_at * scale})
        for g in base.guardrails
    )
    return base.model_copy(update={"guardrails": rows})


@lru_cache(maxsize=16)
def release_report(scenario: str, *, scale: float = 1.0, simulate: bool = True) -> TriageReport:
    """The triage of a practice scenario under the built-in criteria times ``scale`` (cached).

    Raises:
        WorkbenchError: ``scenario`` is not a practice scenario.
    """
    if scenario not in SCENARIOS:
        raise WorkbenchError(f"no practice scenario {scenario!r} (known: {sorted(SCENARIOS)})")
    base, cand = build_scenario(scenario)
    return triage(
        base,
        cand,
        changed=SCENARIOS[scenario].changed,
        guardrails=scaled_guardrails(scale),
        simulate=simulate,
    )


def decision_check_name(scenario: str, *, scale: float = 1.0, simulate: bool = True) -> str:
    """The name ``check_release_decision`` gives this exercise (what gating waits for)."""
    where = "" if simulate else ", no serving simulation"
    policy = "" if scale == 1 else f", thresholds x{scale:g}"
    return f"release decision ({scenario}{where}{policy})"


def criteria_table(scenario: str, *, scale: float = CANARY_SCALE) -> pd.DataFrame:
    """Each guardrail's regression (worst judged slice) beside the thresholds times ``scale``.

    What the decision is computed from, and nothing that states it: no status, no decision.

    Returns:
        A frame indexed by metric (a reviewer's name) with ``regression`` (the candidate's,
        positive = worse; ``n/a`` without evidence), ``noise`` (a regression within it counts
        as none; ``-`` when none is known), ``flag_beyond`` and ``roll_back_beyond`` (the
        thresholds times ``scale``), and ``slice`` (where the regression was measured).
    """
    r = release_report(scenario, scale=scale)
    rows = [
        {
            "metric": METRIC_LABELS.get(c.metric, c.metric),
            "regression": "n/a" if c.regression is None else amount(c, c.regression),
            "noise": amount(c, c.noise).lstrip("+") if c.noise else "-",
            "flag_beyond": amount(c, c.flag_at),
            "roll_back_beyond": amount(c, c.rollback_at),
            "slice": c.source or "-",
        }
        for c in r.checks
    ]
    return pd.DataFrame(rows).set_index("metric")


def decision_claim(
    scenario: str, *, scale: float = CANARY_SCALE, label: str = "Exercise 2"
) -> Claim:
    """The team's decision with the guardrails that set it, against the built-in decision.

    Returns:
        Markdown, gated behind the check of the decision under ``scale``: the decision, the
        metrics beyond a threshold (with the threshold), those a noise band absorbed, and the
        decision the panel's built-in criteria give.
    """
    r = release_report(scenario, scale=scale)
    crossed = [c for c in r.checks if c.status in ("flag", "rollback")]
    within_noise = [
        c for c in r.checks if c.status == "ok" and c.noise and (c.regression or 0.0) > c.flag_at
    ]
    claim = _TEXT.claim(
        "decision",
        scenario=scenario,
        scale=scale,
        decisions=(r.decision, release_report(scenario, scale=1.0).decision),
        beyond=[
            (
                METRIC_LABELS.get(c.metric, c.metric),
                amount(c, c.regression or 0.0),
                c.status == "rollback",
                amount(c, c.rollback_at if c.status == "rollback" else c.flag_at),
            )
            for c in crossed
        ],
        absorbed=[METRIC_LABELS.get(c.metric, c.metric) for c in within_noise],
        missing=list(r.missing),
    )
    return gated(claim, after=decision_check_name(scenario, scale=scale), label=label)
