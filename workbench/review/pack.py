"""The data of a review pack built around a regression (baseline vs candidate); no rendering.

:func:`comparison_pack` triages the pair and assembles, as plain rows, everything the pack shows:
headline (MFU, or for decode the off-chip bandwidth utilisation; step time with its interval;
p50/p95/p99 with bootstrap intervals; quality evidence), the decision, the first failing mechanism
with its proving sheet rows, the counterfactual attribution, the per-kernel diff, one layer's
before/after timeline, the bandwidth-lens variants (baseline, each counterfactual step,
candidate), the ownership table with the owner marked, the debug branches, the validation matrix
with pass/fail per slice, the rollback criteria and the reproducer commands.
:mod:`workbench.report.review_pack` renders it as one offline HTML page and a Markdown twin.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench._format import fmt_change, fmt_percent, fmt_quantity, fmt_time
from workbench.evidence import MeasuredRun
from workbench.mapper import ModelMapping
from workbench.review._pack_causes import Cause, family_rows, material_causes
from workbench.review._pack_meta import (
    declared_rows,
    pack_title,
    provenance_rows,
    reproducer_rows,
    title_labels,
)
from workbench.review._timeline import layer_timeline
from workbench.review.attribution import attribution_rows, reverted_mappings
from workbench.review.closure import Guardrails
from workbench.review.owners import OwnershipTable
from workbench.review.records import RunRecord
from workbench.review.reproduce import hardware_for, remap
from workbench.review.triage import TriageReport, triage

__all__ = ["ComparisonPack", "Table", "bandwidth_utilisation", "comparison_pack"]

#: ``(heading, rows, columns)`` of one tabular section.
Table = tuple[str, list[dict[str, Any]], tuple[str, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ComparisonPack:
    """Everything a regression review pack shows, as data.

    Attributes:
        title: Page title (raw text; renderers escape it).
        report: The triage behind it.
        tables: Tabular sections in page order.
        layer: The layer the timeline shows.
        timeline: Rows ``{side, kernel, start_s, end_s, source}`` (seconds from layer start).
        lens: ``(variant name, mapping)`` for the bandwidth lens (empty when not re-mappable).
        causes: The material causes, largest share first.
        traces: The measured runs behind each side (None: predicted or a record).
    """

    title: str
    report: TriageReport
    tables: tuple[Table, ...]
    layer: str
    timeline: tuple[dict[str, Any], ...]
    lens: tuple[tuple[str, ModelMapping], ...]
    causes: tuple[Cause, ...] = ()
    traces: tuple[MeasuredRun | None, MeasuredRun | None] = (None, None)


def bandwidth_utilisation(record: RunRecord) -> float | None:
    """Off-chip bytes over (time x peak off-chip bandwidth), 0..1; None without the profile."""
    hw = hardware_for(record)
    if hw is None:
        return None
    level = hw.offchip
    moved = sum(k.traffic_at(level.name) for k in record.kernels)
    return moved / (record.model.time_s * level.bandwidth_bytes_per_s)


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


def _headline(r: TriageReport) -> list[dict[str, Any]]:
    b, c = r.baseline, r.candidate
    h = r.headline()
    rows = [
        _row(
            "step time",
            "s",
            b.model.time_s,
            c.model.time_s,
            f"95% interval {_interval(b)} vs {_interval(c)}",
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
        "bytes moved off chip / (time x peak off-chip bandwidth)",
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


def _first_failing(r: TriageReport) -> list[dict[str, Any]]:
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


def _cause_rows(causes: list[Cause]) -> list[dict[str, Any]]:
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


def _proof_rows(causes: list[Cause]) -> list[dict[str, Any]]:
    rows = []
    for c in causes:
        for row in c.rows:
            rows.append({"cause": c.mechanism or c.change, **row})
    return rows


def _owner_rows(r: TriageReport, causes: list[Cause]) -> list[dict[str, Any]]:
    """Owners of the material causes (the triage's owner first), each with its mechanisms."""
    by_role: dict[str, list[Cause]] = {}
    if r.owner is not None:
        by_role[r.owner.role] = []
    for c in causes:
        if c.owner:
            by_role.setdefault(c.owner, []).append(c)
    roles = {o.role: o for o in r.owners.roles}
    out = []
    for role, mine in by_role.items():
        o = roles.get(role)
        mechs = ", ".join(f"{c.mechanism} ({fmt_percent(c.share)})" for c in mine)
        if not mechs and r.first_failing is not None:
            mechs = r.first_failing.mechanism
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


def _roster(r: TriageReport) -> list[dict[str, Any]]:
    return [
        {
            "role": o.role,
            "responsibility": o.responsibility,
            "closure_artifact": o.closure_artifact,
            "mechanisms": ", ".join(o.mechanisms),
        }
        for o in r.owners.roles
    ]


def _matrix(r: TriageReport) -> list[dict[str, Any]]:
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
                "status": status if change is not None else "unknown",
            }
        )
    return rows


def _unit_of(metric: str) -> str:
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


def _check_rows(r: TriageReport) -> list[dict[str, Any]]:
    """The rollback criteria in the metric's unit; thresholds as % (or points for fractions)."""
    rows = []
    for c in r.checks:
        unit = _unit_of(c.metric)
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


def _attribution(r: TriageReport) -> list[dict[str, Any]]:
    if r.attribution is None:
        return []
    rows = attribution_rows(r.attribution)
    for row in rows:
        row["change"] = re.sub(r" [bsc]None\b", "", row["change"])
    return rows


