"""Lesson 06, regression triage: the self-check for the first failing mechanism and its owner."""

from __future__ import annotations

from workbench.exercises._check import CheckResult, compare
from workbench.review import SCENARIOS, build_scenario, triage

__all__ = ["check_first_failing", "triage_scenario"]


def triage_scenario(scenario: str):  # -> TriageReport
    """Triage a practice scenario with its declared change (no serving simulation)."""
    base, cand = build_scenario(scenario)
    return triage(base, cand, changed=SCENARIOS[scenario].changed, simulate=False)


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
    return compare(
        f"first failing mechanism ({scenario})",
        (mechanism, owner),
        expected,
        hint="walk the kernels in execution order; the first changed group whose class carries "
        "a material share of the regression; look its class up in the ownership table",
        hint2="compare the group's kernels before and after: did their engine, format, tile, "
        "count or launch change? That change names the class; names match without regard to "
        "case, spaces or underscores",
        strict=strict,
    )
