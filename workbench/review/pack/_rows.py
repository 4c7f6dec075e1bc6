"""The review pack's rows: headline figures, causes, owners, matrix and criteria, with units.

Every figure leaves here as text in its unit (:mod:`workbench._format`): times in ms/us, rates
in tokens/s, utilisations in %, changes as signed percentages; columns named ``*_s`` and
``share`` keep seconds and fractions for the renderer (:mod:`workbench.report._cells`).
"""

from __future__ import annotations

import re
from typing import Any

from workbench._format import fmt_change, fmt_percent, fmt_quantity, fmt_time, shift_line
from workbench.review.decision.verdict import TriageReport
from workbench.review.diagnosis.attribution import attribution_rows
from workbench.review.join.pairs import shift_doc
from workbench.review.pack.causes import Cause
from workbench.review.records.mbu import record_mbu
from workbench.review.records.store import RunRecord

__all__ = [
    "attribution_table",
    "bandwidth_utilisation",
    "cause_rows",
    "check_rows",
    "first_failing_rows",
    "headline_rows",
    "matrix_rows",
    "metric_unit",
    "owner_rows",
    "proof_rows",
    "roster_rows",
]


def bandwidth_utilisation(record: RunRecord) -> float | None:
    """MBU: off-chip bytes / (time x sustained off-chip bandwidth), 0..1; None when unknown.

    The mapper's and triage's definition (:func:`workbench.review.records.mbu.record_mbu`).
    """
    return record_mbu(record)


def _interval(record: RunRecord) -> str:
    iv = record.model.time_interval_s
    return f"{fmt_time(iv[0])}..{fmt_time(iv[1])}" if iv else "n/a (predicted)"


def _rel(b: float | None, c: float | None) -> str:
    """The signed relative change from ``b`` to ``c`` (``-`` when either is unknown or 0)."""
    return fmt_change((c - b) / b) if b and c is not None else "-"


def _row(metric: str, unit: str, b: float | None, c: float | None, evidence: str) -> dict:
    return {
        "metric": metric,
        "baseline": fmt_quantity(b, unit),
        "candidate": fmt_quantity(c, unit),
        "change": _rel(b, c),
        "evidence": evidence,
    }


def headline_rows(r: TriageReport) -> list[dict[str, Any]]:
    b, c = r.baseline, r.candidate
    h = r.headline()
    paired = f"; {shift_line(shift_doc(r.shift))}" if r.shift is not None else ""
    rows = [
        _row(
            "step time",
            "s",
            b.model.time_s,
            c.model.time_s,
            f"95% interval {_interval(b)} vs {_interval(c)}{paired}",
        ),
    ]
    if r.per_item:
        per = (("time_per_token_s", "per token"), ("time_per_request_s", "per request"))
        for key, label in per:
            rows.append(
                _row(
                    f"time {label}",
                    "s",
                    h["baseline"][key],
                    h["candidate"][key],
                    "the workload changed: compared per item",
                )
            )
    if b.model.tokens_per_s > 0 and c.model.tokens_per_s > 0:  # NOTE: a trace read without
        # its model counts no tokens: no "0 tokens/s -> 0 tokens/s" row
        rows.append(
            _row(
                "throughput",
                "tokens/s",
                b.model.tokens_per_s,
                c.model.tokens_per_s,
                "tokens per second of one step",
            )
        )
    ub, uc = bandwidth_utilisation(b), bandwidth_utilisation(c)
    mbu = _row(
        "MBU (off-chip bandwidth utilisation)",
        "%",
        ub,
        uc,
        "bytes moved off chip / (time x sustained off-chip bandwidth)",
    )
    known = b.model.peak_flops > 0 and c.model.peak_flops > 0
    mfu = _row(
        "MFU",
        "%",
        b.model.mfu if known else None,
        c.model.mfu if known else None,
        "model FLOPs / (time x peak of the model's format)"
        if known
        else "unknown: a trace read without its model (--model) has no FLOP count",
    )
    rows += [mbu, mfu] if b.tags.workload.phase == "decode" else [mfu, mbu]
    rows += _latency_rows(r)
    q = c.model.quality_error
    rows.append(
        {
            "metric": "quality error",
            "baseline": fmt_quantity(b.model.quality_error, ""),
            "candidate": fmt_quantity(q, ""),
            "change": "-",
            "evidence": "relative output error vs a float64 reference"
            if q is not None
            else "missing: no quality metric recorded",
        }
    )
    return rows


def _latency_rows(r: TriageReport) -> list[dict[str, Any]]:
    if r.sla is None:
        return [
            {
                "metric": "p50/p95/p99 latency",
                "baseline": "-",
                "candidate": "-",
                "change": "-",
                "evidence": "missing: no serving simulation or recorded percentiles",
            }
        ]
    iv = r.sla.intervals or {}
    rows = []
    for p in ("p50_s", "p95_s", "p99_s"):
        b, c = r.sla.baseline[p], r.sla.candidate[p]
        lo_b, hi_b = iv.get("baseline", {}).get(p, (b, b))
        lo_c, hi_c = iv.get("candidate", {}).get(p, (c, c))
        rows.append(
            _row(
                f"{p[:3]} latency",
                "s",
                b,
                c,
                f"{r.sla.requests} simulated requests per side at {r.sla.rate_per_s:.3g} req/s; "
                f"95% bootstrap {fmt_time(lo_b)}..{fmt_time(hi_b)} vs "
                f"{fmt_time(lo_c)}..{fmt_time(hi_c)}",
            )
        )
    return rows


