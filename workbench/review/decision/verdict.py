"""Triage a regression: comparable evidence, headline, first failing mechanism, owner, closure.

``triage(baseline, candidate, changed=...)`` refuses to compare runs whose tags differ in any
group other than the declared ``changed`` ones (mixing evidence from mismatched runtime or
hardware conditions is the classic mistake), and refuses runs of different models or phases
whatever is declared (:mod:`workbench.review.decision.signoff`). Then it computes:

* the headline: one regression figure (step time, or time per token and per request when the
  workload changed), MFU, latency percentiles, quality, with the measurement noise;
* every material mechanism with its share of the regression, the largest heading on its kernel
  family (:mod:`workbench.review.diagnosis.headline`, from the counterfactual attribution when the
  runs can be re-mapped, else from the kernel diff), above the noise, and its owner
  (:mod:`workbench.review.decision.owners`); with the workload changed, only what the other
  changes add;
* the declared change in full (:mod:`workbench.review.diagnosis.changes`), the per-kernel and
  per-layer diff with its unexplained remainder, and the counterfactual share of each declared
  change (:mod:`workbench.review.diagnosis.attribution`);
* the debug branches and the SLA simulation of each side
  (:mod:`workbench.review.diagnosis.branches`);
* the validation matrix, rollback criteria and release decision
  (:mod:`workbench.review.decision.closure`, judged as the decision policy says:
  :mod:`workbench.review.decision.policy`):
  ``ship``, ``ship behind a flag``, ``cannot sign off`` (missing evidence), ``roll back``.

:func:`~workbench.report.triage_render.triage_document` is the JSON contract of
``workbench triage --format json``: one object with the keys :data:`JSON_KEYS`, in order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.evidence.compare import Shift
from workbench.review.decision.closure import (
    GuardrailCheck,
    Guardrails,
    decide,
    evaluate_guardrails,
    guardrail_inputs,
    load_guardrails,
    validation_matrix,
)
from workbench.review.decision.owners import OwnerRole, OwnershipTable, load_owners
from workbench.review.decision.policy import (
    change_kinds,
    judge_slices,
    needs,
    skipped_metrics,
    tensor_parallel_trade_off,
    trade_offs,
)
from workbench.review.decision.signoff import (
    identity_mismatch,
    judged_noise,
    missing_evidence,
    step_shift,
    time_noise,
    workload_changed,
)
from workbench.review.diagnosis.attribution import (
    Attribution,
    Change,
    DiffRow,
    DriftRow,
    counterfactual,
    declared_changes,
    diff_table,
    model_drift,
)
from workbench.review.diagnosis.branches import BranchNode, SlaResult, debug_branches, simulate_sla
from workbench.review.diagnosis.first_failing import FirstFailing
from workbench.review.diagnosis.headline import MechanismShare, anchor_of, headline_of
from workbench.review.join.job_summary import job_record_line
from workbench.review.records.store import RunRecord, load_record
from workbench.review.records.tags import TAG_GROUPS, normalised_group

__all__ = [
    "JSON_KEYS",
    "TriageReport",
    "compare_tags",
    "triage",
    "triage_files",
]

#: Top-level keys of the JSON document, in order.
JSON_KEYS = (
    "comparable",
    "mismatched_tags",
    "headline",
    "step_shift",
    "declared_change",
    "first_failing",
    "attribution",
    "diff",
    "owners",
    "debug_branches",
    "validation_matrix",
    "rollback_criteria",
    "missing_evidence",
    "decision",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TriageReport:
    """Everything triage found (see the module docstring).

    Attributes:
        baseline, candidate: The two runs.
        changed: The declared tag groups (comma-joined), or None.
        comparable: False when tags outside ``changed`` (or the model identity) differ.
        mismatched_tags: ``group.field: a != b`` lines, in full.
        first_failing: The first failing mechanism, or None.
        owner: Its owner role, or None.
        owners: The ownership table.
        branches: Debug-tree nodes.
        matrix: Validation matrix rows.
        checks: Rollback criteria evaluated.
        decision: ``ship``, ``ship behind a flag``, ``cannot sign off``, ``roll back`` or
            ``refused``.
        reasons: Why, one line each.
        declared: The declared change, option by option and profile figure by figure.
        diff: Per-kernel and per-layer-type diff rows with the unexplained remainder.
        attribution: Counterfactual shares of each change (None when not re-mappable).
        sla: The serving simulation, or None.
        missing: Evidence a sign-off lacks.
        per_item: Whether the workload changed (times compared per token and per request).
        noise: Relative step-time noise of measured runs (0 for predicted ones).
        shift: The measured step-time shift of two runs read from traces (paired per step
            when both have 3 steps or more: :func:`~workbench.review.decision.signoff.step_shift`,
            the comparison ``trace --against`` makes), else None.
        drift: The model's baseline against the measured one per kernel kind, when the
            counterfactual attribution is read for measured kernels (empty otherwise).
        mechanisms: Every material mechanism with its share, the headline first.
    """

    baseline: RunRecord
    candidate: RunRecord
    changed: str | None
    comparable: bool
    mismatched_tags: tuple[str, ...]
    first_failing: FirstFailing | None
    owner: OwnerRole | None
    owners: OwnershipTable
    branches: tuple[BranchNode, ...]
    matrix: tuple[dict[str, Any], ...]
    checks: tuple[GuardrailCheck, ...]
    decision: str
    reasons: tuple[str, ...]
    declared: tuple[Change, ...] = ()
    diff: tuple[DiffRow, ...] = ()
    attribution: Attribution | None = None
    sla: SlaResult | None = None
    missing: tuple[str, ...] = ()
    per_item: bool = False
    noise: float = 0.0
    mechanisms: tuple[MechanismShare, ...] = ()
    shift: Shift | None = None
    drift: tuple[DriftRow, ...] = ()

    def headline(self) -> dict[str, Any]:
        """MFU, time (per token and per request too), latency, quality, before and after.

        ``change`` is the one regression figure (relative, positive = worse): time per token
        when the workload changed, else step time.
        """
        b, c = self.baseline.model, self.candidate.model

        def side(r: RunRecord) -> dict[str, Any]:
            m = r.model
            lat = dict(m.latency)
            if self.sla is not None:
                which = "baseline" if r is self.baseline else "candidate"
                lat = dict(getattr(self.sla, which))
            return {
                "mfu": m.mfu if m.peak_flops > 0 else None,
                "time_s": m.time_s,
                "time_interval_s": list(m.time_interval_s),
                "time_per_token_s": 1.0 / m.tokens_per_s if m.tokens_per_s else None,
                "time_per_request_s": m.time_s / max(r.tags.workload.batch, 1),
                "tokens_per_s": m.tokens_per_s,
                "latency": lat,
                "quality_error": m.quality_error,
                "stall_fraction_by_layer_type": dict(m.stall_fraction_by_layer_type),
            }

        hb, hc = side(self.baseline), side(self.candidate)
        key = "time_per_token_s" if self.per_item else "time_s"
        change = (hc[key] - hb[key]) / hb[key] if hb[key] else 0.0
        return {
            "baseline": hb | {"label": self.baseline.label},
            "candidate": hc | {"label": self.candidate.label},
            "compared": "time per token" if self.per_item else "step time",
            "change": change,
            "time_change": (c.time_s - b.time_s) / b.time_s if b.time_s else 0.0,
            "mfu_change": (c.mfu - b.mfu) / b.mfu if b.mfu and c.peak_flops > 0 else None,
            "noise": self.noise,
        }


def _groups(changed: str | Sequence[str] | None) -> tuple[str, ...]:
    if changed is None:
        return ()
    items = changed.split(",") if isinstance(changed, str) else list(changed)
    groups = tuple(dict.fromkeys(g.strip() for g in items if g.strip()))
    for g in groups:
        if g not in TAG_GROUPS:
            raise WorkbenchError(f"--changed {g!r}: expected one of {', '.join(TAG_GROUPS)}")
    return groups


def compare_tags(
    base: RunRecord, cand: RunRecord, changed: str | Sequence[str] | None = None
) -> tuple[str, ...]:
    """Tags that differ outside the ``changed`` groups, and any model-identity difference.

    A different model or phase is listed even when ``workload`` is declared changed: such runs
    are not a regression pair. Values are shown in full.
    """
    groups = _groups(changed)
    out = list(identity_mismatch(base, cand))
    for group in TAG_GROUPS:
        if group in groups:
            continue
        a, b = normalised_group(base.tags, group), normalised_group(cand.tags, group)
        for f in dataclasses.fields(a):
            if group == "workload" and f.name in ("model", "phase"):
                continue
            if f.name == "launch_host_s" and a.launch != b.launch:
                continue  # NOTE: the host time per eager launch rides with the launch mode
            va, vb = getattr(a, f.name), getattr(b, f.name)
            if va != vb:
                out.append(f"{group}.{f.name}: {va!r} != {vb!r}")
    return tuple(out)


def _group_hint(mismatched: tuple[str, ...]) -> tuple[str, ...]:
    """``tags differ in compiler, runtime: declare --changed compiler,runtime`` (if declarable)."""
    groups = [g for g in TAG_GROUPS if any(m.startswith(f"{g}.") for m in mismatched)]
    identity = any(m.startswith(("workload.model", "workload.phase")) for m in mismatched)
    if not groups or identity:
        return ()
    names = ", ".join(groups)
    return (f"tags differ in {names}: if deliberate, declare --changed {','.join(groups)}",)


def _refused(base, cand, changed, owners, mismatched) -> TriageReport:
    branches = debug_branches(base, cand, comparable=False, mismatched=mismatched, sla=None)
    return TriageReport(
        baseline=base,
        candidate=cand,
        changed=changed,
        comparable=False,
        mismatched_tags=mismatched,
        first_failing=None,
        owner=None,
        owners=owners,
        branches=branches,
        matrix=(),
        checks=(),
        decision="refused",
        reasons=(
            f"evidence captured under mismatched tags ({len(mismatched)}): "
            + "; ".join(mismatched),
            *_group_hint(mismatched),
        ),
    )


def _checks(base, cand, matrix, sla, guardrails, *, per_item: bool, noise: float, kinds):
    values, sources = guardrail_inputs(
        matrix, time_key="time_per_token_s" if per_item else "time_s"
    )
    skip = skipped_metrics(kinds)
    noises = {"time_s": noise, "mfu": noise}
    if sla is not None:
        noises |= {m: sla.noise(m) for m in ("p95_s", "p99_s")}
    return evaluate_guardrails(values, guardrails, noise=noises, sources=sources, skip=skip)


def triage(
    base: RunRecord,
    cand: RunRecord,
    *,
    changed: str | Sequence[str] | None = None,
    owners: OwnershipTable | None = None,
    guardrails: Guardrails | None = None,
    simulate: bool = True,
) -> TriageReport:
    """Triage ``cand`` against ``base``.

    Args:
        base: Baseline run record.
        cand: Candidate run record.
        changed: The tag group(s) deliberately changed (compiler, runtime, hardware,
            workload): one name, a comma-separated list or a sequence.
        owners: Ownership table (default: the built-in one).
        guardrails: Rollback criteria (default: the built-in ones).
        simulate: Run the SLA serving simulation (decoder presets only).

    Returns:
        The :class:`TriageReport`; ``comparable`` False (and decision ``refused``) when tags
        outside ``changed`` differ or the models differ.
    """
    owners = owners or load_owners()
    guardrails = guardrails or load_guardrails()
    groups = _groups(changed)
    label = ",".join(groups) or None
    mismatched = compare_tags(base, cand, groups)
    if mismatched:
        return _refused(base, cand, label, owners, mismatched)
    per_item = workload_changed(base, cand)
    shift = step_shift(base, cand)
    noise = time_noise(base, cand, shift)
    judged = noise if per_item else judged_noise(base, cand, shift, noise)
    attribution = counterfactual(base, cand)
    shares, first = headline_of(base, cand, attribution, per_item=per_item, noise=judged)
    owner = owners.owner_for(first.mechanism) if first else None
    sla = simulate_sla(base, cand) if simulate else None
    flag = next((g.flag_at for g in guardrails.guardrails if g.metric == "p99_s"), 0.02)
    branches = debug_branches(base, cand, comparable=True, mismatched=(), sla=sla, flag_at=flag)
    matrix = judge_slices(validation_matrix(base, cand, sla))
    kinds = change_kinds(base, cand, matrix, per_item=per_item)
    checks = _checks(
        base, cand, matrix, sla, guardrails, per_item=per_item, noise=judged, kinds=kinds
    )
    missing = missing_evidence(base, cand, simulated_p99=sla is not None, needs=needs(kinds))
    decision, reasons = decide(checks, missing)
    if "tensor_parallel" in kinds:
        reasons = (*reasons, tensor_parallel_trade_off(base, cand))
    time_flag = next((c.flag_at for c in checks if c.metric == "time_s"), 0.01)
    time_key = "time_per_token_s" if per_item else "time_s"
    reasons = (*reasons, *trade_offs(matrix, time_key, time_flag, simulated=sla is not None))
    job = job_record_line(base.measurement, cand.measurement)
    if job is not None:  # NOTE: job folders: the straggler rank and its mechanism, first
        reasons = (job, *reasons)
    if first is not None:
        reasons = (
            *reasons,
            f"first failing mechanism: {first.mechanism} at {anchor_of(first)}, "
            f"{first.share:.1%} of the regression (owner: {owner.role if owner else '?'})",
        )
    return TriageReport(
        baseline=base,
        candidate=cand,
        changed=label,
        comparable=True,
        mismatched_tags=(),
        first_failing=first,
        owner=owner,
        owners=owners,
        branches=branches,
        matrix=matrix,
        checks=checks,
        decision=decision,
        reasons=reasons,
        declared=declared_changes(base, cand),
        diff=diff_table(base, cand),
        attribution=attribution,
        sla=sla,
        missing=missing,
        per_item=per_item,
        noise=noise,
        shift=shift,
        drift=model_drift(base) if attribution is not None else (),
        mechanisms=shares,
    )


def triage_files(
    baseline: str | Path,
    candidate: str | Path,
    *,
    changed: str | Sequence[str] | None = None,
    owners: str | Path | None = None,
    guardrails: str | Path | None = None,
) -> TriageReport:
    """:func:`triage` on two record files (and optional YAML tables)."""
    return triage(
        load_record(baseline),
        load_record(candidate),
        changed=changed,
        owners=load_owners(owners),
        guardrails=load_guardrails(guardrails),
    )