def _lens(r: TriageReport) -> tuple[tuple[str, ModelMapping], ...]:
    """Baseline, the candidate with each declared change reverted alone, the candidate."""
    mb, mc = remap(r.baseline), remap(r.candidate)
    if mb is None or mc is None:
        return ()
    steps = [(f"without {c.name}", m) for c, m in reverted_mappings(r.baseline, r.candidate)]
    return (("baseline", mb), *(steps if len(steps) > 1 else ()), ("candidate", mc))


def comparison_pack(
    baseline: RunRecord,
    candidate: RunRecord,
    *,
    changed: str | tuple[str, ...] | None = None,
    owners: OwnershipTable | None = None,
    guardrails: Guardrails | None = None,
    simulate: bool = True,
    traces: tuple[MeasuredRun | None, MeasuredRun | None] = (None, None),
    inputs: tuple[str | None, str | None] = (None, None),
    out: str | Path | None = None,
) -> ComparisonPack:
    """Triage the pair and assemble the pack's data (see the module docstring).

    Args:
        baseline: Baseline run record.
        candidate: Candidate run record.
        changed: Declared tag group(s).
        owners: Ownership table (default built in).
        guardrails: Rollback criteria (default built in).
        simulate: Run the serving simulation.
        traces: The measured runs the records came from, when they came from traces: the layer
            timeline then uses the trace's own timestamps, and the pack shows each run's streams
            and temporal breakdown.
        inputs: The files the records (or traces) were read from, for provenance (their
            SHA-256) and the reproducer commands.
        out: Where the pack will be written: paths in its commands are relative to its folder.

    Returns:
        The :class:`ComparisonPack`.
    """
    r = triage(
        baseline,
        candidate,
        changed=changed,
        owners=owners,
        guardrails=guardrails,
        simulate=simulate,
    )
    out_dir = Path(out).parent if out is not None else None
    out_name = Path(out).name if out is not None else "pack.html"
    title = pack_title(r, title_labels(r)) if r.comparable else pack_title(r, [])
    decision = [{"decision": r.decision, "reason": reason} for reason in r.reasons]
    tables: list[Table] = [("Decision", decision, ("decision", "reason"))]
    provenance = (
        "Provenance",
        provenance_rows(r, inputs, out_dir),
        ("item", "baseline", "candidate"),
    )
    if not r.comparable:
        mismatch = [{"tag": m} for m in r.mismatched_tags]
        tables += [("Refused: mismatched tags", mismatch, ("tag",)), provenance]
        return ComparisonPack(
            title=title, report=r, tables=tuple(tables), layer="", timeline=(), lens=()
        )
    causes = material_causes(r)
    diff = [dataclasses.asdict(d) for d in r.diff if d.level != "kernel"]
    families = family_rows([d for d in r.diff if d.level == "kernel"])
    proof_cols = (
        "cause",
        "side",
        "kernel",
        "kind",
        "engine",
        "dtype",
        "fusion",
        "tile",
        "bottleneck",
        "predicted_s",
        "measured_s",
    )
    tables += [
        ("Headline", _headline(r), ("metric", "baseline", "candidate", "change", "evidence")),
        (
            "Material causes (each with its share of the regression)",
            _cause_rows(causes),
            ("cause", "mechanism", "share", "share_s", "kernels", "owner"),
        ),
        (
            "First failing mechanism",
            _first_failing(r),
            ("mechanism", "kernel", "owner", "closure_artifact", "evidence"),
        ),
        (
            "Proving artifact: mapping-sheet rows before and after, for every material cause",
            _proof_rows(causes),
            proof_cols,
        ),
        ("Declared change", declared_rows(r), ("group", "name", "before", "after")),
        (
            "Attribution: each declared change reverted alone (counterfactual)",
            _attribution(r),
            ("change", "reverted_s", "share_s", "share"),
        ),
        (
            "Per-kernel diff, grouped by family (top 15 families by delta)",
            families,
            (
                "family",
                "count",
                "layers",
                "baseline_s",
                "candidate_s",
                "delta_s",
                "share",
                "mechanism",
            ),
        ),
        (
            "Per layer type, and the unexplained remainder",
            diff,
            ("name", "level", "baseline_s", "candidate_s", "delta_s", "share"),
        ),
        (
            "Ownership: the owners assigned, with their mechanisms",
            _owner_rows(r, causes),
            ("owner", "role", "mechanisms", "closure_artifact", "responsibility"),
        ),
        (
            "Debug branches",
            [dataclasses.asdict(n) for n in r.branches],
            ("id", "parent", "question", "status", "evidence", "next_action"),
        ),
        (
            "Validation matrix (pass/fail per slice)",
            _matrix(r),
            ("slice", "source", "metric", "baseline", "candidate", "change", "status"),
        ),
        (
            "Rollback criteria",
            _check_rows(r),
            (
                "metric",
                "baseline",
                "candidate",
                "regression",
                "flag_at",
                "rollback_at",
                "status",
                "source",
                "note",
            ),
        ),
        (
            "Reproducer commands (run from the pack's folder)",
            reproducer_rows(r, inputs, out_dir, out_name),
            ("what", "command"),
        ),
        provenance,
        (
            "Appendix: ownership roster",
            _roster(r),
            ("role", "responsibility", "closure_artifact", "mechanisms"),
        ),
    ]
    layer, timeline = layer_timeline(r, traces)
    return ComparisonPack(
        title=title,
        report=r,
        tables=tuple(tables),
        layer=layer,
        timeline=timeline,
        lens=_lens(r),
        causes=tuple(causes),
        traces=traces,
    )
