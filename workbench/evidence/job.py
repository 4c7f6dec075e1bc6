"""A job's folder of per-rank traces: each rank read and reduced on its own to a small summary.

A distributed job writes one profiler trace per rank. Reading them all into one
:class:`~workbench.evidence.run.MeasuredRun` holds every kernel of every rank at once (an
HTA user needed 950 GB of RAM for 200 GB of traces); here each rank's trace is read, reduced to a
:class:`RankSummary` (a few numbers per step, the step's collective kernels in order) and
dropped, so memory holds one rank at a time plus the summaries. The summaries are plain JSON-safe
dicts on the way back from a worker (:meth:`RankSummary.to_dict`, read back defensively), so the
reduction runs unchanged in this process, on local processes or on a Dask cluster
(:mod:`workbench.platform.job_run`). :mod:`workbench.evidence.stragglers` combines them.

Per step (one ``ProfilerStep#N`` window on the rank's GPU timeline, :data:`WINDOW_RULE`):
``wall_s`` and the idle gap from the run's iterations; ``category_s``: summed kernel durations of
the step's activities per kernel category (concurrent kernels each count); ``collectives``: each
collective (NCCL) kernel of the step in start order, as ``(offset_s, duration_s)`` with the
offset measured from the step window's start on the rank's own clock (ranks' clocks are never
compared with each other).
"""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.evidence._source import DEFAULT_MAX_BYTES, check_trace_file, sniff
from workbench.evidence.breakdown import temporal_breakdown
from workbench.evidence.kineto import read_kineto
from workbench.evidence.nsys import read_nsys
from workbench.evidence.run import CATEGORIES, WINDOW_RULE, MeasuredRun, TraceError

__all__ = [
    "SUMMARY_KIND",
    "WINDOW_RULE",
    "RankStep",
    "RankSummary",
    "check_one_job",
    "rank_files",
    "reduce_run",
    "summarize_rank",
]

