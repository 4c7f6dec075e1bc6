"""Lesson 07, preparing a senior design review: helpers and self-checks."""

from __future__ import annotations

from workbench.exercises._check import CheckResult, compare
from workbench.hw import load_hardware
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph
from workbench.review import SCENARIOS, build_scenario, triage

__all__ = [
    "check_dominant_bottleneck",
    "check_release_decision",
    "dominant_bottleneck",
    "review_mapping",
]


def review_mapping(
    model: str = "gpt2",
    hw: str = "h100-sxm",
    *,
    phase: str = "prefill",
    seq: int = 512,
    batch: int = 1,
) -> ModelMapping:
    """Map the model the review is about (default options)."""
    return map_model(build_graph(model, phase, batch=batch, seq=seq), load_hardware(hw))


def dominant_bottleneck(mapping: ModelMapping) -> str:
    """The bottleneck class that holds the most predicted time (``bandwidth:<level>`` kept)."""
    time: dict[str, float] = {}
    for k in mapping.kernels:
        time[k.cost.bottleneck] = time.get(k.cost.bottleneck, 0.0) + k.cost.total_s
    return max(time, key=lambda c: time[c])


def check_dominant_bottleneck(
    mapping: ModelMapping, answer: str, *, strict: bool | None = None
) -> CheckResult:
    """Check which bottleneck class holds the most time in ``mapping`` (read from the pack)."""
    return compare(
        "dominant bottleneck class",
        answer,
        dominant_bottleneck(mapping),
        hint="sum the sheet's time_s by its bottleneck column",
        hint2="group the sheet by bottleneck, sum time_s, take the largest; keep the level "
        "(bandwidth:hbm)",
        strict=strict,
    )


def check_release_decision(
    scenario: str, answer: str, *, simulate: bool = True, strict: bool | None = None
) -> CheckResult:
    """Check the release decision (ship / ship behind a flag / cannot sign off / roll back).

    Args:
        scenario: Practice scenario name.
        answer: The learner's decision.
        simulate: Triage with the serving simulation (as the CLI does); ``False`` as the
            triage panel does by default.
        strict: Raise on a wrong answer.
    """
    base, cand = build_scenario(scenario)
    r = triage(base, cand, changed=SCENARIOS[scenario].changed, simulate=simulate)
    where = "" if simulate else ", no serving simulation"
    return compare(
        f"release decision ({scenario}{where})",
        answer,
        r.decision,
        synonyms={
            "roll back": ("rollback", "revert"),
            "ship behind a flag": ("flag", "ship with a flag", "behind a flag"),
            "cannot sign off": ("can't sign off", "cannot sign-off", "no sign off"),
        },
        hint="apply the rollback criteria to the worst slice of the validation matrix"
        if simulate
        else "what evidence does each guardrail read, and which of it does a run without the "
        "serving simulation carry?",
        hint2="one of ship, ship behind a flag, cannot sign off, roll back: every guardrail "
        "reads evidence from both runs before it can hold or fail",
        strict=strict,
    )
