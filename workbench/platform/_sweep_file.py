"""A sweep's results file: the exclusive lock, the JSON-lines journal, and resume bookkeeping.

The file is a header line ``{"schema_version": 2, "kind": "workbench-sweep"}`` and then one line
per evaluated point, appended and fsync'd as it finishes::

    {"key": ..., "point": {...}, "status": "done", "attempt": 1, "result": {...}}
    {"key": ..., "point": {...}, "status": "failed", "attempt": 2, "result": {"error": "..."}}

A key may appear several times (failed attempts, then done); the last line for a key is its state.
Version-1 files (no ``status``) are read too: a result with ``error`` is a failed attempt.

While a sweep runs it holds an exclusive ``fcntl.flock`` on a sidecar lock file
(``.<name>.lock`` beside the results), so a second sweep on the same ``--out`` is refused in one
line instead of both appending and one set being lost.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench._files import os_error_reason, read_bounded
from workbench._warn import warn
from workbench.errors import WorkbenchError

try:  # NOTE: POSIX only; elsewhere the file is not locked.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

SWEEP_SCHEMA_VERSION = 2
KIND = "workbench-sweep"
#: Attempts a failing point gets (this run and reruns together) before it is given up.
MAX_ATTEMPTS = 3
#: The largest results file read back (bytes): about three million points.
MAX_FILE_BYTES = 1 << 30


def header_line() -> bytes:
    """The first line of a new results file."""
    return json.dumps({"schema_version": SWEEP_SCHEMA_VERSION, "kind": KIND}).encode() + b"\n"


def lock_path(path: Path) -> Path:
    """The sidecar lock file of results file ``path``."""
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock on ``path``'s sweep for the body; refuse if another sweep holds it.

    Raises:
        WorkbenchError: one line when another process holds the lock or it cannot be created.
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        reason = os_error_reason(exc)
        raise WorkbenchError(f"--out {path}: cannot create lock {lock}: {reason}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            by = f" by process {holder}" if holder.isdigit() else ""
            raise WorkbenchError(
                f"--out {path}: another sweep is writing it (lock {lock} held{by}); "
                "wait for it to finish or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # NOTE: closing the descriptor releases the lock


@dataclass(frozen=True, slots=True, kw_only=True)
class Journal:
    """What a results file holds.

    Attributes:
        latest: The last record of each key, in order of first appearance.
        attempts: Failed attempts per key (keys that are done are not counted).
        good_bytes: Length of the file's valid prefix (a truncated last line is cut off).
    """

    latest: dict[str, dict[str, Any]]
    attempts: dict[str, int]
    good_bytes: int

    def done(self, key: str) -> bool:
        """Whether ``key`` has a result."""
        rec = self.latest.get(key)
        return rec is not None and rec["status"] == "done"


def _status(rec: dict[str, Any]) -> str:
    """``done`` or ``failed``, for version-2 lines and for version-1 lines (no status field)."""
    status = rec.get("status")
    if status is None:
        return "failed" if "error" in rec["result"] else "done"
    return str(status)


def _check_record(obj: object, path: Path, line: int) -> dict[str, Any]:
    """A point line with the fields resume relies on, or one line naming the file and line."""
    ok = (
        isinstance(obj, dict)
        and isinstance(obj.get("key"), str)
        and isinstance(obj.get("point"), dict)
        and isinstance(obj.get("result"), dict)
        and obj.get("status", "done") in ("done", "failed")
    )
    if not ok:
        raise WorkbenchError(f"{path}: line {line} is not a sweep record")
    assert isinstance(obj, dict)
    return obj


def _check_header(obj: object, path: Path) -> None:
    if not isinstance(obj, dict) or obj.get("kind") != KIND:
        raise WorkbenchError(f"{path}: not a workbench sweep file (bad header)")
    version = obj.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise WorkbenchError(f"{path}: not a workbench sweep file (schema_version {version!r})")
    if version > SWEEP_SCHEMA_VERSION:
        raise WorkbenchError(f"{path}: schema_version {version} is newer than supported")


def read_journal(path: Path) -> Journal:
    """Read a results file (header checked; a truncated last line dropped with a warning).

    Raises:
        WorkbenchError: not a regular file, too large, foreign, newer, or a bad line.
    """
    if not os.path.lexists(path):
        return Journal(latest={}, attempts={}, good_bytes=0)
    data = read_bounded(path, MAX_FILE_BYTES, "--out")
    lines = data.split(b"\n")
    latest: dict[str, dict[str, Any]] = {}
    attempts: dict[str, int] = {}
    good = offset = 0
    for i, raw in enumerate(lines):
        end = offset + len(raw) + 1
        complete = i < len(lines) - 1
        offset = end
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            obj = None
        if not complete:
            if good and (obj is not None or raw.strip()):  # NOTE: no header: refused below
                warn(f"{path}: ignoring a truncated last line (an interrupted write)")
            break
        if good == 0:
            if obj is None:
                raise WorkbenchError(f"{path}: not a workbench sweep file (no header)")
            _check_header(obj, path)
        else:
            rec = _check_record(obj, path, i + 1)
            rec["status"] = _status(rec)
            key = rec["key"]
            latest[key] = rec
            attempts[key] = attempts.get(key, 0) + 1 if rec["status"] == "failed" else 0
        good = end
    if good == 0 and data.strip():
        raise WorkbenchError(f"{path}: not a workbench sweep file (no header)")
    return Journal(latest=latest, attempts=attempts, good_bytes=good)


class Appender:
    """Appends records to the results file, each line flushed and fsync'd; one-line errors.

    The file is opened (cut to its valid prefix, a header written if it is new) only when the
    first record arrives, so a run that fails before any point finishes writes nothing.
    """

    def __init__(self, path: Path, good_bytes: int) -> None:
        """Remember where to write; nothing is opened yet."""
        self.path = path
        self._good = good_bytes
        self._fh: Any = None

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _open(self) -> None:
        self._fh = self.path.open("r+b" if self._good else "wb")
        self._fh.truncate(self._good)
        self._fh.seek(self._good)
        if self._good == 0:
            self._write(header_line())

    def _write(self, line: bytes) -> None:
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, rec: dict[str, Any]) -> None:
        """Write one record line (durable when this returns)."""
        try:
            if self._fh is None:
                self._open()
            self._write(json.dumps(rec, sort_keys=True, allow_nan=False).encode() + b"\n")
        except OSError as exc:
            raise WorkbenchError(
                f"--out {self.path}: {os_error_reason(exc)}; rerun the same command to resume"
            ) from None

    def close(self) -> None:
        """Close the file if it was opened."""
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()
