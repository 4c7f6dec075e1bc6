"""One measured run from several ranks' traces (one Kineto or nsys file per rank).

Each rank's clock is its own host's, so statistics are computed per rank (and device) and an
iteration is reported on its busiest rank, the one with the longest step period (see
:mod:`workbench.evidence.timeline`); kernels are never compared across ranks by timestamp. Tags
that agree across ranks keep their value; tags that differ are joined (``"NVIDIA H100, NVIDIA
A100"``) so a mixed fleet is visible, never hidden.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from workbench.evidence._source import DEFAULT_MAX_BYTES, check_trace_file, sniff
from workbench.evidence.kineto import read_kineto
from workbench.evidence.nsys import read_nsys
from workbench.evidence.run import IterationStats, MeasuredRun, TraceError

__all__ = ["merge_runs", "read_rank_traces"]


def merge_runs(runs: Sequence[MeasuredRun]) -> MeasuredRun:
    """Merge per-rank runs of one job into one run.

    Args:
        runs: One run per rank, each with its rank known (``distributedInfo`` in Kineto traces).

    Returns:
        The merged run: every kernel, iterations over all ranks.

    Raises:
        TraceError: Fewer than one run, mixed formats, or a rank unknown or repeated.
    """
    if not runs:
        raise TraceError("merge: no runs given")
    if len(runs) == 1:
        return runs[0]
    formats = {r.format for r in runs}
    if len(formats) > 1:
        raise TraceError(f"merge: mixed trace formats {sorted(formats)}")
    seen: dict[int, str] = {}
    for run in runs:
        ranks = {k.rank for k in run.kernels}
        if None in ranks or len(ranks) != 1:
            raise TraceError(f"{run.source}: its rank is unknown (no distributedInfo.rank)")
        rank = ranks.pop()
        assert rank is not None
        if rank in seen:
            raise TraceError(f"{run.source}: rank {rank} again (also in {seen[rank]})")
        seen[rank] = run.source
    kernels = tuple(k for run in runs for k in run.kernels)
    best: dict[int, IterationStats] = {}
    for run in runs:
        for it in run.iterations:
            if it.index not in best or it.wall_s > best[it.index].wall_s:
                best[it.index] = it
    return MeasuredRun(
        source=" + ".join(r.source for r in runs),
        format=runs[0].format,
        tags=_merged_tags(runs),
        kernels=kernels,
        iterations=tuple(best[i] for i in sorted(best)),
        steps_annotated=all(r.steps_annotated for r in runs),
        warnings=tuple(f"{r.source}: {w}" for r in runs for w in r.warnings),
    )


def _merged_tags(runs: Sequence[MeasuredRun]) -> tuple[tuple[str, str], ...]:
    names = list(dict.fromkeys(name for r in runs for name, _ in r.tags))
    out = []
    for name in names:
        if name == "rank":
            out.append(("rank", ", ".join(sorted({r.tag("rank") for r in runs}, key=_rank_key))))
            continue
        values = list(dict.fromkeys(r.tag(name) for r in runs))
        out.append((name, ", ".join(values)))
    return tuple(out)


def _rank_key(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def read_rank_traces(
    paths: Sequence[str | os.PathLike[str]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> MeasuredRun:
    """Read one trace per rank and merge them (see :func:`merge_runs`)."""
    runs = []
    for path in paths:
        p = check_trace_file(path, max_bytes)
        reader = read_nsys if sniff(p) == "nsys" else read_kineto
        runs.append(reader(p, max_bytes=max_bytes))
    return merge_runs(runs)
