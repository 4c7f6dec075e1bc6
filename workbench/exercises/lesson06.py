"""Lesson 06, regression triage: the self-check for the first failing mechanism and its owner."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from workbench._format import fmt_time
from workbench.errors import WorkbenchError
from workbench.evidence import MeasuredRun, read_trace
from workbench.evidence.operators import RecordedOps, read_operators
from workbench.exercises._check import CheckResult, check_level, compare
from workbench.exercises._claims import Claim
from workbench.hw import load_hardware
from workbench.review import SCENARIOS, build_scenario, triage
from workbench.review.pairs import pair_document, pair_text
from workbench.review.trace_summary import choose_hardware, trace_document, trace_text

__all__ = [
    "check_first_failing",
    "check_stall_prediction",
    "expected_table_text",
    "gpu_lag_claim",
    "measured_pair",
    "measured_pair_text",
    "triage_scenario",
]


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
        hint="which mechanism carries the largest share of the regression? Look at the kernel "
        "family whose time moved most, then its class in the ownership table",
        hint2="compare the group's kernels before and after: did their engine, format, tile, "
        "count or launch change? That change names the class; names match without regard to "
        "case, spaces or underscores",
        strict=strict,
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
    return check_level(
        f"{layer_type} stall fraction ({scenario})",
        prediction,
        base.model.stall().get(layer_type, 0.0),
        cand.model.stall().get(layer_type, 0.0),
        hint="the stall fraction is a share: memory-stall time over the layer type's whole "
        "time. What does the change do to each of the two?",
        strict=strict,
    )


#: Where the lesson's real measured pair lives: Holistic Trace Analysis's public test data (MIT
#: licence; source, commit and files in tests/data/hta/README.md), a DLRM training step on an
#: A100 and on a V100 whose GPU lags the host.
HTA_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "hta"
A100_TRACE, V100_TRACE = "dlrm_a100.json.gz", "dlrm_v100_rank1.json.gz"


def _trace(name: str) -> Path:
    path = HTA_DATA / name
    if not path.is_file():
        raise WorkbenchError(f"lesson 06: {path} is missing (run the lesson from a checkout)")
    return path


@lru_cache(maxsize=2)
def _read(name: str) -> tuple[MeasuredRun, RecordedOps]:
    """One trace's run and operators, read once (both frozen; the V100 trace serves two cells)."""
    path = _trace(name)
    return read_trace(path), read_operators(path)


@lru_cache(maxsize=1)
def measured_pair() -> dict[str, Any]:
    """The A100 -> V100 DLRM pair as :func:`workbench.review.pairs.pair_document` gives it."""
    return pair_document(*_read(A100_TRACE), *_read(V100_TRACE))


def measured_pair_text() -> str:
    """The pair as ``workbench trace A --against B`` prints it."""
    return pair_text(measured_pair())


def gpu_lag_claim() -> Claim:
    """What the measured pair says, computed from it: medians, change, the paired shift."""
    step = measured_pair()["step"]
    a, b = step["baseline_median_s"], step["candidate_median_s"]
    change = f" (**{step['relative']:+.1%}**)" if step["relative"] is not None else ""
    text = (
        f"Steady-state step: A100 {fmt_time(a)} -> V100 {fmt_time(b)}{change}, each GPU "
        "activity counted in the step window it ran in and the warm-up step left out."
    )
    shift = step["shift"]
    if shift is not None:
        verdict = "beyond" if shift["beyond_noise"] else "within"
        text += (
            f" The shift, {fmt_time(shift['estimate_s'])} per step "
            f"({fmt_time(shift['low_s'])} to {fmt_time(shift['high_s'])}, "
            f"{shift['coverage']:.0%} interval), is {verdict} the step-to-step noise."
        )
    return Claim(text)


def expected_table_text(top: int = 5) -> str:
    """The V100 trace's kernels beside their expected time on its GPU (``workbench trace``)."""
    run, ops = _read(V100_TRACE)
    hw = load_hardware(choose_hardware(run, None))
    return trace_text(trace_document(run, ops, hardware=hw, top=max(top, 10)), top=top)
