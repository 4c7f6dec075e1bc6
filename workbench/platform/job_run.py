"""Where a job folder's ranks are reduced: this process, local processes, or a Dask cluster.

Each rank's trace is read and reduced on its own (:func:`workbench.evidence.job.summarize_rank`,
memory: one rank at a time per worker) and only its small summary comes back, as a JSON-safe dict;
:func:`workbench.evidence.stragglers.combine_ranks` then combines them here. The backends are the
ones ``workbench sweep`` uses (:mod:`workbench.platform._sweep_run`): ``workers=1`` runs in this
process, ``workers=N`` on a spawn process pool that leaves nothing running behind it, and
``scheduler=ADDRESS`` (or a ``distributed.Client``) maps the ranks over a Dask cluster, contacted
with an explicit timeout. A progress bar (tqdm, on stderr) counts the ranks.

A rank whose file cannot be read (malformed, truncated, not a trace, no rank in it) or whose task
failed (a worker killed) is left out with one line naming the file; the other ranks are still
combined. When no rank can be read, or the ranks are not one job, the folder is refused.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench.evidence import DEFAULT_MAX_BYTES, TraceError
from workbench.evidence.job import RankSummary, rank_files, summarize_rank
from workbench.evidence.stragglers import JobSummary, combine_ranks
from workbench.platform._sweep_run import (
    dask_client,
    dask_results,
    interrupts_raise,
    pool_results,
)

__all__ = ["read_job", "summarize_chunk"]


def summarize_chunk(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reduce each rank file of ``chunk`` (``{"path", "max_bytes"}``) to a summary or an error.

    Runs on a worker (a spawned process or a Dask worker): it returns plain dicts only.
    """
    out = []
    for point in chunk:
        try:
            summary = summarize_rank(point["path"], max_bytes=point["max_bytes"])
            out.append({"path": point["path"], "summary": summary.to_dict()})
        except (TraceError, OSError, MemoryError) as exc:
            out.append({"path": point["path"], "error": str(exc).splitlines()[0]})
    return out


def _failed(point: dict[str, Any], reason: str) -> dict[str, Any]:
    return {"path": point["path"], "error": f"{point['path']}: {reason}"}


def _results(
    chunks: list[list[dict[str, Any]]],
    workers: int | None,
    scheduler: Any,
    connect_timeout_s: float,
    stack: contextlib.ExitStack,
) -> tuple[str, Iterator[dict[str, Any]]]:
    """The backend's name and its records; cleanups (client, pool) go on ``stack``."""
    if scheduler is not None:
        client = dask_client(scheduler, connect_timeout_s, stack)
        backend, results = "dask", dask_results(chunks, client, summarize_chunk, _failed)
    elif workers == 1 or len(chunks) < 2:
        backend = "inline"
        results = (rec for c in chunks for rec in summarize_chunk(c))
    else:
        n = min(workers or os.cpu_count() or 1, len(chunks))
        backend, results = "process-pool", pool_results(chunks, n, summarize_chunk, _failed)
    close = getattr(results, "close", None)
    if close is not None:
        stack.callback(close)
    return backend, results


def _bar(total: int, progress: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="ranks", unit="rank", file=sys.stderr, disable=not progress,
                leave=False)  # fmt: skip


def read_job(
    folder: str | os.PathLike[str],
    *,
    workers: int | None = 1,
    scheduler: Any = None,
    connect_timeout_s: float = 5.0,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
) -> JobSummary:
    """Read every rank trace in ``folder`` and combine them into one job (module doc).

    Args:
        folder: The job's folder (one trace per rank, directly in it).
        workers: Local processes (1: this process; None: the CPU count).
        scheduler: Dask scheduler address (``"tcp://host:8786"``) or a ``distributed.Client``.
        connect_timeout_s: Seconds to wait for a scheduler address to answer.
        max_bytes: Largest rank trace accepted, bytes.
        progress: Show a progress bar on stderr.

    Returns:
        The job, with the rank files that could not be read in ``skipped``.

    Raises:
        TraceError: Not a folder of traces, no rank readable, or not one job.
        WorkbenchError: An unreachable or malformed scheduler address.
    """
    files = rank_files(folder)
    chunks = [[{"path": str(f), "max_bytes": max_bytes}] for f in files]
    summaries: list[RankSummary] = []
    skipped: list[tuple[str, str]] = []
    with interrupts_raise(), contextlib.ExitStack() as stack:
        _, results = _results(chunks, workers, scheduler, connect_timeout_s, stack)
        bar = stack.enter_context(_bar(len(files), progress))
        for rec in results:
            bar.update(1)
            if "error" in rec:
                skipped.append((rec["path"], rec["error"]))
                continue
            try:
                summaries.append(RankSummary.from_dict(rec["summary"]))
            except TraceError as exc:
                skipped.append((rec["path"], f"{rec['path']}: {exc}"))
    if not summaries:
        why = skipped[0][1] if skipped else "no trace"
        raise TraceError(f"{Path(folder)}: no rank trace could be read (first: {why})")
    skipped.sort()
    return combine_ranks(summaries, skipped=skipped)
