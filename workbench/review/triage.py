"""Triage a regression: comparable evidence, headline, first failing mechanism, owner, closure.

``triage(baseline, candidate, changed=...)`` refuses to compare runs whose tags differ in any
group other than the declared ``changed`` one (mixing evidence from mismatched runtime or
hardware conditions is the classic mistake), then computes:

* the headline (MFU, time, stall fraction by layer type, before and after);
* the first failing execution mechanism (:mod:`workbench.review.mechanisms`) and its owner
  (:mod:`workbench.review.owners`);
* the debug branches (:mod:`workbench.review.branches`);
* the validation matrix, rollback criteria and release decision (:mod:`workbench.review.closure`).

:func:`triage_document` is the JSON contract of ``workbench triage --format json``: one object
with keys ``comparable, mismatched_tags, headline, first_failing, owners, debug_branches,
validation_matrix, rollback_criteria, decision``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.review.branches import BranchNode, debug_branches, simulate_sla
from workbench.review.closure import (
    GuardrailCheck,
    Guardrails,
    decide,
    evaluate_guardrails,
    guardrail_values,
    load_guardrails,
    validation_matrix,
)
from workbench.review.mechanisms import MECHANISMS, FirstFailing, find_first_failing
from workbench.review.owners import OwnerRole, OwnershipTable, load_owners
from workbench.review.records import RunRecord, load_record
from workbench.review.tags import TAG_GROUPS

__all__ = [
    "JSON_KEYS",
    "TriageReport",
    "compare_tags",
    "triage",
    "triage_document",
    "triage_files",
    "triage_text",
]

#: Top-level keys of the JSON document, in order.
JSON_KEYS = (
    "comparable",
    "mismatched_tags",
    "headline",
    "first_failing",
    "owners",
    "debug_branches",
    "validation_matrix",
    "rollback_criteria",
    "decision",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TriageReport:
    """Everything triage found (see the module docstring)."""

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

    def headline(self) -> dict[str, Any]:
        """MFU, time, tokens/s and stall fraction by layer type, before and after."""
        b, c = self.baseline.model, self.candidate.model

        def side(m: Any) -> dict[str, Any]:
            return {
                "mfu": m.mfu,
                "time_s": m.time_s,
                "tokens_per_s": m.tokens_per_s,
                "stall_fraction_by_layer_type": dict(m.stall_fraction_by_layer_type),
            }

        return {
            "baseline": side(b) | {"label": self.baseline.label},
            "candidate": side(c) | {"label": self.candidate.label},
            "time_change": (c.time_s - b.time_s) / b.time_s if b.time_s else 0.0,
            "mfu_change": (c.mfu - b.mfu) / b.mfu if b.mfu else 0.0,
        }


def compare_tags(base: RunRecord, cand: RunRecord, changed: str | None = None) -> tuple[str, ...]:
    """Tags that differ in groups other than ``changed``: ``group.field: a != b`` lines."""
    if changed is not None and changed not in TAG_GROUPS:
        raise WorkbenchError(f"--changed {changed!r}: expected one of {', '.join(TAG_GROUPS)}")
    out = []
    for group in TAG_GROUPS:
        if group == changed:
            continue
        a, b = base.tags.group(group), cand.tags.group(group)
        for f in dataclasses.fields(a):
            va, vb = getattr(a, f.name), getattr(b, f.name)
            if va != vb:
                out.append(f"{group}.{f.name}: {_short(va)} != {_short(vb)}")
    return tuple(out)


def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def triage(
    base: RunRecord,
    cand: RunRecord,
    *,
    changed: str | None = None,
    owners: OwnershipTable | None = None,
    guardrails: Guardrails | None = None,
    simulate: bool = True,
) -> TriageReport:
    """Triage ``cand`` against ``base``.

    Args:
        base: Baseline run record.
        cand: Candidate run record.
        changed: The tag group deliberately changed (compiler, runtime, hardware, workload).
        owners: Ownership table (default: the built-in one).
        guardrails: Rollback criteria (default: the built-in ones).
        simulate: Run the SLA serving simulation (decoder presets only).

    Returns:
        The :class:`TriageReport`; ``comparable`` False (and decision ``refused``) when tags
        outside ``changed`` differ.
    """
    owners = owners or load_owners()
    guardrails = guardrails or load_guardrails()
    mismatched = compare_tags(base, cand, changed)
    comparable = not mismatched
    empty: dict[str, Any] = {"first_failing": None, "owner": None, "matrix": (), "checks": ()}
    if not comparable:
        branches = debug_branches(base, cand, comparable=False, mismatched=mismatched, sla=None)
        return TriageReport(
            baseline=base,
            candidate=cand,
            changed=changed,
            comparable=False,
            mismatched_tags=mismatched,
            owners=owners,
            branches=branches,
            decision="refused",
            reasons=(
                f"evidence captured under mismatched tags ({len(mismatched)}): "
                + "; ".join(mismatched),
            ),
            **empty,
        )
    first = find_first_failing(base, cand)
    owner = owners.owner_for(first.mechanism) if first else None
    sla = simulate_sla(base, cand) if simulate else None
    flag = next((g.flag_at for g in guardrails.guardrails if g.metric == "p99_s"), 0.02)
    branches = debug_branches(base, cand, comparable=True, mismatched=(), sla=sla, flag_at=flag)
    matrix = validation_matrix(base, cand, sla)
    checks = evaluate_guardrails(guardrail_values(matrix), guardrails)
    decision, reasons = decide(checks)
    if first is not None:
        reasons = (
            *reasons,
            f"first failing mechanism: {first.mechanism} at {first.kernel} "
            f"(owner: {owner.role if owner else '?'})",
        )
    return TriageReport(
        baseline=base,
        candidate=cand,
        changed=changed,
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
    )


def triage_files(
    baseline: str | Path,
    candidate: str | Path,
    *,
    changed: str | None = None,
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


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def triage_document(report: TriageReport) -> dict[str, Any]:
    """The JSON contract (keys :data:`JSON_KEYS`)."""
    ff = report.first_failing
    first = None
    if ff is not None:
        first = {
            "kernel": ff.kernel,
            "mechanism": ff.mechanism,
            "mechanism_label": MECHANISMS[ff.mechanism],
            "level": ff.level,
            "evidence": ff.evidence,
            "owner": report.owner.role if report.owner else None,
            "closure_artifact": report.owner.closure_artifact if report.owner else None,
            "delta_s": ff.delta_s,
            "class_delta_s": ff.class_delta_s,
            "total_delta_s": ff.total_delta_s,
            "sheet_rows": list(ff.rows),
        }
    doc = {
        "comparable": report.comparable,
        "mismatched_tags": list(report.mismatched_tags),
        "headline": report.headline(),
        "first_failing": first,
        "owners": [
            r.model_dump(mode="json")
            | {"assigned": report.owner is not None and r.role == report.owner.role}
            for r in report.owners.roles
        ],
        "debug_branches": [dataclasses.asdict(n) for n in report.branches],
        "validation_matrix": list(report.matrix),
        "rollback_criteria": [dataclasses.asdict(c) for c in report.checks],
        "decision": {
            "action": report.decision,
            "reasons": list(report.reasons),
            "changed": report.changed,
        },
    }
    return _clean(doc)


def triage_text(report: TriageReport) -> str:
    """A readable triage report (the ``table`` format)."""
    from workbench._format import fmt_time

    b, c = report.baseline, report.candidate
    lines = [f"baseline   {b.label}", f"candidate  {c.label}   (changed: {report.changed})"]
    if not report.comparable:
        lines.append("REFUSED: evidence captured under mismatched tags:")
        lines += [f"  {m}" for m in report.mismatched_tags]
        lines.append("re-capture both runs under the same tags, or declare --changed GROUP")
        return "\n".join(lines) + "\n"
    h = report.headline()
    lines.append(
        f"time       {fmt_time(b.model.time_s)} -> {fmt_time(c.model.time_s)} "
        f"({h['time_change']:+.1%})   MFU {b.model.mfu:.1%} -> {c.model.mfu:.1%}"
    )
    sb, sc = b.model.stall(), c.model.stall()
    lines.append(
        "stall      "
        + "  ".join(
            f"{k} {sb.get(k, 0):.0%}->{sc.get(k, 0):.0%}" for k in sorted(set(sb) | set(sc))
        )
    )
    ff = report.first_failing
    if ff is None:
        lines.append("first failing mechanism: none (no material regression)")
    else:
        lines.append(
            f"first failing mechanism: {ff.mechanism}"
            + (f" ({ff.level})" if ff.level else "")
            + f" at {ff.kernel}"
        )
        lines.append(f"  evidence: {ff.evidence}")
        if report.owner:
            lines.append(
                f"  owner: {report.owner.role} (closure artifact: {report.owner.closure_artifact})"
            )
    lines.append("debug branches:")
    lines += [
        f"  [{n.status:<7}] {n.question}\n            {n.evidence}\n            next: "
        f"{n.next_action}"
        for n in report.branches
    ]
    lines.append("rollback criteria:")
    for k in report.checks:
        reg = (
            "n/a"
            if k.regression is None
            else (f"{k.regression:+.2%}" if k.relative else f"{k.regression:+.4f}")
        )
        lines.append(
            f"  {k.metric:<15} {reg:>9}  flag>{k.flag_at:g} rollback>{k.rollback_at:g}  {k.status}"
        )
    lines.append(f"decision: {report.decision}")
    lines += [f"  - {r}" for r in report.reasons]
    return "\n".join(lines) + "\n"
