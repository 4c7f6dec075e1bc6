"""Safe file writing and bounded file reading for every output and input the workbench touches.

Writing (:func:`write_bytes_safely`, :func:`write_text_safely`):

- a regular file or a new path: a temp file in the same folder, ``fsync``, then ``os.replace``,
  so a reader sees the old content or the new, never half of it. An existing file keeps its
  permission bits (and, where the writer may set it, its owner); a new file gets the umask
  default (``0o666 & ~umask``), not ``0o600``.
- a symlink is followed deliberately: the resolved target is written atomically, the link stays.
- a character device (``/dev/null``) or a named pipe is written through (opened and written),
  never replaced by a regular file. A block device or a socket is refused.
- a directory, a read-only location, a full disk or a missing folder raise
  :class:`~workbench.errors.WorkbenchError` with one line naming the path and the reason; the temp
  file is removed and the old target is left intact.

Reading (:func:`read_bounded`, :func:`read_text_bounded`): only regular files of bounded size are
read. A named pipe, ``/dev/zero`` or a directory is refused in one line without blocking (``stat``
before ``open``, and ``open`` with ``O_NONBLOCK``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from workbench.errors import WorkbenchError

__all__ = [
    "os_error_reason",
    "read_bounded",
    "read_text_bounded",
    "write_bytes_safely",
    "write_text_safely",
]

_REASONS = {
    errno.ENOSPC: "no space left on device (disk full)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "a parent in the path is not a folder",
    errno.ENOENT: "the folder does not exist",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENXIO: "named pipe has no reader",
}


def os_error_reason(exc: OSError) -> str:
    """One short phrase for an ``OSError`` (no newlines, no traceback).

    >>> import errno
    >>> os_error_reason(OSError(errno.ENOSPC, "No space left on device"))
    'no space left on device (disk full)'
    """
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    text = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(text.split())


def _fail(what: str, path: Path | str, reason: str) -> WorkbenchError:
    return WorkbenchError(f"{what} {path}: {reason}")


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a named pipe"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def _resolve(path: Path, what: str) -> Path:
    """The regular file a write lands on: symlinks followed, the link itself left in place."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        # NOTE: a new path, or a dangling link: write its (absolute) target, creating it.
        return Path(os.path.realpath(path))
    except (OSError, RuntimeError) as exc:
        reason = os_error_reason(exc) if isinstance(exc, OSError) else "symbolic link loop"
        raise _fail(what, path, reason) from None


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (short writes happen on pipes and full disks)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _write_through(target: Path, data: bytes, mode: int, what: str, shown: Path) -> None:
    """Open and write a character device or a named pipe in place (never replace it)."""
    flags = os.O_WRONLY | os.O_CLOEXEC
    if stat.S_ISFIFO(mode):
        flags |= os.O_NONBLOCK  # NOTE: a pipe with no reader fails with ENXIO instead of hanging.
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None
    try:
        if stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None
    finally:
        os.close(fd)


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new temp file next to the target, created with mode ``0o666`` (the umask applies)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a unique temp file")


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable; best effort (some file systems refuse to fsync a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _replace_atomically(target: Path, data: bytes, old: os.stat_result | None) -> None:
    """Temp file in the target's folder, fsync, keep the old mode (and owner), rename over it."""
    fd, tmp = _create_temp(target.parent, target.name)
    try:
        try:
            if old is not None:
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    # NOTE: only root may give a file away; others keep their own ownership.
                    with contextlib.suppress(OSError):
                        os.fchown(fd, old.st_uid, old.st_gid)
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(target.parent)


def write_bytes_safely(
    path: str | os.PathLike[str], data: bytes, *, what: str = "output", make_parents: bool = False
) -> None:
    """Write ``data`` to ``path`` so that the target is never half-written or clobbered.

    Args:
        path: the file to write; a symlink is followed, a character device or named pipe is
            written through, a regular file is replaced atomically keeping its mode.
        data: the bytes to write.
        what: how the path is named in an error, e.g. ``"--output"`` or ``"plan cache"``.
        make_parents: create missing parent folders (umask default mode) instead of refusing.

    Raises:
        WorkbenchError: one line naming the path and the reason (a directory, a read-only
            file or location, a full disk, a missing folder, a pipe without a reader).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
        >>> write_bytes_safely(p, b"hello")
        >>> p.read_bytes()
        b'hello'
    """
    shown = Path(path)
    try:
        st: os.stat_result | None = os.stat(shown)  # NOTE: follows symlinks.
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            # NOTE: opened by the given name: /dev/fd/N links to "pipe:[...]", not to a path.
            _write_through(shown, data, st.st_mode, what, shown)
            return
        raise _fail(what, shown, _kind(st.st_mode))
    if st is not None and (not stat.S_IMODE(st.st_mode) & 0o222 or not os.access(shown, os.W_OK)):
        # NOTE: the rename would replace it (the folder is writable); a read-only file is one its
        # owner asked not to be written, so it is refused as other non-regular targets are. The
        # mode bits are read too: root passes os.access whatever the mode.
        raise _fail(what, shown, "is a read-only file (make it writable, or write elsewhere)")
    target = _resolve(shown, what)
    folder = target.parent
    if st is None and not folder.is_dir():
        if folder.exists():
            raise _fail(what, shown, f"{folder} is not a folder")
        if not make_parents:
            raise _fail(what, shown, f"folder {folder} does not exist")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _fail(
                what, shown, f"cannot create folder {folder}: {os_error_reason(exc)}"
            ) from None
    try:
        _replace_atomically(target, data, st)
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None


def write_text_safely(
    path: str | os.PathLike[str],
    text: str,
    *,
    what: str = "output",
    make_parents: bool = False,
    encoding: str = "utf-8",
) -> None:
    """Write ``text`` (UTF-8 by default) with :func:`write_bytes_safely`'s guarantees.

    Args:
        path: the file to write.
        text: the text to write, unchanged (no newline translation).
        what: how the path is named in an error.
        make_parents: create missing parent folders instead of refusing.
        encoding: the text encoding.

    Raises:
        WorkbenchError: one line naming the path and the reason.
    """
    write_bytes_safely(path, text.encode(encoding), what=what, make_parents=make_parents)


def _size(n: int) -> str:
    """A byte count for people: ``"1.5 MiB"``."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"  # pragma: no cover


def read_bounded(path: str | os.PathLike[str], max_bytes: int, what: str = "file") -> bytes:
    """Read a regular file of at most ``max_bytes`` bytes, refusing anything else without blocking.

    Args:
        path: the file to read (a symlink to a regular file is fine).
        max_bytes: the largest size accepted, in bytes.
        what: how the path is named in an error, e.g. ``"hardware file"``.

    Returns:
        The file's bytes.

    Raises:
        WorkbenchError: one line naming the path and the reason (missing, a directory, a named
            pipe, a device, larger than ``max_bytes``, unreadable).

    Example:
        >>> read_bounded("/dev/zero", 10, "config")
        Traceback (most recent call last):
        ...
        workbench.errors.WorkbenchError: config /dev/zero: is a character device, not a regular file
    """
    shown = Path(path)
    try:
        st = os.stat(shown)
    except FileNotFoundError:
        raise _fail(what, shown, "file not found") from None
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise _fail(what, shown, f"{_kind(st.st_mode)}, not a regular file")
    too_big = f"larger than the limit of {_size(max_bytes)}"
    if st.st_size > max_bytes:
        raise _fail(what, shown, f"is {_size(st.st_size)}, {too_big}")
    try:
        fd = os.open(shown, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # NOTE: swapped between stat and open.
            raise _fail(what, shown, "is not a regular file")
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise _fail(what, shown, os_error_reason(exc)) from None
    finally:
        os.close(fd)
    if total > max_bytes:
        raise _fail(what, shown, f"grew while reading, {too_big}")
    return b"".join(chunks)


def read_text_bounded(
    path: str | os.PathLike[str], max_bytes: int, what: str = "file", encoding: str = "utf-8"
) -> str:
    """Read a bounded regular file as text; bad encoding is one line, not a traceback.

    Args:
        path: the file to read.
        max_bytes: the largest size accepted, in bytes.
        what: how the path is named in an error.
        encoding: the text encoding.

    Returns:
        The file's text.

    Raises:
        WorkbenchError: as :func:`read_bounded`, or the bytes are not valid ``encoding``.
    """
    data = read_bounded(path, max_bytes, what)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _fail(what, Path(path), f"not valid {encoding} text at byte {exc.start}") from None
