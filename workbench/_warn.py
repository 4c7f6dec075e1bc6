"""One-line warnings: ``workbench: warning: <message>`` on stderr, never Python's two lines.

The library warns through :func:`warn`, which issues a :class:`WorkbenchWarning` (a
``RuntimeWarning``) with :func:`warnings.warn`, so the usual machinery still applies: filters
(``-W ignore``, ``warnings.simplefilter``), ``pytest.warns`` and ``catch_warnings(record=True)``
see it as before. Only its display changes: Python's default shows a warning as two lines (the
``file:line: Category: message`` header and the source line that raised it); a
:class:`WorkbenchWarning` is shown as the one line above. Other warnings display unchanged.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from typing import Any, TextIO

__all__ = ["WorkbenchWarning", "format_line", "warn"]

PREFIX = "workbench: warning: "


class WorkbenchWarning(RuntimeWarning):
    """A warning of the workbench itself; displayed as one line (module docstring)."""


def format_line(message: object) -> str:
    """The one displayed line of a warning message, newlines folded to spaces, line-terminated.

    >>> format_line("plan cache x.json:  corrupt;   ignoring it").rstrip()
    'workbench: warning: plan cache x.json: corrupt; ignoring it'
    """
    text = " ".join(str(message).split())
    return f"{PREFIX}{text}\n"


_original_show = warnings.showwarning


def _show(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    if not issubclass(category, WorkbenchWarning):
        _original_show(message, category, filename, lineno, file, line)
        return
    stream: Any = file if file is not None else sys.stderr
    if stream is None:  # NOTE: pythonw and friends have no stderr
        return
    # NOTE: a closed or broken stderr must not turn a warning into a crash
    with contextlib.suppress(OSError, ValueError):
        stream.write(format_line(message))


# NOTE: installed once, when the library first warns through this module; anything that
# replaces showwarning later (pytest, catch_warnings) takes precedence while it is in place.
if getattr(warnings.showwarning, "__module__", "") != __name__:
    warnings.showwarning = _show


def warn(message: str, *, stacklevel: int = 2) -> None:
    """Issue a one-line :class:`WorkbenchWarning` (module docstring).

    Args:
        message: What happened and what the workbench does instead (one sentence).
        stacklevel: As for :func:`warnings.warn` (2: the caller of the function calling this).
    """
    warnings.warn(message, WorkbenchWarning, stacklevel=stacklevel + 1)
