"""One job from its ranks' summaries: the step time the slowest rank sets, waits and stragglers.

Ranks' clocks are never compared; every figure is a difference of times on one rank's own clock,
compared across ranks step by step (step N of every rank is the same ``ProfilerStep#N``). Only
the steady steps count: the step indices every rank has, the first of them (warm-up) left out
when there are several.

Collective wait (time a rank spends in NCCL kernels waiting for its peers). A synchronous
collective ends when its last rank has arrived and the data has moved; a rank that arrived
earlier spends the difference inside the kernel, waiting. Waits are estimated only when every
rank of the world size was read (else the last to arrive may be a rank not read). Collective k
of a step is matched across ranks by its order in the step (when every rank ran as many); rank
r's arrival is the kernel's offset from the start of its step window (``a_r``), so its wait is::

    wait_r,k = clamp(max_r' a_r',k - a_r,k, 0, duration_r,k)

ASSUMPTION: ranks start a step together (the last collective of the step before synchronised
them); a rank whose step started late is read as arriving late, not as waiting less.

A rank's own work in a step is its step time less its collective wait; its own time per kernel
category is the category's summed kernel time (collectives: less the wait), and ``idle`` is its
GPU idle time. The job's step time is the slowest rank's step time, step by step.

Stragglers. A rank's seconds lost per step is the median over steady steps of its own work less
the median own work of the other ranks in that step; it is a straggler when that exceeds
:data:`STRAGGLER_SHARE` of the job's median step time. The category making it slow is the one
(a kernel category or ``idle``) whose own time exceeds the other ranks' median by the most (median
over steps). With one rank there is no straggler.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.evidence.job import RankStep, RankSummary, check_one_job
from workbench.evidence.run import CATEGORIES, TraceError

__all__ = ["STRAGGLER_SHARE", "JobSummary", "RankFigures", "Straggler", "combine_ranks"]

#: A rank drives the step when it loses more than this share of the job's median step time, per
#: step, against its peers. ASSUMPTION: 5% (well above the step-to-step jitter of a steady job,
#: about 1-2% in HTA's sampled ranks; a smaller loss is not worth a headline).
STRAGGLER_SHARE = 0.05
#: The categories a rank's own time is split into: kernel categories and GPU idle time.
OWN = (*CATEGORIES, "idle")


@dataclass(frozen=True, slots=True, kw_only=True)
class Straggler:
    """A rank that drives the job's step.

    Attributes:
        rank: The rank.
        category: The kernel category (or ``idle``) whose excess time makes it slow.
        lost_s: Seconds the rank loses per step against its peers' median (median over steps).
        category_lost_s: The category's own share of that excess, s per step.
    """

    rank: int
    category: str
    lost_s: float
    category_lost_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RankFigures:
    """One rank's figures over the job's steady steps (medians over steps), s.

    Attributes:
        rank: The rank.
        source: Its trace file.
        step_s: Median step time.
        wait_s: Median collective wait per step.
        work_s: Median own work per step (step time less collective wait).
        own_s: ``(category, median own seconds per step)`` for :data:`OWN`, nonzero ones.
        walls_s: Step time of every steady step, in step order.
        breakdown: HTA's temporal breakdown of the rank (``span_s``, ``idle_s``...).
    """

    rank: int
    source: str
    step_s: float
    wait_s: float
    work_s: float
    own_s: tuple[tuple[str, float], ...]
    walls_s: tuple[float, ...]
    breakdown: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSummary:
    """A job's ranks combined (see the module doc); times in seconds.

    Attributes:
        world_size: ``distributedInfo.world_size`` (None when the traces do not say).
        backend: The collective backend the traces name.
        steps: The steady step indices every rank has.
        job_steps_s: The job's step time per steady step (its slowest rank's).
        slowest: The rank setting the job's step time, per steady step.
        ranks: Each rank's figures, in rank order.
        stragglers: The ranks driving the step (empty when none does), most time lost first.
        waits_matched: Whether collective waits could be estimated (every rank ran as many
            collectives in each step); False: waits are 0 and the note says why.
        skipped: ``(file, reason)`` of rank files that could not be read.
        warnings: Lines a reader should see first.
    """

    world_size: int | None
    backend: str
    steps: tuple[int, ...]
    job_steps_s: tuple[float, ...]
    slowest: tuple[int, ...]
    ranks: tuple[RankFigures, ...]
    stragglers: tuple[Straggler, ...]
    waits_matched: bool
    skipped: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def step_s(self) -> float:
        """The job's median step time over the steady steps, s."""
        return statistics.median(self.job_steps_s)


