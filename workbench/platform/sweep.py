"""Design-space sweeps (hardware x model x phase x batch x sequence x dtype), resumable.

Points run on a local process pool (``concurrent.futures``, spawn start method) by default, in
this process with ``workers=1``, or on a Dask distributed cluster given a scheduler address or a
``distributed.Client`` (Dask is imported only then). Results go to a JSON-lines file as they
finish, one fsync'd line per point (format: :mod:`workbench.platform._sweep_file`).

A rerun skips the points that are done and retries the ones that failed, up to
:data:`MAX_ATTEMPTS` attempts in all; a truncated last line (an interrupted write) is dropped with
a warning; a foreign or newer file is refused. A run holds an exclusive lock on its results file,
so a second sweep on the same file is refused in one line. A killed sweep leaves no worker
processes behind (:mod:`workbench.platform._sweep_run`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.platform._sweep_file import (
    MAX_ATTEMPTS,
    SWEEP_SCHEMA_VERSION,
    Appender,
    locked,
    read_journal,
)
from workbench.platform._sweep_run import (
    SweepInterrupted,
    dask_client,
    dask_results,
    interrupts_raise,
    pool_results,
)

__all__ = [
    "MAX_ATTEMPTS",
    "SWEEP_SCHEMA_VERSION",
    "SweepInterrupted",
    "SweepPoint",
    "SweepSummary",
    "evaluate_point",
    "grid",
    "read_results",
    "run_sweep",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    """One design point.

    Attributes:
        hardware: Profile name.
        model: Preset name.
        phase: ``"prefill"`` or ``"decode"`` (decode uses ``seq`` as the context).
        batch: Sequences or images.
        seq: Prompt tokens (prefill) or cached tokens (decode).
        dtype: Compute format.
    """

    hardware: str
    model: str
    phase: str
    batch: int
    seq: int
    dtype: str

    @property
    def key(self) -> str:
        """Stable identity of the point in a results file."""
        return f"{self.hardware}|{self.model}|{self.phase}|b{self.batch}|s{self.seq}|{self.dtype}"


def grid(
    hardware: Sequence[str],
    models: Sequence[str],
    *,
    batches: Sequence[int] = (1,),
    seqs: Sequence[int] = (2048,),
    dtypes: Sequence[str] = ("bf16",),
    phases: Sequence[str] = ("prefill",),
) -> tuple[SweepPoint, ...]:
    """The full cartesian product of the axes, hardware outermost."""
    for label, ints in (("batch", batches), ("seq", seqs)):
        if not ints or any(int(v) < 1 for v in ints):
            raise WorkbenchError(f"sweep: --{label} values must be positive integers, got {ints}")
    for label, words in (("hardware", hardware), ("model", models), ("dtype", dtypes),
                         ("phase", phases)):  # fmt: skip
        if not words:
            raise WorkbenchError(f"sweep: give at least one --{label}")
    bad = [p for p in phases if p not in ("prefill", "decode")]
    if bad:
        raise WorkbenchError(f"sweep: --phase must be prefill or decode, got {bad[0]!r}")
    return tuple(
        SweepPoint(hardware=h, model=m, phase=p, batch=int(b), seq=int(s), dtype=d)
        for h, m, p, b, s, d in itertools.product(hardware, models, phases, batches, seqs, dtypes)
    )


@functools.lru_cache(maxsize=32)
def _hardware(name: str) -> Any:
    from workbench.hw.loader import load_hardware

    return load_hardware(name)


def failed_record(point: dict[str, Any], reason: str) -> dict[str, Any]:
    """The record of a point that could not be evaluated (``reason``: one line)."""
    p = SweepPoint(**point)
    why = " ".join(reason.split())[:300] or "unknown error"
    return {"key": p.key, "point": asdict(p), "status": "failed", "result": {"error": why}}


def _check_finite(result: dict[str, Any]) -> str:
    """The first figure that is NaN, infinite or negative, or ``""``."""
    for name, value in result.items():
        if isinstance(value, float) and not (math.isfinite(value) and value >= 0):
            return f"{name} is {value}, not a finite non-negative number"
    return ""


def evaluate_point(point: dict[str, Any]) -> dict[str, Any]:
    """Map one design point (a :class:`SweepPoint` as a dict) and return its record.

    Top-level and plain-data in and out, so process pools and Dask can ship it.

    Returns:
        ``{"key", "point", "status", "result"}``. Done: result has time_s (s), mfu (0..1),
        tokens_per_s, energy_j (J), perf_per_watt (items/J) and the most common bottleneck
        class. Failed (any error: a dtype the platform lacks, a context too short, a bug):
        result is ``{"error": <one line>}``.
    """
    from workbench.mapper import map_model
    from workbench.models import build_graph
    from workbench.options import MapOptions

    p = SweepPoint(**point)
    try:
        ctx = p.seq if p.phase == "decode" else None
        graph = build_graph(p.model, p.phase, batch=p.batch, seq=p.seq, context=ctx, dtype=p.dtype)
        m = map_model(graph, _hardware(p.hardware), MapOptions(dtype=p.dtype))
        counts = m.bottleneck_counts()
        result: dict[str, Any] = {
            "time_s": m.time_s, "mfu": m.mfu, "tokens_per_s": m.tokens_per_s,
            "energy_j": m.energy_j, "perf_per_watt": m.perf_per_watt,
            "bottleneck": max(counts, key=lambda k: counts[k]) if counts else "",
        }  # fmt: skip
    except WorkbenchError as exc:
        return failed_record(point, str(exc))
    except Exception as exc:  # NOTE: recorded (and retried on resume), never marked done
        return failed_record(point, f"{type(exc).__name__}: {exc}")
    bad = _check_finite(result)
    if bad:
        return failed_record(point, f"insane result: {bad}")
    return {"key": p.key, "point": asdict(p), "status": "done", "result": result}


def evaluate_points(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evaluate a chunk of points in one task (one worker's mapper caches serve them all)."""
    return [evaluate_point(p) for p in points]


