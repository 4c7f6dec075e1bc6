"""Read (and, for tests and lessons, write) an Nsight Systems SQLite export.

``nsys export --type sqlite`` writes one table per data type (NVIDIA, *SQLite Export Schema
Reference*); times are nanoseconds and names are ids into ``StringIds(id, value)``:

- ``CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, demangledName,
  shortName, gridX..Z, blockX..Z, registersPerThread, staticSharedMemory, dynamicSharedMemory)``
- ``CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId, bytes, copyKind)``
  and ``CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, correlationId, bytes)``
- ``CUPTI_ACTIVITY_KIND_RUNTIME(start, end, correlationId, nameId)``: the launches
- ``NVTX_EVENTS(start, end, text, textId)``: ranges such as ``ProfilerStep#N`` mark iterations
  (failing those, ``step N`` / ``iteration N``, then a benchmark's ``[param|...|measure|...]``
  ranges; or the ranges named by ``step_range=``)
- ``TARGET_INFO_GPU(id, name, smCount...)`` and name/value tables (``META_DATA_CAPTURE``,
  ``META_DATA_EXPORT``, ``TARGET_INFO_SYSTEM_ENV``) for the device and versions, where present.

Tables are created lazily by nsys, so only the kernel table and ``StringIds`` are required. The
database is opened read-only and rows are streamed from the cursor.

Iterations are built as for a Kineto trace (:mod:`workbench.evidence._assemble`): an activity
belongs to the step whose NVTX range holds its runtime launch (by ``correlationId``), and step N's
GPU window runs from its first GPU activity to step N+1's, so windows never overlap even when the
GPU lags the host.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from workbench.evidence._assemble import (
    LAUNCH_CALLS,
    UNNUMBERED,
    Activity,
    assemble,
    choose_steps,
    is_measure_range,
    step_index,
)
from workbench.evidence._bounds import check_interval, check_span, clean_name, shown
from workbench.evidence._nsys_write import (
    COPY_KIND,
    KERNEL,
    MEMCPY,
    MEMSET,
    RUNTIME,
    write_nsys_sqlite,
)
from workbench.evidence._source import DEFAULT_MAX_BYTES, check_trace_file
from workbench.evidence.run import MeasuredRun, TraceError
from workbench.evidence.timeline import StepWindows

__all__ = ["read_nsys", "write_nsys_sqlite"]

_KV_TABLES = ("META_DATA_CAPTURE", "META_DATA_EXPORT", "TARGET_INFO_SYSTEM_ENV")
#: Nsight Systems names runtime calls with their API version (``cudaLaunchKernel_v7000``).
_VERSION_SUFFIX = re.compile(r"_v\d+$")


def read_nsys(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    step_range: str | None = None,
) -> MeasuredRun:
    """Read an Nsight Systems SQLite export into a measured run (``format="nsys"``).

    Args:
        path: The export (``nsys export --type sqlite``).
        max_bytes: Largest file accepted, bytes.
        step_range: The name of the NVTX range that marks one iteration (``train_step``; also
            ``train_step 3`` / ``train_step#3``, whose number is then the step's index). None: the
            ``ProfilerStep#N`` / ``step N`` / ``iteration N`` / ``[param|...|measure|...]``
            ranges, in that order of preference.

    Raises:
        TraceError: One line naming the file, what is wrong and where (table, row).
    """
    p = check_trace_file(path, max_bytes)
    try:
        db = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TraceError(f"{p}: cannot open as SQLite ({exc})") from None
    try:
        return _read(db, str(p), step_range)
    except sqlite3.Error as exc:
        raise TraceError(f"{p}: not a readable SQLite export (truncated or corrupt: {exc})") from (
            None
        )
    finally:
        db.close()


def _read(db: sqlite3.Connection, where: str, step_range: str | None) -> MeasuredRun:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for required in ("StringIds", KERNEL):
        if required not in tables:
            raise TraceError(
                f"{where}: missing table {required} (not an nsys SQLite export with CUDA "
                "kernel trace)"
            )
    activities = list(_kernels(db, where, _columns(db, KERNEL)))
    for table, kind in ((MEMCPY, "memcpy"), (MEMSET, "memset")):
        if table in tables:
            activities.extend(_copies(db, where, table, kind, _columns(db, table)))
    launch_s: dict[int, float] = {}
    launch_dur_s: dict[int, float] = {}
    if RUNTIME in tables:
        _launches(db, where, launch_s, launch_dur_s)
    if step_range is not None:
        windows = _named_steps(db, where, tables, step_range)
    else:
        windows = choose_steps(_steps(db, where)) if "NVTX_EVENTS" in tables else []
    check_span(where, [(a.where, a.start_s, a.start_s + a.duration_s) for a in activities])
    return assemble(
        source=where,
        fmt="nsys",
        activities=activities,
        launch_s=launch_s,
        launch_dur_s=launch_dur_s,
        cpu_steps=StepWindows(windows),
        gpu_steps=StepWindows(()),
        tags=_tags(db, tables, {a.device for a in activities}),
        rank=None,
    )


def _launches(
    db: sqlite3.Connection, where: str, launch_s: dict[int, float], dur_s: dict[int, float]
) -> None:
    """Read the runtime table's call starts and launch-call durations (by correlation id, s).

    ``launch_s`` gets every call's start; ``dur_s`` the duration of the launch calls
    (:data:`LAUNCH_CALLS`, with Nsight Systems' ``_v7000``-like suffix dropped).
    """
    cols = _columns(db, RUNTIME)
    _need(where, RUNTIME, cols, ("start", "correlationId"))
    query = f"SELECT start, correlationId, NULL, NULL FROM {RUNTIME}"
    if {"end", "nameId"} <= cols:
        query = (
            f"SELECT r.start, r.correlationId, r.end, s.value FROM {RUNTIME} AS r "
            "LEFT JOIN StringIds AS s ON s.id = r.nameId"
        )
    for start, corr, end, name in db.execute(query):
        if isinstance(start, int) and isinstance(corr, int):
            launch_s[corr] = start * 1e-9
            if (
                isinstance(end, int)
                and end >= start
                and isinstance(name, str)
                and _VERSION_SUFFIX.sub("", name) in LAUNCH_CALLS
            ):
                dur_s[corr] = (end - start) * 1e-9


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _need(where: str, table: str, have: set[str], cols: Sequence[str]) -> None:
    for c in cols:
        if c not in have:
            raise TraceError(f"{where}: table {table} has no column {c!r} (unknown schema)")


def _times(where: str, table: str, rowid: int, start: Any, end: Any) -> tuple[float, float]:
    if not (isinstance(start, int) and isinstance(end, int)):
        raise TraceError(f"{where}: {table} row {rowid} has a non-integer start/end")
    if end < start:
        raise TraceError(
            f"{where}: clock skew in {table} row {rowid}: end {end} ns is before start {start} ns"
        )
    check_interval(where, f"{table} row {rowid}", start * 1e-9, (end - start) * 1e-9)
    return start * 1e-9, (end - start) * 1e-9


def _int(value: Any) -> int | None:
    """An integer column's value, or None for NULL or anything else a damaged export holds."""
    return value if isinstance(value, int) else None


def _opt(cols: set[str], name: str) -> str:
    return name if name in cols else "NULL"


def _kernels(db: sqlite3.Connection, where: str, cols: set[str]) -> Iterator[Activity]:
    _need(where, KERNEL, cols, ("start", "end", "deviceId", "streamId", "correlationId"))
    name_col = next((c for c in ("demangledName", "shortName", "mangledName") if c in cols), None)
    if name_col is None:
        raise TraceError(f"{where}: table {KERNEL} has no kernel-name column (demangledName)")
    dim_cols = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
    dims = ", ".join(_opt(cols, c) for c in dim_cols)
    smem = " + ".join(c for c in ("staticSharedMemory", "dynamicSharedMemory") if c in cols)
    query = (
        f"SELECT k.rowid, k.start, k.end, k.deviceId, k.streamId, k.correlationId, s.value, "
        f"{dims}, {_opt(cols, 'registersPerThread')}, {smem or 'NULL'} "
        f"FROM {KERNEL} AS k LEFT JOIN StringIds AS s ON s.id = k.{name_col}"
    )
    for row in db.execute(query):
        rowid, start, end, device, stream, corr, name = row[:7]
        start_s, dur_s = _times(where, KERNEL, rowid, start, end)
        if not isinstance(name, str):
            raise TraceError(f"{where}: {KERNEL} row {rowid}: name id not in StringIds")
        g, b = row[7:10], row[10:13]
        yield Activity(
            name=clean_name(name),
            kind="kernel",
            start_s=start_s,
            duration_s=dur_s,
            device=_int(device),
            stream=_int(stream),
            correlation=_int(corr),
            grid=(g[0], g[1], g[2]) if all(isinstance(x, int) for x in g) else None,
            block=(b[0], b[1], b[2]) if all(isinstance(x, int) for x in b) else None,
            registers_per_thread=row[13] if isinstance(row[13], int) else None,
            shared_memory_bytes=row[14] if isinstance(row[14], int) else None,
            bytes=None,
            where=f"{KERNEL} row {rowid}",
        )


def _copies(
    db: sqlite3.Connection, where: str, table: str, kind: str, cols: set[str]
) -> Iterator[Activity]:
    _need(where, table, cols, ("start", "end", "deviceId", "streamId"))
    query = (
        f"SELECT rowid, start, end, deviceId, streamId, {_opt(cols, 'correlationId')}, "
        f"{_opt(cols, 'bytes')}, {_opt(cols, 'copyKind')} FROM {table}"
    )
    for rowid, start, end, device, stream, corr, nbytes, copy_kind in db.execute(query):
        start_s, dur_s = _times(where, table, rowid, start, end)
        name = f"Memcpy {COPY_KIND.get(copy_kind, '?')}" if kind == "memcpy" else "Memset"
        yield Activity(
            name=name,
            kind=kind,
            start_s=start_s,
            duration_s=dur_s,
            device=_int(device),
            stream=_int(stream),
            correlation=_int(corr),
            grid=None,
            block=None,
            registers_per_thread=None,
            shared_memory_bytes=None,
            bytes=nbytes if isinstance(nbytes, int) else None,
            where=f"{table} row {rowid}",
        )


def _nvtx_ranges(db: sqlite3.Connection, where: str) -> Iterator[tuple[str, float, float]]:
    """``(name, start_s, end_s)`` of every named NVTX range (marks and open ranges skipped)."""
    cols = _columns(db, "NVTX_EVENTS")
    _need(where, "NVTX_EVENTS", cols, ("start", "end"))
    text = "n.text" if "text" in cols else "NULL"
    join = "LEFT JOIN StringIds AS s ON s.id = n.textId" if "textId" in cols else ""
    value = "s.value" if join else "NULL"
    for start, end, t, v in db.execute(
        f"SELECT n.start, n.end, {text}, {value} FROM NVTX_EVENTS AS n {join}"
    ):
        name = t if t is not None else v
        ok = isinstance(name, str) and isinstance(start, int) and isinstance(end, int)
        if ok and end >= start:
            yield name, start * 1e-9, end * 1e-9


def _steps(db: sqlite3.Connection, where: str) -> list[tuple[str, int, float, float]]:
    steps = []
    for name, start_s, end_s in _nvtx_ranges(db, where):
        index = step_index(name)
        if index is None and is_measure_range(name):
            index = UNNUMBERED
        if index is not None:
            steps.append((name, index, start_s, end_s))
    return steps


def _named_steps(
    db: sqlite3.Connection, where: str, tables: set[str], step_range: str
) -> list[tuple[int, float, float]]:
    """``(index, start_s, end_s)`` of the ranges named ``step_range`` (optionally numbered).

    Numbered when every range carries a number (``train_step 3``), else 0, 1... in time order.
    """
    wanted = step_range.strip()
    if not wanted:
        raise TraceError(f"{where}: the step range name is empty")
    if "NVTX_EVENTS" not in tables:
        raise TraceError(
            f"{where}: no NVTX_EVENTS table, so no range named {shown(wanted)} "
            "(was nsys run with --trace=nvtx?)"
        )
    pattern = re.compile(rf"\s*{re.escape(wanted)}(?:[ _#:]?(\d+))?\s*")
    found: list[tuple[float, float, int | None]] = []
    others: dict[str, int] = {}
    for name, start_s, end_s in _nvtx_ranges(db, where):
        m = pattern.fullmatch(name)
        if m:
            found.append((start_s, end_s, int(m.group(1)) if m.group(1) else None))
        elif len(others) < 10_000:
            others[name] = others.get(name, 0) + 1
    if not found:
        common = sorted(others, key=lambda n: -others[n])[:5]
        seen = ", ".join(shown(n, 40) for n in common) or "none"
        raise TraceError(
            f"{where}: no NVTX range named {shown(wanted)} (most frequent ranges: {seen})"
        )
    found.sort()
    if all(n is not None for _, _, n in found) and len({n for _, _, n in found}) == len(found):
        return [(n, s, e) for s, e, n in found if n is not None]
    return [(i, s, e) for i, (s, e, _) in enumerate(found)]


def _tags(
    db: sqlite3.Connection, tables: set[str], devices: set[int | None]
) -> tuple[tuple[str, str], ...]:
    names: list[str] = []
    sms: list[str] = []
    if "TARGET_INFO_GPU" in tables:
        cols = _columns(db, "TARGET_INFO_GPU")
        if "name" in cols:
            ident = "id" if "id" in cols else "NULL"
            sm = "smCount" if "smCount" in cols else "NULL"
            query = f"SELECT {ident}, name, {sm} FROM TARGET_INFO_GPU"
            for gpu_id, name, count in db.execute(query):
                if gpu_id is None or gpu_id in devices:
                    names.append(clean_name(str(name)))
                    if isinstance(count, int):
                        sms.append(str(count))
    kv = _key_values(db, tables)
    tags = [
        ("device", ", ".join(sorted(set(names))) or "unknown"),
        ("sm_count", ", ".join(sorted(set(sms))) or "unknown"),
        ("driver", _match(kv, ("driver",))),
        ("cuda", _match(kv, ("cuda",), exclude=("driver",))),
        ("framework", _match(kv, ("torch",))),
    ]
    schema = _match(kv, ("export", "schema"))
    tags.append(("trace_schema", "nsys sqlite" if schema == "unknown" else f"nsys sqlite {schema}"))
    return tuple(tags)


def _key_values(db: sqlite3.Connection, tables: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for table in _KV_TABLES:
        if table in tables and {"name", "value"} <= _columns(db, table):
            for name, value in db.execute(f"SELECT name, value FROM {table}"):
                if isinstance(name, str) and value is not None:
                    out.setdefault(name, str(value))
    return out


def _match(kv: Mapping[str, str], words: Sequence[str], exclude: Sequence[str] = ()) -> str:
    """The value of the first version key naming all ``words`` (and none of ``exclude``)."""
    for name, value in kv.items():
        low = name.lower()
        if "version" in low and all(w in low for w in words) and not any(w in low for w in exclude):
            return value
    return "unknown"