def combine_ranks(
    summaries: Sequence[RankSummary], *, skipped: Sequence[tuple[str, str]] = ()
) -> JobSummary:
    """Combine per-rank summaries of one job (see the module doc).

    Args:
        summaries: One per rank (any order).
        skipped: ``(file, reason)`` of rank files left out, carried into the summary.

    Raises:
        TraceError: No summary, not one job (mixed world sizes or backends, a rank twice), or no
            step index every rank shares.
    """
    if not summaries:
        raise TraceError("job: no rank could be read")
    check_one_job(summaries)
    ranks = sorted(summaries, key=lambda s: s.rank)
    steps = _steady_steps(ranks)
    table = [{st.index: st for st in s.steps} for s in ranks]
    complete = ranks[0].world_size is None or len(ranks) == ranks[0].world_size
    waits, matched = _waits(table, steps) if complete else (_no_waits(table, steps), False)
    own = [[_own(t[i], waits[r][n]) for n, i in enumerate(steps)] for r, t in enumerate(table)]
    work = [[t[i].wall_s - waits[r][n] for n, i in enumerate(steps)] for r, t in enumerate(table)]
    walls = [[t[i].wall_s for i in steps] for t in table]
    job_steps = tuple(max(w[n] for w in walls) for n in range(len(steps)))
    slowest = tuple(ranks[max(range(len(ranks)), key=lambda r: walls[r][n])].rank
                    for n in range(len(steps)))  # fmt: skip
    figures = tuple(_figures(s, walls[r], waits[r], work[r], own[r]) for r, s in enumerate(ranks))
    stragglers = _stragglers(ranks, work, own, statistics.median(job_steps))
    return JobSummary(
        world_size=ranks[0].world_size,
        backend=ranks[0].backend,
        steps=steps,
        job_steps_s=job_steps,
        slowest=slowest,
        ranks=figures,
        stragglers=stragglers,
        waits_matched=matched,
        skipped=tuple(skipped),
        warnings=_warnings(ranks, matched, complete, len(steps)),
    )


def _steady_steps(ranks: Sequence[RankSummary]) -> tuple[int, ...]:
    common = set.intersection(*({st.index for st in s.steps} for s in ranks))
    if not common:
        raise TraceError("job: the ranks share no step index (ProfilerStep#N); not one job")
    ordered = sorted(common)
    return tuple(ordered[1:] if len(ordered) > 1 else ordered)


def _waits(
    table: Sequence[dict[int, RankStep]], steps: Sequence[int]
) -> tuple[list[list[float]], bool]:
    """Collective wait per rank per steady step, s; and whether every step matched."""
    out = [[0.0] * len(steps) for _ in table]
    matched = True
    for n, i in enumerate(steps):
        colls = [t[i].collectives for t in table]
        if len({len(c) for c in colls}) != 1:
            matched = False
            continue
        for k in range(len(colls[0])):
            last = max(c[k][0] for c in colls)
            for r, c in enumerate(colls):
                offset, dur = c[k]
                out[r][n] += min(max(last - offset, 0.0), dur)
    return out, matched


def _no_waits(table: Sequence[dict[int, RankStep]], steps: Sequence[int]) -> list[list[float]]:
    return [[0.0] * len(steps) for _ in table]


def _own(step: RankStep, wait_s: float) -> dict[str, float]:
    own = dict.fromkeys(OWN, 0.0)
    own.update(step.category_s)
    own["collective"] = max(own["collective"] - wait_s, 0.0)
    own["idle"] = step.idle_s
    return own


def _figures(
    s: RankSummary,
    walls: list[float],
    waits: list[float],
    work: list[float],
    own: list[dict[str, float]],
) -> RankFigures:
    med = {c: statistics.median(o[c] for o in own) for c in OWN}
    return RankFigures(
        rank=s.rank,
        source=s.source,
        step_s=statistics.median(walls),
        wait_s=statistics.median(waits),
        work_s=statistics.median(work),
        own_s=tuple((c, t) for c, t in med.items() if t > 0),
        walls_s=tuple(walls),
        breakdown=s.breakdown,
    )


def _median_without(ordered: Sequence[float], value: float) -> float:
    """Median of the sorted ``ordered`` with one occurrence of ``value`` taken out."""
    skip = bisect_left(ordered, value)
    m = len(ordered) - 1

    def at(j: int) -> float:
        return ordered[j if j < skip else j + 1]

    return (at((m - 1) // 2) + at(m // 2)) / 2


def _excess(values: Sequence[Sequence[float]]) -> list[float]:
    """Per rank: median over steps of its value less the other ranks' median that step."""
    n_steps = len(values[0])
    ordered = [sorted(v[n] for v in values) for n in range(n_steps)]
    return [
        statistics.median(v[n] - _median_without(ordered[n], v[n]) for n in range(n_steps))
        for v in values
    ]


def _stragglers(
    ranks: Sequence[RankSummary],
    work: Sequence[Sequence[float]],
    own: Sequence[Sequence[dict[str, float]]],
    job_step_s: float,
) -> tuple[Straggler, ...]:
    if len(ranks) < 2:
        return ()
    lost = _excess(work)
    by_cat = {c: _excess([[o[c] for o in rank_own] for rank_own in own]) for c in OWN}
    out = []
    for r, s in enumerate(ranks):
        if lost[r] <= STRAGGLER_SHARE * job_step_s:
            continue
        category = max(OWN, key=lambda c: by_cat[c][r])
        out.append(Straggler(rank=s.rank, category=category, lost_s=lost[r],
                             category_lost_s=max(by_cat[category][r], 0.0)))  # fmt: skip
    return tuple(sorted(out, key=lambda x: -x.lost_s))


def _warnings(
    ranks: Sequence[RankSummary], matched: bool, complete: bool, steady: int
) -> tuple[str, ...]:
    out = []
    world = ranks[0].world_size
    if not complete:
        out.append(
            f"{len(ranks)} of {world} ranks read: the job figures cover those ranks only, and "
            "collective waits are not estimated (the last rank to arrive may be one not read)"
        )
    elif not matched:
        out.append(
            "the ranks ran different numbers of collectives in a step: collective waits are not "
            "estimated for it (0)"
        )
    if steady < 3:
        out.append(f"{steady} steady step(s) shared by every rank: the medians are rough")
    return tuple(out)
