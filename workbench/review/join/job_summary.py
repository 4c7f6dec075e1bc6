"""A job folder's summary as the JSON document ``workbench trace DIR`` prints, and job pairs.

``job_document(job)``: world size, the job's step time (set by its slowest rank), per-rank step
time, collective wait, own work and temporal breakdown, and ``stragglers`` (rank, category, seconds
lost per step; empty when no rank drives the step). ``job_pair_document(base, cand)``: two jobs
paired per step and per rank (:func:`workbench.evidence.compare.compare_steps`, the one comparison
of measured runs). ``job_headline`` names the straggler rank and its mechanism when exactly one
rank drives the step. All times are seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.evidence.compare import Shift, compare_steps
from workbench.evidence.stragglers import STRAGGLER_SHARE, JobSummary, RankFigures, Straggler

__all__ = ["JOB_DOC_KIND", "job_document", "job_headline", "job_pair_document"]

JOB_DOC_KIND = "workbench.job_trace"

#: What a straggler's category means for the step, one phrase each (the mechanism).
_MECHANISM = {
    "gemm": "its GEMMs run longer than its peers' (a slower GPU, clocks or a different kernel)",
    "collective": "its collectives run longer than its peers' (its link or NCCL path is slower)",
    "idle": "its GPU sits idle longer (host-bound: input pipeline, launches, synchronisation)",
    "copy": "its memory copies run longer than its peers'",
}


def job_headline(job: JobSummary) -> str:
    """One line: the straggler rank and its mechanism, or that no rank drives the step.

    >>> from workbench.evidence.stragglers import JobSummary, Straggler
    >>> job = JobSummary(world_size=2, backend="nccl", steps=(1,), job_steps_s=(1.0,),
    ...                  slowest=(1,), ranks=(), waits_matched=True,
    ...                  stragglers=(Straggler(rank=1, category="gemm", lost_s=0.2,
    ...                                        category_lost_s=0.2),))
    >>> job_headline(job)[:60]
    'rank 1 drives the step: 200 ms lost per step in gemm (its GE'
    """
    from workbench._format import fmt_time

    if len(job.stragglers) == 1:
        s = job.stragglers[0]
        why = _MECHANISM.get(s.category, f"its {s.category} kernels run longer than its peers'")
        return (
            f"rank {s.rank} drives the step: {fmt_time(s.lost_s)} lost per step in "
            f"{s.category} ({why}); its peers wait for it in their collectives"
        )
    if job.stragglers:
        ranks = ", ".join(str(s.rank) for s in job.stragglers)
        return f"ranks {ranks} drive the step together: no single straggler"
    return (
        f"no rank drives the step (none loses more than {STRAGGLER_SHARE:.0%} of the step to "
        "its peers)"
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
        "rank": s.rank,
        "category": s.category,
        "lost_s_per_step": s.lost_s,
        "category_lost_s_per_step": s.category_lost_s,
    }


def _straggler(s: Straggler) -> dict[str, Any]:
    return {
        "rank": s.rank,
        "category": s.category,
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
    return {
        "estimate_s": s.estimate_s,
        "low_s": s.low_s,
        "high_s": s.high_s,
        "coverage": s.coverage,
        "method": s.method,
        "pairs": s.pairs,
        "beyond_noise": s.beyond_noise,
        "baseline_median_s": s.baseline_median_s,
    }


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
