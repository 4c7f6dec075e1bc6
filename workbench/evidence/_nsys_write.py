"""Write an nsys-style SQLite export (tests, lessons): the tables :mod:`.nsys` reads.

Times are written in nanoseconds and names as ids into ``StringIds``, as ``nsys export --type
sqlite`` does; see :mod:`workbench.evidence.nsys` for the schema.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.evidence._source import atomic_path
from workbench.evidence.run import MeasuredKernel
from workbench.evidence.timeline import derive_step_windows

__all__ = ["COPY_KIND", "KERNEL", "MEMCPY", "MEMSET", "RUNTIME", "write_nsys_sqlite"]

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
#: CUpti_ActivityMemcpyKind values (CUPTI documentation) -> the name nsys shows.
COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
              8: "DtoD", 9: "HtoH", 10: "PtoP"}  # fmt: skip


def write_nsys_sqlite(
    path: str | os.PathLike[str],
    kernels: Sequence[MeasuredKernel],
    *,
    iterations: Sequence[tuple[int, float, float]] | None = None,
    gpus: Sequence[Mapping[str, Any]] = (),
    metadata: Mapping[str, str] | None = None,
    omit_tables: Sequence[str] = (),
    launch_lead_s: float = 5e-6,
) -> Path:
    """Write ``kernels`` as an nsys-style SQLite export that :func:`read_nsys` reads (tests).

    Args:
        path: Where to write (atomically).
        kernels: The activities.
        iterations: ``(index, start_s, end_s)`` NVTX ``ProfilerStep#N`` ranges; by default one per
            ``kernel.iteration`` value.
        gpus: ``TARGET_INFO_GPU`` rows (``id``, ``name``, ``smCount``).
        metadata: ``META_DATA_CAPTURE`` name/value rows (``CUDA driver version``...).
        omit_tables: Tables to leave out (to test a reader against partial exports).
        launch_lead_s: How long before each kernel its runtime launch starts, s.

    Returns:
        The path written.
    """
    if iterations is None:
        windows = derive_step_windows(kernels, launch_lead_s)
    else:
        windows = list(iterations)
    with atomic_path(path) as tmp:
        db = sqlite3.connect(tmp)
        try:
            _fill_db(db, kernels, windows, gpus, metadata or {}, launch_lead_s)
            for table in omit_tables:
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.commit()
        finally:
            db.close()
    return Path(path)


def _fill_db(
    db: sqlite3.Connection,
    kernels: Sequence[MeasuredKernel],
    windows: Sequence[tuple[int, float, float]],
    gpus: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, str],
    lead_s: float,
) -> None:
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        f"CREATE TABLE {KERNEL} (start INT, end INT, deviceId INT, contextId INT, streamId INT,"
        " correlationId INT, demangledName INT, shortName INT, gridX INT, gridY INT, gridZ INT,"
        " blockX INT, blockY INT, blockZ INT, registersPerThread INT, staticSharedMemory INT,"
        " dynamicSharedMemory INT);"
        f"CREATE TABLE {MEMCPY} (start INT, end INT, deviceId INT, streamId INT,"
        " correlationId INT, bytes INT, copyKind INT);"
        f"CREATE TABLE {MEMSET} (start INT, end INT, deviceId INT, streamId INT,"
        " correlationId INT, bytes INT);"
        f"CREATE TABLE {RUNTIME} (start INT, end INT, correlationId INT, nameId INT);"
        "CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT);"
        "CREATE TABLE TARGET_INFO_GPU (id INT, name TEXT, smCount INT);"
        "CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);"
    )
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
        return strings[text]

    ns = lambda t: round(t * 1e9)  # noqa: E731
    for n, k in enumerate(kernels):
        corr = k.correlation if k.correlation is not None else n + 1
        start, end = ns(k.start_s), ns(k.end_s)
        launch = "cudaLaunchKernel" if k.kind == "kernel" else f"cuda{k.kind.title()}Async"
        db.execute(
            f"INSERT INTO {RUNTIME} VALUES (?, ?, ?, ?)",
            (ns(k.start_s - lead_s), ns(k.start_s - lead_s / 2), corr, sid(launch)),
        )
        if k.kind == "kernel":
            g, b = k.grid or (None,) * 3, k.block or (None,) * 3
            db.execute(
                f"INSERT INTO {KERNEL} VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (start, end, k.device or 0, 1, k.stream or 7, corr, sid(k.name), sid(k.name[:40]),
                 *g, *b, k.registers_per_thread, k.shared_memory_bytes, 0),
            )  # fmt: skip
        elif k.kind == "memcpy":
            db.execute(
                f"INSERT INTO {MEMCPY} VALUES (?,?,?,?,?,?,?)",
                (start, end, k.device or 0, k.stream or 7, corr, k.bytes, _copy_kind(k.name)),
            )
        else:
            db.execute(
                f"INSERT INTO {MEMSET} VALUES (?,?,?,?,?,?)",
                (start, end, k.device or 0, k.stream or 7, corr, k.bytes),
            )
    for index, start_s, end_s in windows:
        db.execute(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, NULL)",
            (ns(start_s), ns(end_s), f"ProfilerStep#{index}"),
        )
    for gpu in gpus:
        db.execute(
            "INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?)",
            (gpu.get("id", 0), gpu.get("name"), gpu.get("smCount")),
        )
    for name, value in metadata.items():
        db.execute("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)", (name, value))


def _copy_kind(name: str) -> int:
    """The CUpti_ActivityMemcpyKind a copy's name states (``Memcpy DtoH`` -> 2); HtoD if none."""
    return next((kind for kind, text in COPY_KIND.items() if text in name), 1)
