"""Errors the workbench raises for bad input.

Every error a user can cause (a malformed hardware file, an inconsistent graph, an unknown
dtype, a corrupt run record) is a :class:`WorkbenchError` whose message is one line saying what
was wrong and where. The CLI prints that line and exits with status 2; it never shows a traceback
for these.
"""

from __future__ import annotations

__all__ = ["GraphError", "HardwareError", "IngestError", "WorkbenchError", "printable"]


class WorkbenchError(ValueError):
    """Bad input: the message is one line naming what was wrong and where."""


class GraphError(WorkbenchError):
    """An operator graph is inconsistent (shapes, sizes, dtypes, edges)."""


class HardwareError(WorkbenchError):
    """A hardware profile is malformed or cannot be found."""


class IngestError(WorkbenchError):
    """A model file (Hugging Face config.json, ONNX) cannot be turned into a graph."""


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_CONTROL.update({c: f"\\u{c:04x}" for c in (0x200E, 0x200F, *range(0x202A, 0x202F))})
_CONTROL.update({c: f"\\u{c:04x}" for c in range(0x2066, 0x206A)})
_CONTROL.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def printable(text: str) -> str:
    r"""``text`` with control characters, ANSI escapes and bidi overrides shown as escapes.

    Text read from a file (a kernel or device name in a trace) is shown through this before it
    reaches a terminal or a report, so it cannot move the cursor, recolour the screen, start a new
    line or reorder what follows. It is idempotent: escaped text passes through unchanged.

    >>> printable("\x1b[31mred\x1b[0m\nnext")
    '\\x1b[31mred\\x1b[0m\\nnext'
    """
    if text.isprintable():
        return text
    return text.translate(_CONTROL)
