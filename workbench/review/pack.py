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
import shlex
from dataclasses import dataclass
from typing import Any

from workbench.evidence import MeasuredRun
from workbench.mapper import ModelMapping
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
    """

    title: str
    report: TriageReport
    tables: tuple[Table, ...]
    layer: str
    timeline: tuple[dict[str, Any], ...]
    lens: tuple[tuple[str, ModelMapping], ...]


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
    return f"{iv[0]:.4g}..{iv[1]:.4g}" if iv else "n/a (predicted)"


def _headline(r: TriageReport) -> list[dict[str, Any]]:
    b, c = r.baseline, r.candidate
    h = r.headline()
    rows: list[dict[str, Any]] = [
        {
            "metric": "step time (s)",
            "baseline": b.model.time_s,
            "candidate": c.model.time_s,
            "change": h["time_change"],
            "evidence": f"95% interval {_interval(b)} vs {_interval(c)}",
        }
    ]
    if r.per_item:
        for key, label in (
            ("time_per_token_s", "per token"),
            ("time_per_request_s", "per request"),
        ):
            hb, hc = h["baseline"][key], h["candidate"][key]
            rows.append(
                {
                    "metric": f"time {label} (s)",
                    "baseline": hb,
                    "candidate": hc,
                    "change": (hc - hb) / hb if hb else None,
                    "evidence": "the workload changed: compared per item",
                }
            )
    if b.tags.workload.phase == "decode":
        ub, uc = bandwidth_utilisation(b), bandwidth_utilisation(c)
        rows.append(
            {
                "metric": "off-chip bandwidth utilisation",
                "baseline": ub,
                "candidate": uc,
                "change": (uc - ub) / ub if ub and uc is not None else None,
                "evidence": "decode is bandwidth-bound: bytes / (time x peak off-chip bandwidth)",
            }
        )
    else:
        known = b.model.peak_flops > 0 and c.model.peak_flops > 0
        rows.append(
            {
                "metric": "MFU",
                "baseline": b.model.mfu if known else None,
                "candidate": c.model.mfu if known else None,
                "change": h["mfu_change"],
                "evidence": "model FLOPs / (time x peak of the model's format)"
                if known
                else "unknown: a trace read without its model (--model) has no FLOP count",
            }
        )
    rows += _latency_rows(r)
    rows.append(
        {
            "metric": "quality error",
            "baseline": b.model.quality_error,
            "candidate": c.model.quality_error,
            "change": None,
            "evidence": "relative output error vs a float64 reference"
            if c.model.quality_error is not None
            else "missing: no quality metric recorded",
        }
    )
    return rows


def _latency_rows(r: TriageReport) -> list[dict[str, Any]]:
    if r.sla is None:
        return [
            {
                "metric": "p50/p95/p99",
                "baseline": None,
                "candidate": None,
                "change": None,
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
            {
                "metric": f"{p[:3]} latency (s)",
                "baseline": b,
                "candidate": c,
                "change": (c - b) / b if b else None,
                "evidence": f"{r.sla.requests} simulated requests per side at "
                f"{r.sla.rate_per_s:.3g} req/s; 95% bootstrap {lo_b:.4g}..{hi_b:.4g} vs "
                f"{lo_c:.4g}..{hi_c:.4g}",
            }
        )
    return rows


def _first_failing(r: TriageReport) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    ff = r.first_failing
    if ff is None:
        return [{"mechanism": "none", "evidence": "no material regression above the noise"}], []
    row = {
        "mechanism": ff.mechanism + (f" ({ff.level})" if ff.level else ""),
        "kernel": ff.kernel,
        "owner": r.owner.role if r.owner else "",
        "closure_artifact": r.owner.closure_artifact if r.owner else "",
        "evidence": ff.evidence,
    }
    return [row], list(ff.rows)


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
                "metric": key,
                "baseline": b,
                "candidate": c,
                "change": change,
                "mfu_baseline": row["baseline"].get("mfu"),
                "mfu_candidate": row["candidate"].get("mfu"),
                "status": status if change is not None else "unknown",
            }
        )
    return rows


def _reproducers(r: TriageReport) -> list[dict[str, Any]]:
    triage_cmd = ["workbench", "triage", "baseline.json", "candidate.json"]
    for g in (r.changed or "").split(","):
        if g:
            triage_cmd += ["--changed", g]
    review_cmd = [*triage_cmd[:1], "review", *triage_cmd[2:], "--out", "pack.html"]
    return [
        {"what": "baseline run", "command": r.baseline.command or "(not recorded)"},
        {"what": "candidate run", "command": r.candidate.command or "(not recorded)"},
        {"what": "triage", "command": shlex.join(triage_cmd)},
        {"what": "this pack", "command": shlex.join(review_cmd)},
    ]


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
            timeline then uses the trace's own timestamps.

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
    title = f"Regression review: {candidate.label} vs {baseline.label}"
    decision = [{"decision": r.decision, "reason": reason} for reason in r.reasons]
    mismatch = [{"tag": m} for m in r.mismatched_tags]
    tables: list[Table] = [("Decision", decision, ("decision", "reason"))]
    if not r.comparable:
        tables.append(("Refused: mismatched tags", mismatch, ("tag",)))
        return ComparisonPack(
            title=title, report=r, tables=tuple(tables), layer="", timeline=(), lens=()
        )
    first, proof = _first_failing(r)
    diff = [dataclasses.asdict(d) for d in r.diff if d.level != "kernel"]
    kernels = [dataclasses.asdict(d) for d in r.diff if d.level == "kernel"][:15]
    owners_rows = [
        {
            "owner": "assigned" if r.owner is not None and o.role == r.owner.role else "",
            "role": o.role,
            "responsibility": o.responsibility,
            "closure_artifact": o.closure_artifact,
            "mechanisms": list(o.mechanisms),
        }
        for o in r.owners.roles
    ]
    att = attribution_rows(r.attribution) if r.attribution else []
    tables += [
        ("Headline", _headline(r), ("metric", "baseline", "candidate", "change", "evidence")),
        (
            "First failing mechanism",
            first,
            ("mechanism", "kernel", "owner", "closure_artifact", "evidence"),
        ),
        (
            "Proving artifact: mapping-sheet rows before and after",
            proof,
            (
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
            ),
        ),
        (
            "Declared change (in full)",
            [dataclasses.asdict(c) for c in r.declared],
            ("group", "name", "before", "after"),
        ),
        (
            "Attribution: each declared change reverted alone (counterfactual)",
            att,
            ("change", "reverted_s", "share_s", "share"),
        ),
        (
            "Per-kernel diff (top 15 by delta)",
            kernels,
            ("name", "baseline_s", "candidate_s", "delta_s", "share", "mechanism"),
        ),
        (
            "Per layer type, and the unexplained remainder",
            diff,
            ("name", "level", "baseline_s", "candidate_s", "delta_s", "share"),
        ),
        (
            "Ownership",
            owners_rows,
            ("owner", "role", "responsibility", "closure_artifact", "mechanisms"),
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
            [dataclasses.asdict(c) for c in r.checks],
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
        ("Reproducer commands", _reproducers(r), ("what", "command")),
    ]
    layer, timeline = layer_timeline(r, traces)
    return ComparisonPack(
        title=title, report=r, tables=tuple(tables), layer=layer, timeline=timeline, lens=_lens(r)
    )