def first_failing_rows(r: TriageReport) -> list[dict[str, Any]]:
    ff = r.first_failing
    if ff is None:
        return [{"mechanism": "none", "evidence": "no material regression above the noise"}]
    return [
        {
            "mechanism": ff.mechanism + (f" ({ff.level})" if ff.level else ""),
            "kernel": ff.kernel,
            "owner": r.owner.role if r.owner else "",
            "closure_artifact": r.owner.closure_artifact if r.owner else "",
            "evidence": ff.evidence,
        }
    ]


def cause_rows(causes: list[Cause]) -> list[dict[str, Any]]:
    return [
        {
            "cause": c.change,
            "mechanism": c.mechanism or "-",
            "share": c.share,
            "share_s": c.share_s,
            "kernels": f"{c.family} x{c.count}" if c.count > 1 else c.family or "-",
            "owner": c.owner or "-",
        }
        for c in causes
    ]


def proof_rows(causes: list[Cause]) -> list[dict[str, Any]]:
    rows = []
    for c in causes:
        for row in c.rows:
            rows.append({"cause": c.mechanism or c.change, **row})
    return rows


def owner_rows(r: TriageReport, causes: list[Cause]) -> list[dict[str, Any]]:
    """Owners of the material causes, largest share first, each with its mechanisms.

    The triage's own owner is always among them (added last when no cause names it).
    """
    by_role: dict[str, list[Cause]] = {}
    for c in sorted(causes, key=lambda c: -c.share):
        if c.owner:
            by_role.setdefault(c.owner, []).append(c)
    if r.owner is not None:
        by_role.setdefault(r.owner.role, [])
    roles = {o.role: o for o in r.owners.roles}
    out = []
    for role, mine in by_role.items():
        o = roles.get(role)
        mechs = ", ".join(f"{c.mechanism} ({fmt_percent(c.share)})" for c in mine)
        if not mechs and r.first_failing is not None:
            mechs = f"{r.first_failing.mechanism} (first failing)"
        out.append(
            {
                "owner": "assigned",
                "role": role,
                "mechanisms": mechs or "-",
                "closure_artifact": o.closure_artifact if o else "",
                "responsibility": o.responsibility if o else "",
            }
        )
    return out


def roster_rows(r: TriageReport) -> list[dict[str, Any]]:
    return [
        {
            "role": o.role,
            "responsibility": o.responsibility,
            "closure_artifact": o.closure_artifact,
            "mechanisms": ", ".join(o.mechanisms),
        }
        for o in r.owners.roles
    ]


def matrix_rows(r: TriageReport) -> list[dict[str, Any]]:
    key = "time_per_token_s" if r.per_item else "time_s"
    flag = next((c.flag_at for c in r.checks if c.metric == "time_s"), 0.01)
    rows = []
    for row in r.matrix:
        b, c = row["baseline"].get(key), row["candidate"].get(key)
        change = (c - b) / b if b and c is not None else None
        status = "pass" if change is not None and change <= max(flag, r.noise) else "fail"
        rows.append(
            {
                "slice": row["slice"],
                "source": row["source"],
                "metric": "time per token" if r.per_item else "step time",
                "baseline": fmt_quantity(b, "s"),
                "candidate": fmt_quantity(c, "s"),
                "change": "-" if change is None else fmt_change(change),
                "mfu_baseline": row["baseline"].get("mfu"),
                "mfu_candidate": row["candidate"].get("mfu"),
                "status": (
                    "trade-off"
                    if not row.get("judged", True)
                    else status
                    if change is not None
                    else "unknown"
                ),
            }
        )
    return rows


def metric_unit(metric: str) -> str:
    """The unit a metric of record is shown in (``s``, ``%``, ``tokens/s`` or ``""``)."""
    if metric.endswith("_s"):
        return "s"
    if metric in ("throughput", "tokens_per_s"):
        return "tokens/s"
    if metric in ("mfu", "hfu", "mbu", "stall_fraction") or metric.endswith(("_fraction", "_util")):
        return "%"
    return ""


def _limit(v: float | None, unit: str, relative: bool, *, signed: bool = False) -> str:
    """A regression or threshold: % when relative, else points (fractions) or the unit."""
    if v is None:
        return "-"
    if relative:
        return fmt_change(v) if signed else fmt_percent(v)
    if unit == "%":
        return f"{'+' if signed and v > 0 else ''}{v * 100:.3g} pp"
    return fmt_quantity(v, unit)


def check_rows(r: TriageReport) -> list[dict[str, Any]]:
    """The rollback criteria in the metric's unit; thresholds as % (or points for fractions)."""
    rows = []
    for c in r.checks:
        unit = metric_unit(c.metric)
        rel = getattr(c, "relative", True)
        rows.append(
            {
                "metric": c.metric,
                "baseline": fmt_quantity(c.baseline, unit),
                "candidate": fmt_quantity(c.candidate, unit),
                "regression": _limit(c.regression, unit, rel, signed=True),
                "flag_at": _limit(c.flag_at, unit, rel),
                "rollback_at": _limit(c.rollback_at, unit, rel),
                "status": c.status,
                "source": c.source,
                "note": c.note,
            }
        )
    return rows


def attribution_table(r: TriageReport) -> list[dict[str, Any]]:
    if r.attribution is None:
        return []
    rows = attribution_rows(r.attribution)
    for row in rows:
        row["change"] = re.sub(r" [bsc]None\b", "", row["change"])
    return rows
