"""A job folder's summary as the JSON document ``workbench trace DIR`` prints, and job pairs.

``job_document(job)``: world size, the job's step time (set by its slowest rank), per-rank step
time, collective wait, own work and temporal breakdown, and ``stragglers`` (rank, category, seconds
lost per step; empty when no rank drives the step). ``job_pair_document(base, cand)``: two jobs
paired per step and per rank (:func:`workbench.evidence.compare.compare_steps`, the one comparison
of measured runs). ``job_headline`` names the straggler rank and its mechanism when exactly one
rank drives the step. All times are seconds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from workbench._doc import pick
from workbench._format import fmt_time
from workbench.evidence.compare import Shift, compare_steps
from workbench.evidence.stragglers import STRAGGLER_SHARE, JobSummary, RankFigures, Straggler
from workbench.review.records.store import Measurement

__all__ = [
    "JOB_DOC_KIND",
    "MECHANISM",
    "job_document",
    "job_headline",
    "job_measurement",
    "job_pair_document",
    "job_record_line",
    "rank_rows",
    "setting_rank",
    "straggler_sentence",
]

JOB_DOC_KIND = "workbench.job_trace"

#: What a straggler's category means for the step, one phrase each (the mechanism).
MECHANISM = {
    "gemm": "its GEMMs run longer than its peers': a slower GPU, its clocks or another kernel",
    "collective": "its collectives run longer than its peers': its link or NCCL path is slower",
    "idle": "its GPU sits idle longer: host-bound by input, launches or synchronisation",
    "copy": "its memory copies run longer than its peers'",
}


def job_headline(job: JobSummary) -> str:
    """One line: the straggler rank and its mechanism, or that no rank drives the step.

    >>> from workbench.evidence.stragglers import JobSummary, Straggler
    >>> from workbench.evidence.stragglers import RankFigures
    >>> two = tuple(RankFigures(rank=r, source="f", step_s=1.0, wait_s=0.0, work_s=1.0, own_s=(),
    ...                         walls_s=(1.0,), breakdown=()) for r in (0, 1))
    >>> job = JobSummary(world_size=2, backend="nccl", steps=(1,), job_steps_s=(1.0,),
    ...                  slowest=(1,), ranks=two, waits_matched=True,
    ...                  stragglers=(Straggler(rank=1, category="gemm", lost_s=0.2,
    ...                                        category_lost_s=0.2),))
    >>> job_headline(job)[:60]
    'rank 1 drives the step: 200 ms lost per step in gemm (its GE'
    """
    if len(job.ranks) < 2:
        return "one rank read: no peers to compare it with, so no straggler can be named"
    if len(job.stragglers) == 1:
        s = job.stragglers[0]
        return straggler_sentence(s.rank, s.category, s.lost_s)
    if job.stragglers:
        ranks = ", ".join(str(s.rank) for s in job.stragglers)
        return f"ranks {ranks} drive the step together: no single straggler"
    return (
        f"no rank drives the step (none loses more than {STRAGGLER_SHARE:.0%} of the step to "
        "its peers)"
    )


def straggler_sentence(rank: int, category: str, lost_s: float) -> str:
    """``rank R drives the step: T lost per step in C (mechanism); ...``, one line."""
    why = MECHANISM.get(category, f"its {category} kernels run longer than its peers'")
    return (
        f"rank {rank} drives the step: {fmt_time(lost_s)} lost per step in {category} ({why}); "
        "its peers wait for it in their collectives"
    )


def setting_rank(job: JobSummary) -> RankFigures:
    """The rank whose trace stands for the job (its top straggler, else the step-setter).

    Without a straggler: the rank that sets the job's step most often (the lowest on a tie). In a
    synchronous job every rank's step is about as long (the others wait for the slowest in
    their collectives), so the straggler's kernels, not the step-setter's, show what is slow.
    """
    if job.stragglers:
        return next(r for r in job.ranks if r.rank == job.stragglers[0].rank)
    counts = {r.rank: job.slowest.count(r.rank) for r in job.ranks}
    best = max(counts.values())
    rank = min(r for r, n in counts.items() if n == best)
    return next(r for r in job.ranks if r.rank == rank)


def job_measurement(job: JobSummary, m: Measurement) -> Measurement:
    """``m`` (the step-setting rank's measurement) with the job's per-rank view added."""
    return dataclasses.replace(
        m,
        method=(
            f"job of {len(job.ranks)} rank(s) (world size {job.world_size}); job step "
            f"{job.step_s:.6g} s (median, set by its slowest rank per step); this record's "
            f"kernels are rank {setting_rank(job).rank}'s (its straggler, else the rank setting "
            "the step most often): " + m.method
        ),
        rank_steps_s=tuple((r.rank, r.step_s, r.wait_s, r.work_s) for r in job.ranks),
        stragglers=tuple((s.rank, s.category, s.lost_s) for s in job.stragglers),
    )


def _rank_row(r: RankFigures) -> dict[str, Any]:
    breakdown = dict(r.breakdown)
    span = breakdown.get("span_s", 0.0)
    return {
        "rank": r.rank,
        "file": Path(r.source).name,
        "step_s": r.step_s,
        "collective_wait_s": r.wait_s,
        "work_s": r.work_s,
        "own_s": dict(r.own_s),
        "steps_s": list(r.walls_s),
        "breakdown": {
            **breakdown,
            "idle_pct": 100.0 * breakdown.get("idle_s", 0.0) / span if span > 0 else 0.0,
            "compute_pct": 100.0 * breakdown.get("compute_s", 0.0) / span if span > 0 else 0.0,
        },
    }


def _straggler(s: Straggler) -> dict[str, Any]:
    return {
        **pick(s, "rank", "category"),
        "lost_s_per_step": s.lost_s,
        "category_lost_s_per_step": s.category_lost_s,
    }


def job_document(job: JobSummary) -> dict[str, Any]:
    """The JSON-safe document of one job (see the module doc)."""
    return {
        "kind": JOB_DOC_KIND,
        "schema_version": 1,
        "world_size": job.world_size,
        "backend": job.backend,
        "ranks_read": len(job.ranks),
        "steps": list(job.steps),
        "job": {
            "step_s": job.step_s,
            "steps_s": list(job.job_steps_s),
            "slowest_rank_per_step": list(job.slowest),
        },
        "ranks": [_rank_row(r) for r in job.ranks],
        "stragglers": [_straggler(s) for s in job.stragglers],
        "straggler_share": STRAGGLER_SHARE,
        "waits_estimated": job.waits_matched,
        "headline": job_headline(job),
        "skipped": [{"file": f, "reason": why} for f, why in job.skipped],
        "warnings": list(job.warnings),
    }


def _shift(s: Shift) -> dict[str, Any]:
    names = ("estimate_s", "low_s", "high_s", "coverage", "method", "pairs", "beyond_noise")
    return pick(s, *names, "baseline_median_s")


def _paired(base: list[float], cand: list[float]) -> dict[str, Any] | None:
    """The step shift, steps paired in order; None with fewer than 2 steps on a side."""
    if min(len(base), len(cand)) < 2:
        return None
    return _shift(compare_steps(base, cand))


def job_pair_document(base: JobSummary, cand: JobSummary) -> dict[str, Any]:
    """Two jobs paired per step and per rank: the job's step shift and each common rank's."""
    by_rank = {r.rank: r for r in base.ranks}
    ranks = []
    for r in cand.ranks:
        b = by_rank.get(r.rank)
        if b is None:
            continue
        ranks.append({
            "rank": r.rank,
            "baseline_step_s": b.step_s,
            "candidate_step_s": r.step_s,
            "baseline_wait_s": b.wait_s,
            "candidate_wait_s": r.wait_s,
            "shift": _paired(list(b.walls_s), list(r.walls_s)),
        })  # fmt: skip
    return {
        "kind": "workbench.job_trace_pair",
        "schema_version": 1,
        "baseline": job_document(base),
        "candidate": job_document(cand),
        "job_shift": _paired(list(base.job_steps_s), list(cand.job_steps_s)),
        "ranks": ranks,
        "headline": job_headline(cand),
    }


def job_record_line(base: Measurement | None, cand: Measurement | None) -> str | None:
    """The triage headline of two job folders' records: the candidate's straggler and mechanism.

    None when neither record came from a job folder. ``job: rank R drives the step: ...`` when
    exactly one candidate rank drives it; otherwise what the ranks show.
    """
    bj = base is not None and bool(base.rank_steps_s)
    cj = cand is not None and bool(cand.rank_steps_s)
    if not (bj or cj):
        return None
    if not cj:
        return "job: only the baseline is a job folder (per-rank figures on one side only)"
    assert cand is not None
    was = ""
    if bj and base is not None:
        was = "; the baseline job has " + (
            ", ".join(f"rank {r} ({c})" for r, c, _ in base.stragglers) + " as straggler(s)"
            if base.stragglers
            else "no straggler"
        )
    if len(cand.stragglers) == 1:
        rank, category, lost = cand.stragglers[0]
        return "job: " + straggler_sentence(rank, category, lost) + was
    if cand.stragglers:
        ranks = ", ".join(str(r) for r, _, _ in cand.stragglers)
        return f"job: ranks {ranks} drive the candidate's step together (no single straggler){was}"
    return "job: no rank drives the candidate's step" + was


def rank_rows(base: Measurement | None, cand: Measurement | None) -> list[dict[str, Any]]:
    """The per-rank view of two job folders' records: step, collective wait, straggler, s."""
    sides = {"baseline": base, "candidate": cand}
    table: dict[int, dict[str, Any]] = {}
    for side, m in sides.items():
        if m is None:
            continue
        lost = {r: f"{c} +{fmt_time(t)}/step" for r, c, t in m.stragglers}
        for rank, step, wait, _work in m.rank_steps_s:
            row = table.setdefault(rank, {"rank": rank})
            row[f"{side}_step_s"] = step
            row[f"{side}_wait_s"] = wait
            row[f"{side}_straggler"] = lost.get(rank, "")
    return [table[r] for r in sorted(table)]
