"""Triage output: the JSON contract (``--format json``) and the readable text report.

:func:`triage_document` returns one object with keys
:data:`~workbench.review.decision.verdict.JSON_KEYS`. :func:`triage_text` prints one regression
figure (step time, or time per token when the workload changed); any other figure is labelled with
where it comes from (e.g. the rollback criteria's ``worst validation slice``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from workbench._format import fmt_time, shift_line
from workbench.errors import printable
from workbench.review.decision.closure import METRIC_LABELS, amount
from workbench.review.decision.verdict import TriageReport
from workbench.review.diagnosis.attribution import DRIFT_LIMIT, attribution_rows
from workbench.review.diagnosis.families import family_of, natural_key
from workbench.review.diagnosis.headline import anchor_of
from workbench.review.diagnosis.table import MECHANISMS
from workbench.review.join.job_summary import job_record_line
from workbench.review.join.pairs import shift_doc
from workbench.review.join.trace_summary import short_name
from workbench.review.join.windows import windows_doc, windows_lines
from workbench.review.records.mbu import BANDWIDTH_BOUND_SHARE, bandwidth_bound, record_mbu

__all__ = ["triage_document", "triage_text"]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _first(report: TriageReport) -> dict[str, Any] | None:
    ff = report.first_failing
    if ff is None:
        return None
    return {
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
        "family": ff.family,
        "count": ff.count,
        "share": ff.share,
        "sheet_rows": list(ff.rows),
        "mechanisms": [
            {
                "mechanism": m.mechanism,
                "level": m.level,
                "change": m.change,
                "share": m.share,
                "share_s": m.share_s,
                "family": m.family,
                "count": m.count,
                "kernel": m.kernel,
            }
            for m in report.mechanisms
        ],
    }


def triage_document(report: TriageReport) -> dict[str, Any]:
    """The JSON contract (keys :data:`~workbench.review.decision.verdict.JSON_KEYS`)."""
    att = report.attribution
    doc = {
        "comparable": report.comparable,
        "mismatched_tags": list(report.mismatched_tags),
        # NOTE: for records read from traces, the steps the step time rests on (else None)
        "headline": report.headline() | {"steps": windows_doc(report.baseline, report.candidate)},
        "step_shift": None if report.shift is None else shift_doc(report.shift),
        "declared_change": [dataclasses.asdict(c) for c in report.declared],
        "first_failing": _first(report),
        "attribution": None
        if att is None
        else {
            "method": att.method,
            "total_s": att.total_s,
            "rows": attribution_rows(att),
            "model_drift": [
                {**dataclasses.asdict(r), "drift": r.drift, "large": r.large} for r in report.drift
            ],
        },
        "diff": [dataclasses.asdict(r) for r in report.diff],
        "owners": [
            r.model_dump(mode="json")
            | {"assigned": report.owner is not None and r.role == report.owner.role}
            for r in report.owners.roles
        ],
        "debug_branches": [dataclasses.asdict(n) for n in report.branches],
        "validation_matrix": list(report.matrix),
        "rollback_criteria": [dataclasses.asdict(c) for c in report.checks],
        "missing_evidence": list(report.missing),
        "decision": {
            "action": report.decision,
            "reasons": list(report.reasons),
            "changed": report.changed,
        },
    }
    return _clean(doc)


def _mfu(r: Any) -> str:
    """MFU as a percentage, or ``unknown`` (a trace read without its model has no peak)."""
    return f"{r.model.mfu:.1%}" if r.model.peak_flops > 0 else "unknown"


def _util(b: Any, c: Any) -> str:
    """``MFU a -> b``, led by ``MBU x -> y`` when either run is bandwidth-bound (decode)."""
    mfu = f"MFU {_mfu(b)} -> {_mfu(c)}"
    if not (bandwidth_bound(b) or bandwidth_bound(c)):
        return mfu
    mb, mc = record_mbu(b), record_mbu(c)
    pct = [f"{v:.1%}" if v is not None else "unknown" for v in (mb, mc)]
    return f"MBU {pct[0]} -> {pct[1]}   {mfu}"


def _bandwidth_lines(report: TriageReport) -> list[str]:
    """MBU of every bandwidth-bound slice of the validation matrix (decode, or mostly memory)."""
    rows = [
        r
        for r in report.matrix
        if "mbu" in r["baseline"]
        and "mbu" in r["candidate"]
        and (
            " decode " in f" {r['slice']} "
            or max(r[s].get("bandwidth_fraction", 0.0) for s in ("baseline", "candidate"))
            >= BANDWIDTH_BOUND_SHARE
        )
    ]
    if not rows:
        return []
    return ["bandwidth-bound slices (MBU = off-chip bytes / (time x sustained bandwidth)):"] + [
        f"  {r['slice']:<36} MBU {r['baseline']['mbu']:.1%} -> {r['candidate']['mbu']:.1%}  "
        f"({r['source']})"
        for r in rows
    ]


def _headline_lines(report: TriageReport) -> list[str]:
    b, c = report.baseline, report.candidate
    h = report.headline()
    noise = f", noise +-{report.noise:.1%}" if report.noise else ""
    s, t0 = report.shift, b.model.time_s
    if s is not None and t0 and not report.per_item:  # NOTE: the paired interval, not a +-band
        noise = f", 95% interval {s.low_s / t0:+.1%} to {s.high_s / t0:+.1%} per step"
    if report.per_item:
        hb, hc = h["baseline"], h["candidate"]
        lines = [
            f"time per token   {fmt_time(hb['time_per_token_s'])} -> "
            f"{fmt_time(hc['time_per_token_s'])} ({h['change']:+.1%}{noise})   {_util(b, c)}",
            f"  per request {fmt_time(hb['time_per_request_s'])} -> "
            f"{fmt_time(hc['time_per_request_s'])}; step time {fmt_time(b.model.time_s)} -> "
            f"{fmt_time(c.model.time_s)} (workload changed: not a regression figure)",
        ]
    else:
        lines = [
            f"time       {fmt_time(b.model.time_s)} -> {fmt_time(c.model.time_s)} "
            f"({h['change']:+.1%}{noise})   {_util(b, c)}"
        ]
        if report.shift is not None:  # NOTE: the same comparison as `workbench trace --against`
            lines.append(f"  step time {shift_line(shift_doc(report.shift))}")
        windows = windows_doc(b, c)
        if windows is not None:  # NOTE: the steps that comparison pairs, and how they were drawn
            lines += [f"  {printable(line)}" for line in windows_lines(windows)]
    job = job_record_line(b.measurement, c.measurement)
    if job is not None:
        lines.append(job)
    sb, sc = b.model.stall(), c.model.stall()
    if sb or sc:  # NOTE: measured runs carry no predicted stall fractions
        lines.append(
            "stall      "
            + "  ".join(
                f"{k} {sb.get(k, 0):.0%}->{sc.get(k, 0):.0%}" for k in sorted(set(sb) | set(sc))
            )
        )
    return lines


def _drift_lines(report: TriageReport) -> list[str]:
    """The model's baseline against the measured one, and what the attribution cannot speak for."""
    if not report.drift:
        return []
    lines = [
        "model drift on the baseline (predicted / measured kernel time - 1, by kind): "
        + ", ".join(f"{r.kind} {r.drift:+.0%}" for r in report.drift)
    ]
    large = [r.kind for r in report.drift if r.large]
    if large:
        lines.append(
            f"  the attribution rests on the cost model, which misses the measured baseline by "
            f"more than {DRIFT_LIMIT:.0%} on: {', '.join(large)}; it cannot speak for those kinds"
        )
    return lines