SUMMARY_KIND = "workbench.rank_summary"
_SUFFIXES = re.compile(r"\.(json|json\.gz|sqlite|db)$", re.IGNORECASE)
_BREAKDOWN_KEYS = (
    "span_s", "idle_s", "compute_s", "non_compute_s", "comm_s", "memory_s", "overlap_s",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class RankStep:
    """One step of one rank, s (see the module doc).

    Attributes:
        index: The ``ProfilerStep#N`` number.
        wall_s: The step window on the rank's GPU timeline, s.
        idle_s: Time in the window with no GPU activity, s.
        category_s: ``(category, summed kernel seconds)`` for every category of the step.
        collectives: ``(offset_s, duration_s)`` of each collective kernel, in start order.
    """

    index: int
    wall_s: float
    idle_s: float
    category_s: tuple[tuple[str, float], ...]
    collectives: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RankSummary:
    """One rank's trace reduced to what the job figures need.

    Attributes:
        source: The trace file.
        rank: ``distributedInfo.rank``.
        world_size: ``distributedInfo.world_size`` (None when the trace does not say).
        backend: ``distributedInfo.backend`` (``"unknown"`` when the trace does not say).
        device: The trace's GPU name(s).
        steps: Every step, in index order.
        breakdown: HTA's temporal breakdown of the rank, ``(name, seconds)`` (``span_s``...).
        warnings: The reader's warnings, one line each.
    """

    source: str
    rank: int
    world_size: int | None
    backend: str
    device: str
    steps: tuple[RankStep, ...]
    breakdown: tuple[tuple[str, float], ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict that :meth:`from_dict` reads back."""
        return {
            "kind": SUMMARY_KIND,
            "source": self.source,
            "rank": self.rank,
            "world_size": self.world_size,
            "backend": self.backend,
            "device": self.device,
            "steps": [
                {
                    "index": s.index,
                    "wall_s": s.wall_s,
                    "idle_s": s.idle_s,
                    "category_s": dict(s.category_s),
                    "collectives": [list(c) for c in s.collectives],
                }
                for s in self.steps
            ],
            "breakdown": dict(self.breakdown),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RankSummary:
        """Read :meth:`to_dict`'s dict; anything malformed is a :class:`TraceError`."""
        where = "rank summary"
        if not isinstance(data, Mapping) or data.get("kind") != SUMMARY_KIND:
            raise TraceError(f"{where}: not a {SUMMARY_KIND} dict")
        source = data.get("source")
        rank = data.get("rank")
        if not isinstance(source, str) or not isinstance(rank, int) or isinstance(rank, bool):
            raise TraceError(f"{where}: 'source' or 'rank' missing or of the wrong type")
        world = data.get("world_size")
        if world is not None and not _is_int(world):
            raise TraceError(f"{source}: world_size {world!r} is not an integer")
        steps = data.get("steps")
        if not isinstance(steps, list) or not steps:
            raise TraceError(f"{source}: the rank summary has no steps")
        breakdown = data.get("breakdown")
        if not isinstance(breakdown, Mapping):
            raise TraceError(f"{source}: the rank summary has no breakdown")
        warnings = data.get("warnings", [])
        return cls(
            source=source,
            rank=rank,
            world_size=world,
            backend=str(data.get("backend", "unknown")),
            device=str(data.get("device", "unknown")),
            steps=tuple(_step_from_dict(s, source) for s in steps),
            breakdown=tuple((k, _seconds(breakdown.get(k), source, k)) for k in _BREAKDOWN_KEYS),
            warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value: object, source: str, what: str, *, negative: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TraceError(f"{source}: {what} is not a number of seconds")
    try:
        seconds = float(value)
    except OverflowError:
        raise TraceError(f"{source}: {what} is too large for a time") from None
    if not math.isfinite(seconds) or (seconds < 0 and not negative):
        raise TraceError(f"{source}: {what} is {seconds!r}, not a finite time >= 0")
    return seconds


def _step_from_dict(data: object, source: str) -> RankStep:
    if not isinstance(data, Mapping) or not _is_int(data.get("index")):
        raise TraceError(f"{source}: a step of the rank summary has no integer index")
    cats = data.get("category_s")
    colls = data.get("collectives")
    if not isinstance(cats, Mapping) or not isinstance(colls, list):
        raise TraceError(f"{source}: step {data['index']}: category_s or collectives missing")
    bad = [c for c in colls if not (isinstance(c, list | tuple) and len(c) == 2)]
    if bad:
        raise TraceError(f"{source}: step {data['index']}: a collective is not [offset, duration]")
    return RankStep(
        index=data["index"],
        wall_s=_seconds(data.get("wall_s"), source, "wall_s"),
        idle_s=_seconds(data.get("idle_s"), source, "idle_s"),
        category_s=tuple(
            (c, _seconds(cats[c], source, f"category_s.{c}")) for c in CATEGORIES if c in cats
        ),
        collectives=tuple(
            (_seconds(o, source, "offset_s", negative=True), _seconds(d, source, "duration_s"))
            for o, d in colls
        ),
    )


def rank_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The trace files directly in ``folder`` (``.json``, ``.json.gz``, ``.sqlite``, ``.db``).

    Hidden files (a writer's temporary ``.name.xyz``) are skipped; sub-folders are not read.

    Raises:
        TraceError: ``folder`` is not a folder, or holds no trace file.
    """
    p = Path(folder)
    if not p.is_dir():
        raise TraceError(f"{p}: not a folder of rank traces")
    files = sorted(
        f for f in p.iterdir() if not f.name.startswith(".") and _SUFFIXES.search(f.name)
    )
    if not files:
        raise TraceError(f"{p}: holds no trace file (.json, .json.gz, .sqlite)")
    return files


def summarize_rank(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> RankSummary:
    """Read one rank's trace and reduce it (the run itself is dropped on return).

    Args:
        path: The rank's trace (Kineto JSON/.gz or Nsight Systems SQLite).
        max_bytes: Largest trace accepted, bytes.

    Raises:
        TraceError: One line naming the file: unreadable, or no ``distributedInfo.rank``.
    """
    p = check_trace_file(path, max_bytes)
    reader = read_nsys if sniff(p) == "nsys" else read_kineto
    return reduce_run(reader(p, max_bytes=max_bytes))


def reduce_run(run: MeasuredRun) -> RankSummary:
    """A measured run of one rank as a :class:`RankSummary` (see the module doc).

    Raises:
        TraceError: The run's rank is unknown (no ``distributedInfo.rank``) or it has no step.
    """
    rank = _int_tag(run, "rank")
    if rank is None:
        raise TraceError(f"{run.source}: its rank is unknown (no distributedInfo.rank)")
    by_step: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    colls: dict[int, list[tuple[float, float]]] = defaultdict(list)
    starts = {it.index: it.start_s for it in run.iterations}
    for k in run.kernels:
        i = k.iteration
        if i is None or i not in starts:
            continue
        by_step[i][k.category] += k.duration_s
        if k.category == "collective" and k.kind == "kernel":
            colls[i].append((k.start_s - (starts[i] or 0.0), k.duration_s))
    steps = tuple(
        RankStep(
            index=it.index,
            wall_s=it.wall_s,
            idle_s=it.gap_s,
            category_s=tuple(
                (c, by_step[it.index][c]) for c in CATEGORIES if c in by_step[it.index]
            ),
            collectives=tuple(sorted(colls[it.index])),
        )
        for it in sorted(run.iterations, key=lambda it: it.index)
    )
    rb = temporal_breakdown(run)
    breakdown = {k: (getattr(rb[0], k) if rb else 0.0) for k in _BREAKDOWN_KEYS}
    return RankSummary(
        source=run.source,
        rank=rank,
        world_size=_int_tag(run, "world_size"),
        backend=run.tag("backend"),
        device=run.tag("device"),
        steps=steps,
        breakdown=tuple(breakdown.items()),
        warnings=run.warnings,
    )


def _int_tag(run: MeasuredRun, name: str) -> int | None:
    value = run.tag(name)
    return int(value) if value.isdigit() else None


def check_one_job(summaries: Sequence[RankSummary]) -> None:
    """Refuse summaries that are not one job: mixed world sizes or backends, a rank twice.

    Raises:
        TraceError: One line giving the reason and the files.
    """
    worlds = {s.world_size for s in summaries}
    if len(worlds) > 1:
        shown = ", ".join(f"{Path(s.source).name}: {s.world_size}" for s in summaries)
        raise TraceError(f"not one job: the traces give different world sizes ({shown})")
    backends = {s.backend for s in summaries}
    if len(backends) > 1:
        shown = ", ".join(f"{Path(s.source).name}: {s.backend}" for s in summaries)
        raise TraceError(f"not one job: the traces give different backends ({shown})")
    seen: dict[int, str] = {}
    for s in summaries:
        if s.rank in seen:
            raise TraceError(f"not one job: rank {s.rank} is in {seen[s.rank]} and {s.source}")
        seen[s.rank] = s.source
    world = worlds.pop()
    if world is not None:
        outside = sorted(s.rank for s in summaries if not 0 <= s.rank < world)
        if outside:
            raise TraceError(f"not one job: rank(s) {outside} outside world size {world}")
