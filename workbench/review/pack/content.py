"""The data of a review pack built around a regression (baseline vs candidate); no rendering.

:func:`comparison_pack` triages the pair and assembles, as rows, everything the pack shows: a
title naming the change and the headline figure; the decision; the headline (step time with its
interval, throughput, MFU and MBU, MBU first for decode, p50/p95/p99 with bootstrap intervals,
quality evidence); for two measured runs, what an HTA or ``nsys stats`` reviewer reads first
(:mod:`.measured`: the paired per-step step time and window rule, both runs' temporal
breakdown, slowdown by kernel category, per-stream view, top operator deltas); every material
cause with its share, mechanism, kernel family and owner
(:mod:`._pack_causes`) and its proving sheet rows; the first failing mechanism; the declared
change (profile figures in their units, prose by reference); the counterfactual attribution; the
kernel diff grouped by family; the per-layer-type diff and its remainder; one layer's
before/after timeline (per stream for traces); the bandwidth-lens variants; the owners assigned
(the full roster in an appendix); the debug branches; the validation matrix; the rollback
criteria; reproducer commands relative to the pack's folder; provenance (:mod:`._pack_meta`).
Figures are text in their units (:mod:`._pack_rows`), except seconds in ``*_s`` columns and
fractions in ``share`` columns. :mod:`workbench.report.review_pack` renders the page and its
Markdown twin.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.evidence import MeasuredRun
from workbench.mapper import ModelMapping
from workbench.review.decision.closure import Guardrails
from workbench.review.decision.owners import OwnershipTable
from workbench.review.decision.verdict import TriageReport, triage
from workbench.review.diagnosis.attribution import reverted_mappings
from workbench.review.join.job_summary import rank_rows
from workbench.review.pack._rows import (
    attribution_table,
    bandwidth_utilisation,
    cause_rows,
    check_rows,
    first_failing_rows,
    headline_rows,
    matrix_rows,
    owner_rows,
    proof_rows,
    roster_rows,
)
from workbench.review.pack.causes import Cause, family_rows, material_causes
from workbench.review.pack.measured import is_measured_pair, measured_tables
from workbench.review.pack.meta import (
    declared_rows,
    pack_title,
    provenance_rows,
    reproducer_rows,
    title_labels,
)
from workbench.review.pack.timeline import layer_timeline
from workbench.review.records.reproduce import remap
from workbench.review.records.store import RunRecord

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


def _lens(r: TriageReport) -> tuple[tuple[str, ModelMapping], ...]:
    """Baseline, the candidate with each declared change reverted alone, the candidate."""
    mb, mc = remap(r.baseline), remap(r.candidate)
    if mb is None or mc is None:
        return ()
    steps = [(f"without {c.name}", m) for c, m in reverted_mappings(r.baseline, r.candidate)]
    return (("baseline", mb), *(steps if len(steps) > 1 else ()), ("candidate", mc))


def _rank_table(r: TriageReport) -> list[Table]:
    """The per-rank view, when either side came from a job folder (else no table)."""
    rows = rank_rows(r.baseline.measurement, r.candidate.measurement)
    if not rows:
        return []
    cols = ("rank", "baseline_step_s", "candidate_step_s", "baseline_wait_s",
            "candidate_wait_s", "baseline_straggler", "candidate_straggler")  # fmt: skip
    return [("Per rank: step time, collective wait and stragglers (job folders)", rows, cols)]


def _headline(r: TriageReport) -> list[dict[str, Any]]:
    """The headline rows; for two measured runs, only the figures the traces carry.

    A trace read without its model has no FLOP count, byte count, latency percentiles or
    quality metric: rows of ``-`` on both sides say nothing a reviewer can use.
    """
    rows = headline_rows(r)
    if not is_measured_pair(r):
        return rows
    return [row for row in rows if not (row["baseline"] == "-" and row["candidate"] == "-")]


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
        *_rank_table(r),
        *measured_tables(r, traces),
        (
            "Material causes (each with its share of the regression)",
            cause_rows(causes),
            ("cause", "mechanism", "share", "share_s", "kernels", "owner"),
        ),
        (
            "First failing mechanism",
            first_failing_rows(r),
            ("mechanism", "kernel", "owner", "closure_artifact", "evidence"),
        ),
        (
            "Proving artifact: mapping-sheet rows before and after, for every material cause",
            proof_rows(causes),
            proof_cols,
        ),
        ("Declared change", declared_rows(r), ("group", "name", "before", "after")),
        (
            "Attribution: each declared change reverted alone (counterfactual)",
            attribution_table(r),
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
            owner_rows(r, causes),
            ("owner", "role", "mechanisms", "closure_artifact", "responsibility"),
        ),
        (
            "Debug branches",
            [dataclasses.asdict(n) for n in r.branches],
            ("id", "parent", "question", "status", "evidence", "next_action"),
        ),
        (
            "Validation matrix (pass/fail per slice)",
            matrix_rows(r),
            ("slice", "source", "metric", "baseline", "candidate", "change", "status"),
        ),
        (
            "Rollback criteria",
            check_rows(r),
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
            roster_rows(r),
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