def _attribution_lines(report: TriageReport) -> list[str]:
    lines = []
    if report.declared:
        lines.append("declared change (in full):")
        lines += [f"  {ch.line()}" for ch in report.declared]
    att = report.attribution
    if att is not None:
        lines.append(f"attribution of {fmt_time(att.total_s)} ({att.method}):")
        for row in attribution_rows(att):
            lines.append(f"  {row['share']:>7.1%}  {fmt_time(row['share_s']):>10}  {row['change']}")
        lines += _drift_lines(report)
    families = _family_rows([r for r in report.diff if r.level == "kernel"])[:5]
    rest = [r for r in report.diff if r.level != "kernel"]
    if families:
        lines.append(
            "diff by kernel family (top 5 by delta), by layer type, unexplained remainder:"
        )
        for name, count, bt, ct, delta, share, mechs in families:
            # NOTE: a measured run's families are demangled kernel names (2,000 characters for a
            # TBE kernel): shortened readably here; the JSON keeps the full name (issue 17).
            label = f"{short_name(name)} x{count}" if count > 1 else short_name(name)
            mech = f"  [{mechs}]" if mechs else ""
            lines.append(
                f"  {'family':<10} {label:<32} {fmt_time(bt):>9} -> {fmt_time(ct):>9}  "
                f"{fmt_time(delta):>10} {share:>7.1%}{mech}"
            )
        for r in rest:
            lines.append(
                f"  {r.level:<10} {r.name:<32} {fmt_time(r.baseline_s):>9} -> "
                f"{fmt_time(r.candidate_s):>9}  {fmt_time(r.delta_s):>10} {r.share:>7.1%}"
            )
    return lines