def read_results(path: str | Path) -> tuple[dict[str, Any], ...]:
    """The latest record of every point in a results file (done, or failed with its reason).

    Each record has ``key``, ``point``, ``status`` (``"done"``/``"failed"``), ``attempt`` and
    ``result``. The header is checked; a truncated last line is skipped with a warning.
    """
    return tuple(read_journal(Path(path)).latest.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSummary:
    """What a run did.

    Attributes:
        total: Points in the sweep.
        skipped: Points already done in the file (resumed).
        done: Points evaluated and written by this run.
        failed: Points that failed in this run (recorded with the reason; retried next run).
        gave_up: Points not tried again: they failed :data:`MAX_ATTEMPTS` times already.
        backend: ``"inline"``, ``"process-pool"`` or ``"dask"``.
    """

    total: int
    skipped: int
    done: int
    backend: str
    failed: int = 0
    gave_up: int = 0


def _chunks(todo: list[dict[str, Any]], workers: int) -> list[list[dict[str, Any]]]:
    """Split points into tasks of similar points, several per worker.

    Points are sorted by hardware, model, format and phase first, so a task's kernels hit the
    schedules its worker cached for the previous points; a few tasks per worker keep the load
    balanced and the results file growing steadily.
    """
    ordered = sorted(todo, key=lambda p: (p["hardware"], p["model"], p["dtype"], p["phase"]))
    size = max(1, min(25, -(-len(ordered) // (4 * max(workers, 1)))))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def _results(
    todo: list[dict[str, Any]],
    workers: int | None,
    scheduler: Any,
    connect_timeout_s: float,
    stack: contextlib.ExitStack,
) -> tuple[str, Iterator[dict[str, Any]]]:
    """The backend's name and its records; cleanups (client, pool) go on ``stack``."""
    if scheduler is not None:
        client = dask_client(scheduler, connect_timeout_s, stack)
        n = max(1, len(client.scheduler_info().get("workers", {})))
        results = dask_results(_chunks(todo, n), client, evaluate_points, failed_record)
        backend = "dask"
    elif workers == 1:
        backend, results = "inline", (evaluate_point(p) for p in todo)
    else:
        n = workers or os.cpu_count() or 1
        chunks = _chunks(todo, n)
        results = pool_results(chunks, n, evaluate_points, failed_record) if todo else iter(())
        backend = "process-pool"
    close = getattr(results, "close", None)
    if close is not None:
        stack.callback(close)  # NOTE: runs before the client's close (LIFO)
    return backend, results


def run_sweep(
    points: Iterable[SweepPoint],
    out: str | Path,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    limit: int | None = None,
    connect_timeout_s: float = 5.0,
) -> SweepSummary:
    """Evaluate the points not yet done in ``out``, appending one line per finished point.

    Args:
        points: Design points.
        out: Results file (JSON lines; created with a header if absent).
        workers: Local processes (None: CPU count; 1: run in this process).
        scheduler: Dask scheduler address (``"tcp://host:8786"``) or a ``distributed.Client``;
            None for the local pool.
        limit: Stop after this many new points (for tests and partial runs).
        connect_timeout_s: Seconds to wait for a Dask scheduler address to answer.

    Returns:
        The :class:`SweepSummary`.

    Raises:
        WorkbenchError: a bad ``out`` (missing folder, not a regular file, foreign, locked by
            another sweep), an unreachable scheduler, a write that fails (disk full).
        SweepInterrupted: SIGINT, SIGTERM or SIGHUP; every finished point is on disk and no
            worker is left running.
    """
    path = Path(out)
    if not path.parent.is_dir():
        raise WorkbenchError(f"--out {out}: folder {path.parent} does not exist")
    if not (connect_timeout_s > 0 and math.isfinite(connect_timeout_s)):
        raise WorkbenchError(f"--connect-timeout must be > 0 seconds, got {connect_timeout_s}")
    pts = list(points)
    with locked(path), interrupts_raise(), contextlib.ExitStack() as stack:
        journal = read_journal(path)
        unique = {p.key: p for p in pts}
        skipped = sum(1 for k in unique if journal.done(k))
        retry = {k for k in unique if journal.attempts.get(k, 0) < MAX_ATTEMPTS}
        todo = [asdict(p) for k, p in unique.items() if not journal.done(k) and k in retry]
        given_up = sum(1 for k in unique if not journal.done(k) and k not in retry)
        if limit is not None and workers == 1 and scheduler is None:
            todo = todo[: max(0, limit)]
        writer = stack.enter_context(Appender(path, journal.good_bytes))
        backend, results = _results(todo, workers, scheduler, connect_timeout_s, stack)
        done = failed = 0
        for rec in results:
            rec["attempt"] = journal.attempts.get(rec["key"], 0) + 1
            writer.append(rec)
            if rec["status"] == "done":
                done += 1
            else:
                failed += 1
            if limit is not None and done + failed >= limit:
                break
    return SweepSummary(
        total=len(pts), skipped=skipped, done=done, failed=failed, gave_up=given_up,
        backend=backend,
    )  # fmt: skip
