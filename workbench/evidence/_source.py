"""Checks on a trace file before reading it, and atomic writing for the test-trace writers.

A trace must be a regular file (a pipe, a device such as ``/dev/zero`` or a folder is refused
before it is opened, so reading can never block or run forever) no larger than ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from workbench.evidence.run import TraceError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "atomic_path",
    "check_trace_file",
    "no_gc",
    "open_regular",
    "sniff",
]

#: Largest trace read by default, bytes (on disk, and decompressed for ``.gz``). Real Kineto
#: traces of long runs reach a few GB; raise it with ``max_bytes=`` for bigger ones.
DEFAULT_MAX_BYTES = 4 * 1024**3


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block (restored as it was after).

    Reading a trace allocates millions of small containers (an event's dict, an activity) and
    makes no reference cycles, so the collector's passes over them free nothing; they cost
    about an eighth of the reading time of a big trace. Memory is freed by reference counting
    as before.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_trace_file(path: str | os.PathLike[str], max_bytes: int) -> Path:
    """The path, once it is known to be a readable regular file of at most ``max_bytes``."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise TraceError(f"{p}: no such trace file") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(f"{p}: not a regular file (a folder, pipe or device is not a trace)")
    if st.st_size > max_bytes:
        raise TraceError(
            f"{p}: {st.st_size} bytes is over the {max_bytes}-byte limit for a trace "
            "(pass max_bytes= to read a bigger one)"
        )
    if st.st_size == 0:
        raise TraceError(f"{p}: empty file")
    return p


def open_regular(path: Path) -> IO[bytes]:
    """Open ``path`` for reading, refusing anything but a regular file without ever blocking.

    ``O_NONBLOCK`` and ``fstat`` on the opened descriptor close the gap between the check in
    :func:`check_trace_file` and the open: a file swapped for a pipe in between is refused too.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TraceError(f"{path}: not a regular file (a folder, pipe or device is not a trace)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def sniff(path: Path) -> str:
    """``kineto-gz``, ``kineto`` or ``nsys`` from the file's first bytes (not its suffix)."""
    with open_regular(path) as f:
        head = f.read(64)
    if head.startswith(b"\x1f\x8b"):
        return "kineto-gz"
    if head.startswith(b"SQLite format 3\x00"):
        return "nsys"
    if head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] in (b"{", b"["):
        return "kineto"
    raise TraceError(
        f"{path}: not a trace this reads (expected Kineto JSON, .json.gz or an Nsight Systems "
        "SQLite export; turn a .nsys-rep into one with: nsys export --type sqlite FILE)"
    )


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only if the body succeeds.

    A target that exists and is not a regular file (device, pipe, folder) is refused, not replaced.
    """
    target = Path(path)
    if target.exists() and not target.is_file():
        raise TraceError(f"{target}: exists and is not a regular file; refusing to replace it")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def read_chunks(f: IO[str], where: str, max_chars: int, chunk: int) -> Iterator[str]:
    """Text chunks of ``f``, refusing more than ``max_chars`` in all (a gzip bomb stops here)."""
    total = 0
    while True:
        try:
            data = f.read(chunk)
        except (EOFError, OSError, zlib.error) as exc:
            raise TraceError(f"{where}: truncated or corrupt compressed data ({exc})") from None
        except UnicodeDecodeError as exc:
            raise TraceError(f"{where}: not UTF-8 text at byte {exc.start}") from None
        if not data:
            return
        total += len(data)
        if total > max_chars:
            raise TraceError(f"{where}: decompressed text is over the {max_chars}-byte limit")
        yield data
