"""Checks on the paths a trace-reading command is given, before anything is read or written.

An empty path is an error (never a silent default), and an output may not be one of the inputs:
``workbench run --from-trace t.json --record t.json`` would replace the trace with a record.
Paths are compared resolved (symlinks and ``..`` followed) and, when both exist, as the same file
on disk (a hard link is the same trace too).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from workbench.errors import WorkbenchError, printable

__all__ = ["check_input_path", "check_output_not_input"]


def check_input_path(path: str, flag: str) -> str:
    """``path``, once it is known not to be empty or blank.

    >>> check_input_path("t.json", "--from-trace")
    't.json'
    """
    if not path.strip():
        raise WorkbenchError(f"{flag}: empty path (name the trace file to read)")
    return path


def _same(a: str, b: str) -> bool:
    try:
        if Path(a).resolve() == Path(b).resolve():
            return True
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except (OSError, RuntimeError, ValueError):
        return False


def check_output_not_input(output: str, inputs: Sequence[str], flag: str) -> None:
    """Refuse an output path that names one of ``inputs`` (the file would be overwritten).

    Args:
        output: The file the command would write.
        inputs: The files it reads.
        flag: The option that named ``output``, for the message.

    Raises:
        WorkbenchError: One line naming both; nothing has been read or written.
    """
    for path in inputs:
        if path and _same(output, path):
            raise WorkbenchError(
                f"{flag} {printable(output)}: names the input {printable(path)} itself; "
                "choose another file (the input is left untouched)"
            )
