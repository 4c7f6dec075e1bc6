"""Design-space sweeps (hardware x model x phase x batch x sequence x dtype), resumable.

Points run on a local process pool (``concurrent.futures``, spawn start method) by default, in
this process with ``workers=1``, or on a Dask distributed cluster given a scheduler address or a
``distributed.Client`` (Dask is imported only then). Results go to a JSON-lines file as they
finish: a header line ``{"schema_version": 1, "kind": "workbench-sweep"}``, then one line per point
``{"key": ..., "point": {...}, "result": {...}}``, flushed and fsync'd after each. A rerun reads
the file, skips the keys already done and appends the rest; a truncated last line (an interrupted
write) is dropped with a warning; a foreign or newer file is refused.
"""

from __future__ import annotations

import functools
import itertools
import json
import multiprocessing
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

__all__ = [
    "SWEEP_SCHEMA_VERSION",
    "SweepPoint",
    "SweepSummary",
    "evaluate_point",
    "grid",
    "read_results",
    "run_sweep",
]

SWEEP_SCHEMA_VERSION = 1
_KIND = "workbench-sweep"


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


def evaluate_point(point: dict[str, Any]) -> dict[str, Any]:
    """Map one design point (a :class:`SweepPoint` as a dict) and return its figures.

    Top-level and plain-data in and out, so process pools and Dask can ship it.

    Returns:
        ``{"key", "point", "result"}``; result has time_s, mfu, tokens_per_s, energy_j,
        perf_per_watt and the most common bottleneck class, or ``error`` (one line) when the
        point cannot be mapped (e.g. a dtype the platform lacks).
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
        result = {"error": str(exc).splitlines()[0]}
    return {"key": p.key, "point": asdict(p), "result": result}


def read_results(path: str | Path) -> tuple[dict[str, Any], ...]:
    """Read a results file's point lines (header checked; a truncated last line is skipped)."""
    records, _ = _read(Path(path))
    return tuple(records)


def _read(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Records and the byte length of the file's good prefix."""
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    lines = data.split(b"\n")
    records: list[dict[str, Any]] = []
    good = 0
    offset = 0
    for i, raw in enumerate(lines):
        end = offset + len(raw) + 1
        complete = i < len(lines) - 1
        if not raw.strip():
            offset = end
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            obj = None
        if i == 0 and obj is not None and complete:
            if not isinstance(obj, dict) or obj.get("kind") != _KIND:
                raise WorkbenchError(f"{path}: not a workbench sweep file (bad header)")
            version = obj.get("schema_version")
            if not isinstance(version, int) or version > SWEEP_SCHEMA_VERSION:
                raise WorkbenchError(f"{path}: schema_version {version} is newer than supported")
            good = end
        elif not complete or obj is None or not isinstance(obj, dict) or "key" not in obj:
            if complete:
                raise WorkbenchError(f"{path}: line {i + 1} is not a sweep record")
            warnings.warn(f"{path}: ignoring a truncated last line", stacklevel=3)
            break
        else:
            records.append(obj)
            good = end
        offset = end
    if good == 0 and data.strip():
        raise WorkbenchError(f"{path}: not a workbench sweep file (no header)")
    return records, good


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSummary:
    """What a run did.

    Attributes:
        total: Points in the sweep.
        skipped: Points already in the file (resumed).
        done: Points evaluated and written by this run.
        backend: ``"inline"``, ``"process-pool"`` or ``"dask"``.
    """

    total: int
    skipped: int
    done: int
    backend: str


def evaluate_points(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evaluate a chunk of points in one task (one worker's mapper caches serve them all)."""
    return [evaluate_point(p) for p in points]


def _chunks(todo: list[dict[str, Any]], workers: int) -> list[list[dict[str, Any]]]:
    """Split points into tasks of similar points, several per worker.

    Points are sorted by hardware, model, format and phase first, so a task's kernels hit the
    schedules its worker cached for the previous points; a few tasks per worker keep the load
    balanced and the results file growing steadily.
    """
    ordered = sorted(todo, key=lambda p: (p["hardware"], p["model"], p["dtype"], p["phase"]))
    size = max(1, min(25, -(-len(ordered) // (4 * max(workers, 1)))))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def _pool_results(todo: list[dict[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(evaluate_points, c) for c in _chunks(todo, workers)]
        try:
            for fut in as_completed(futures):
                yield from fut.result()
        finally:
            for fut in futures:
                fut.cancel()


#: Seconds to wait for a Dask scheduler before giving up with one line.
SCHEDULER_TIMEOUT_S = 10


def _dask_results(todo: list[dict[str, Any]], scheduler: Any) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as exc:  # pragma: no cover - dask is a test dependency
        raise WorkbenchError("sweep: --scheduler needs dask[distributed] installed") from exc
    own = isinstance(scheduler, str)
    try:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S) if own else scheduler
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise WorkbenchError(f"--scheduler {scheduler}: cannot connect ({why})") from None
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        futures = client.map(evaluate_points, _chunks(todo, workers), pure=False)
        try:
            for fut in dask_completed(futures):
                yield from fut.result()
        finally:
            client.cancel(futures)
    finally:
        if own:
            client.close()


def run_sweep(
    points: Iterable[SweepPoint],
    out: str | Path,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    limit: int | None = None,
) -> SweepSummary:
    """Evaluate the points not yet in ``out``, appending one line per finished point.

    Args:
        points: Design points.
        out: Results file (JSON lines; created with a header if absent).
        workers: Local processes (None: CPU count; 1: run in this process).
        scheduler: Dask scheduler address (``"tcp://host:8786"``) or a ``distributed.Client``;
            None for the local pool.
        limit: Stop after this many new points (for tests and partial runs).

    Returns:
        The :class:`SweepSummary`.
    """
    path = Path(out)
    if not path.parent.exists():
        raise WorkbenchError(f"--out {out}: folder {path.parent} does not exist")
    pts = list(points)
    records, good = _read(path)
    done_keys = {r["key"] for r in records}
    todo = list({p.key: asdict(p) for p in pts if p.key not in done_keys}.values())
    if limit is not None and workers == 1 and scheduler is None:
        todo = todo[: max(0, limit)]
    if scheduler is not None:
        backend, results = "dask", _dask_results(todo, scheduler)
    elif workers == 1:
        backend, results = "inline", (evaluate_point(p) for p in todo)
    else:
        backend = "process-pool"
        results = _pool_results(todo, workers or os.cpu_count() or 1) if todo else iter(())
    with path.open("r+b" if path.exists() else "wb") as fh:
        fh.truncate(good)
        fh.seek(good)
        if good == 0:
            header = {"schema_version": SWEEP_SCHEMA_VERSION, "kind": _KIND}
            fh.write(json.dumps(header).encode() + b"\n")
        n = 0
        for rec in results:
            fh.write(json.dumps(rec, sort_keys=True).encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
            n += 1
            if limit is not None and n >= limit:
                break
        if hasattr(results, "close"):
            results.close()
    skipped = sum(1 for p in pts if p.key in done_keys)
    return SweepSummary(total=len(pts), skipped=skipped, done=n, backend=backend)