def _family_rows(rows: list[Any]) -> list[tuple[str, int, float, float, float, float, str]]:
    """Kernel rows summed by family: (family, count, before, after, delta, share, mechanisms).

    Largest delta first, ties in natural order; families whose time did not move are left out.
    """
    fams: dict[str, list[Any]] = {}
    for r in rows:
        fams.setdefault(family_of(r.name), []).append(r)
    out = []
    for fam, members in fams.items():
        delta = sum(r.delta_s for r in members)
        if delta == 0:
            continue
        found = [m for r in members for m in (r.mechanisms or (r.mechanism,)) if m]
        mechs = ", ".join(dict.fromkeys(found))
        out.append(
            (
                fam,
                len(members),
                sum(r.baseline_s for r in members),
                sum(r.candidate_s for r in members),
                delta,
                sum(r.share for r in members),
                mechs,
            )
        )
    out.sort(key=lambda f: (-round(f[4], 15), natural_key(f[0])))
    return out


def _check_line(k: Any, first_slice: str) -> str:
    reg = "n/a" if k.regression is None else amount(k, k.regression)
    where = ""
    if k.source and k.source != first_slice:
        where = f"  (worst validation slice: {k.source})"
    note = f"  ({k.note})" if k.note else ""
    label = METRIC_LABELS.get(k.metric, k.metric)
    limits = f"flag > {amount(k, k.flag_at)}, roll back > {amount(k, k.rollback_at)}"
    return f"  {label:<22} {reg:>13}  {limits:<38} {k.status}{where}{note}"


def _cell(row: dict[str, Any], side: str, key: str) -> str:
    v = row[side].get(key)
    if v is None:
        return "-"
    return f"{v:.1%}" if key == "mfu" else fmt_time(v)


def _matrix_lines(report: TriageReport) -> list[str]:
    """The validation matrix (slice x time, MFU) and the slice each guardrail was judged on."""
    if not report.matrix:
        return []
    key = "time_per_token_s" if report.per_item else "time_s"
    lines = [f"validation matrix ({'time per token' if report.per_item else 'step time'}, MFU):"]
    for row in report.matrix:
        b, c = row["baseline"].get(key), row["candidate"].get(key)
        change = f"{(c - b) / b:+.1%}" if b and c is not None else "n/a"
        lines.append(
            f"  {row['slice']:<40} {_cell(row, 'baseline', key):>9} -> "
            f"{_cell(row, 'candidate', key):>9} {change:>8}   MFU {_cell(row, 'baseline', 'mfu')}"
            f" -> {_cell(row, 'candidate', 'mfu')}  ({row['source']})"
            + ("  trade-off, not judged" if not row.get("judged", True) else "")
        )
    drove = [k for k in report.checks if k.status in ("rollback", "flag") and k.source]
    if drove:
        k = drove[0]
        lines.append(
            f"  decision driven by {METRIC_LABELS.get(k.metric, k.metric)} on slice {k.source}"
        )
    return lines


def triage_text(report: TriageReport) -> str:
    """A readable triage report (the ``table`` format)."""
    b, c = report.baseline, report.candidate
    lines = [f"baseline   {b.label}", f"candidate  {c.label}   (changed: {report.changed})"]
    if not report.comparable:
        lines.append("REFUSED: evidence captured under mismatched tags:")
        lines += [f"  {m}" for m in report.mismatched_tags]
        hint = [r for r in report.reasons if r.startswith("tags differ in")]
        lines.append(
            hint[0] if hint else "re-capture both runs under the same tags (the models differ)"
        )
        return "\n".join(lines) + "\n"
    lines += _headline_lines(report)
    ff = report.first_failing
    if ff is None:
        lines.append("first failing mechanism: none (no material regression)")
    else:
        where = anchor_of(ff)  # NOTE: every family the share is made of, when several
        lines.append(
            f"first failing mechanism: {ff.mechanism}"
            + (f" ({ff.level})" if ff.level else "")
            + f" at {where}, {ff.share:.1%} of the regression"
        )
        lines.append(f"  evidence: {ff.evidence}")
        if len(report.mechanisms) > 1:
            lines.append("  mechanisms (share of the regression):")
            lines += [
                f"    {m.share:>7.1%}  {m.mechanism}"
                + (f" ({m.level})" if m.level else "")
                + f" at {m.where}  [{m.change}]"
                for m in report.mechanisms
            ]
        if report.owner:
            lines.append(
                f"  owner: {report.owner.role} (closure artifact: {report.owner.closure_artifact})"
            )
    lines += _attribution_lines(report)
    lines += _bandwidth_lines(report)
    lines.append("debug branches:")
    lines += [
        f"  [{n.status:<7}] {n.question}\n            {n.evidence}\n            next: "
        f"{n.next_action}"
        for n in report.branches
    ]
    lines += _matrix_lines(report)
    lines.append("rollback criteria:")
    first_slice = report.matrix[0]["slice"] if report.matrix else ""
    lines += [_check_line(k, first_slice) for k in report.checks]
    if report.missing:
        lines.append("missing evidence (blocks a sign-off):")
        lines += [f"  - {m}" for m in report.missing]
    lines.append(f"decision: {report.decision}")
    lines += [f"  - {r}" for r in report.reasons]
    return "\n".join(lines) + "\n"
