"""The decision policy as data: which guardrail judges which kind of change, what evidence it needs.

The thresholds (metric, direction, flag and rollback levels) are the guardrails table
(``data/guardrails.yaml``, :mod:`workbench.review.decision.closure`). This module holds the rest of
the policy, one row per rule, so every rule is visible, testable and changed in one place:

* :data:`NOT_JUDGED`: a metric that does not judge a kind of change, and why (shown as the
  guardrail's ``n/a`` note). MFU against each platform's own peak does not compare across
  hardware; per-chip MFU trades against per-request latency when a model is spread over more
  chips (the change is judged on latency and throughput per chip, with the trade-off stated);
  a workload changed alone is its own cost, nothing to roll back; a stall fraction is a
  diagnostic, not a guardrail, when the candidate is faster on every judged slice.
* :data:`EVIDENCE`: the evidence each kind of run or change needs before a sign-off (serving
  p99 for inference runs only, a quality metric only when a kernel's format changed, repeats for
  measured runs).
* :data:`SLICES`: which validation-matrix slices judge the per-slice guardrails (step time, MFU,
  stall). A change is judged on the phase it was recorded in, the phase it targets (the recorded
  slice and its shorter twin); the other LLM phase, re-mapped, is a trade-off stated in the
  reasons, not a guardrail: a weight-only int8 build that speeds decode 16% and slows prefill
  12% (dequantizing on compute-bound GEMMs) ships on decode, its prefill cost named. Whether the
  other phase matters is the workload mix's call, and the serving simulation's p95/p99 (the
  production request mix, prefill and decode weighted by its prompt and output lengths) are the
  guardrails that weigh it.

What does not judge a release: a kernel category's own time. Two traces' per-category kernel time
per step (summed over streams) names the headline's family, with its paired interval, whenever the
step moved beyond the noise, even by less than the guardrail (the release ships); it is no guardrail
of its own, because growth that the step time does not show is ambiguous: a collective kernel's
duration includes its wait for the peers, and overlapped kernels lengthen under contention when a
change makes them overlap more (the step unchanged or faster). The step time is what the release is
judged on; the named category tells the owner where the slack went.

Kinds of change (:func:`change_kinds`): ``hardware``, ``tensor_parallel``, ``workload``,
``workload_only``, ``faster`` (time per item better on every slice), ``format_changed`` (a
kernel's format), ``model_format_changed`` (the run's own format: MFU's denominator),
``inference``, ``measured``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.review.decision.signoff import precision_changed, workload_changed
from workbench.review.diagnosis.changes import declared_changes
from workbench.review.records.store import RunRecord

__all__ = [
    "EVIDENCE",
    "NOT_JUDGED",
    "SLICES",
    "EvidenceRule",
    "NotJudged",
    "SliceRule",
    "change_kinds",
    "is_training",
    "judge_slices",
    "needs",
    "skipped_metrics",
    "tensor_parallel_trade_off",
    "trade_offs",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NotJudged:
    """A guardrail metric that does not judge one kind of change.

    Attributes:
        kind: The kind of change (see :func:`change_kinds`).
        metric: The guardrail metric (``time_s``, ``mfu``, ``stall_fraction`` ...).
        why: The note shown on the guardrail.
    """

    kind: str
    metric: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceRule:
    """Evidence a sign-off needs for one kind of run or change.

    Attributes:
        kind: The kind (see :func:`change_kinds`).
        needs: What is needed (``p99``, ``quality``, ``repeats``).
    """

    kind: str
    needs: str


_PLATFORM = "each platform's own peak: not comparable across hardware (compare time)"
_TP = (
    "per-chip MFU trades against per-request latency with more chips: judged on latency and "
    "throughput per chip (the trade-off is stated)"
)
_ALONE = "the workload changed alone: its own cost per token, nothing to roll back"

#: Metrics that do not judge a kind of change (every row is tested).
NOT_JUDGED: tuple[NotJudged, ...] = (
    NotJudged(kind="hardware", metric="mfu", why=f"MFU is against {_PLATFORM}"),
    NotJudged(kind="hardware", metric="stall_fraction", why=f"stall is against {_PLATFORM}"),
    NotJudged(kind="tensor_parallel", metric="mfu", why=_TP),
    NotJudged(kind="tensor_parallel", metric="stall_fraction", why=_TP),
    NotJudged(
        kind="model_format_changed",
        metric="mfu",
        why="MFU is against the peak of the model's GEMM format, and the run's format changed: "
        "the denominator moved (compare time)",
    ),
    NotJudged(kind="workload", metric="stall_fraction", why="stall moves with the workload slice"),
    NotJudged(kind="workload_only", metric="time_s", why=_ALONE),
    NotJudged(kind="workload_only", metric="mfu", why=_ALONE),
    NotJudged(
        kind="faster",
        metric="stall_fraction",
        why="a diagnostic, not a guardrail: the candidate is faster on every judged slice",
    ),
)

#: Evidence each kind needs before a sign-off (every row is tested).
EVIDENCE: tuple[EvidenceRule, ...] = (
    EvidenceRule(kind="inference", needs="p99"),
    EvidenceRule(kind="format_changed", needs="quality"),
    EvidenceRule(kind="measured", needs="repeats"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SliceRule:
    """Whether one kind of validation-matrix slice judges the per-slice guardrails.

    Attributes:
        slice: ``recorded_phase`` (the recorded slice, and re-mapped slices of its phase) or
            ``other_phase`` (the other LLM phase, re-mapped with each run's options).
        judged: Whether its step time, MFU and stall judge the guardrails.
        why: The note shown beside the slice.
    """

    slice: str
    judged: bool
    why: str


#: Which slices judge the per-slice guardrails (every row is tested). The serving percentiles
#: (p95/p99/throughput) and quality come from the recorded slice and always judge.
SLICES: tuple[SliceRule, ...] = (
    SliceRule(
        slice="recorded_phase",
        judged=True,
        why="the phase the runs were recorded in: the phase the change targets",
    ),
    SliceRule(
        slice="other_phase",
        judged=False,
        why="the other phase: a trade-off, stated; the serving simulation's p95/p99 (the "
        "production request mix, both phases) judge whether it matters",
    ),
)

_TRAINING_MARKS = ("backward", "optimizer", "autograd")


def is_training(r: RunRecord) -> bool:
    """Whether a run is a training step (phase ``training``, or backward/optimizer kernels)."""
    if r.tags.workload.phase in ("training", "train"):
        return True
    return any(m in k.name.lower() for k in r.kernels for m in _TRAINING_MARKS)


def _faster(matrix: Sequence[dict[str, Any]], key: str) -> bool:
    rows = [
        r
        for r in matrix
        if r.get("judged", True) and key in r["baseline"] and key in r["candidate"]
    ]
    return bool(rows) and all(r["candidate"][key] < r["baseline"][key] for r in rows)


def _slice_rule(row: dict[str, Any], recorded_phase: str) -> SliceRule:
    kind = "other_phase" if row.get("phase", recorded_phase) != recorded_phase else "recorded_phase"
    return next(r for r in SLICES if r.slice == kind)


def judge_slices(matrix: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The validation matrix with each row's ``judged`` flag and ``note`` (:data:`SLICES`).

    The first row is the recorded slice; a row of another phase is a trade-off, not judged.

    >>> rows = judge_slices([{"slice": "a", "phase": "decode"}, {"slice": "b", "phase": "prefill"}])
    >>> [r["judged"] for r in rows]
    [True, False]
    """
    if not matrix:
        return ()
    recorded = str(matrix[0].get("phase", ""))
    out = []
    for row in matrix:
        rule = _slice_rule(row, recorded)
        out.append({**row, "judged": rule.judged, "note": "" if rule.judged else rule.why})
    return tuple(out)


def trade_offs(
    matrix: Sequence[dict[str, Any]], time_key: str, flag_at: float, *, simulated: bool
) -> tuple[str, ...]:
    """One reason per slice that is not judged and whose time regressed past ``flag_at``.

    Args:
        matrix: Rows of :func:`judge_slices`.
        time_key: ``time_s`` or ``time_per_token_s``.
        flag_at: The time guardrail's flag line (a fraction).
        simulated: Whether the serving simulation's percentiles judged the request mix.
    """
    out = []
    for row in matrix:
        b, c = row["baseline"].get(time_key), row["candidate"].get(time_key)
        if row.get("judged", True) or not b or c is None or (c - b) / b <= flag_at:
            continue
        weigh = (
            "the serving simulation's p95/p99 over the request mix judged whether it matters"
            if simulated
            else "no serving simulation weighed the request mix: judge it on a run of that phase"
        )
        out.append(
            f"trade-off: {row['slice']} (the other phase, {row['source']}) "
            f"{(c - b) / b:+.1%} {'time per token' if time_key != 'time_s' else 'step time'}, "
            f"not judged on its own: {weigh}"
        )
    return tuple(out)


def change_kinds(
    base: RunRecord, cand: RunRecord, matrix: Sequence[dict[str, Any]] = (), *, per_item: bool
) -> frozenset[str]:
    """The kinds of change and run this comparison is (keys of the policy rows).

    Args:
        base: Baseline run.
        cand: Candidate run.
        matrix: The validation matrix (for ``faster``: on every judged slice).
        per_item: Whether times are compared per token (the workload changed).
    """
    out = set()
    if base.tags.hardware.hardware_hash != cand.tags.hardware.hardware_hash:
        out.add("hardware")
    if base.tags.runtime.chips != cand.tags.runtime.chips:
        out.add("tensor_parallel")
    if workload_changed(base, cand):
        out.add("workload")
        if _only_workload(base, cand):
            out.add("workload_only")
    if _faster(matrix, "time_per_token_s" if per_item else "time_s"):
        out.add("faster")
    if precision_changed(base, cand):
        out.add("format_changed")
    # NOTE: only the run's own format moves MFU's denominator; a per-kernel override or a
    # weight-only format does not (cost/utilisation.py), so MFU still judges those changes
    if _run_format(base) != _run_format(cand):
        out.add("model_format_changed")
    if not (is_training(base) or is_training(cand)):
        out.add("inference")
    if base.measurement is not None or cand.measurement is not None:
        out.add("measured")
    return frozenset(out)


def _run_format(r: RunRecord) -> str:
    """The run's own compute format (``--dtype``, else the workload's)."""
    return r.tags.compiler.dtype or r.tags.workload.dtype


def _only_workload(base: RunRecord, cand: RunRecord) -> bool:
    return all(c.group == "workload" for c in declared_changes(base, cand))


def skipped_metrics(kinds: frozenset[str]) -> dict[str, str]:
    """``metric -> why`` for every guardrail metric the policy does not judge here."""
    out: dict[str, str] = {}
    for rule in NOT_JUDGED:
        if rule.kind in kinds:
            out.setdefault(rule.metric, rule.why)
    return out


def needs(kinds: frozenset[str]) -> frozenset[str]:
    """The evidence these kinds need (``p99``, ``quality``, ``repeats``)."""
    return frozenset(rule.needs for rule in EVIDENCE if rule.kind in kinds)


def tensor_parallel_trade_off(base: RunRecord, cand: RunRecord) -> str:
    """The tensor-parallel trade-off: per-request latency against throughput per chip."""
    b, c = base.model, cand.model
    nb, nc = base.tags.runtime.chips, cand.tags.runtime.chips
    lat = (c.time_s - b.time_s) / b.time_s if b.time_s else 0.0
    per_b, per_c = b.tokens_per_s / nb, c.tokens_per_s / nc
    per = (per_c - per_b) / per_b if per_b else 0.0
    return (
        f"tensor parallel {nb} -> {nc} chips: per-request latency {lat:+.1%}, throughput per "
        f"chip {per:+.1%} ({per_b:,.0f} -> {per_c:,.0f} tokens/s per chip): the trade-off"
    )
