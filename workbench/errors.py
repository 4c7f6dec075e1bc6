"""Errors the workbench raises for bad input.

Every error a user can cause (a malformed hardware file, an inconsistent graph, an unknown
dtype, a corrupt run record) is a :class:`WorkbenchError` whose message is one line saying what
was wrong and where. The CLI prints that line and exits with status 2; it never shows a traceback
for these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "GraphError",
    "HardwareError",
    "IngestError",
    "OptionsError",
    "WorkbenchError",
    "first_invalid",
    "printable",
]


class WorkbenchError(ValueError):
    """Bad input: the message is one line naming what was wrong and where."""


class GraphError(WorkbenchError):
    """An operator graph is inconsistent (shapes, sizes, dtypes, edges)."""


class HardwareError(WorkbenchError):
    """A hardware profile is malformed or cannot be found."""


class IngestError(WorkbenchError):
    """A model file (Hugging Face config.json, ONNX) cannot be turned into a graph."""


class OptionsError(WorkbenchError):
    """A mapping argument of the wrong type or out of range; the message names it.

    Raised by ``map_model`` for its arguments and by ``MapOptions`` / ``TileOverride`` for a
    field (a tile side of 0, 10**30 or -1; a str where a tuple belongs).
    """


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    """One non-printable character as an escape (a surrogate-escaped byte as that byte)."""
    c = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= c <= 0xDCFF:  # NOTE: a byte of a file name that is no UTF-8 (surrogateescape)
        return f"\\x{c - 0xDC00:02x}"
    if c <= 0xFF:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}"


def printable(text: str) -> str:
    r"""``text`` with control characters, ANSI escapes and bidi overrides shown as escapes.

    Text read from a file (a kernel or device name in a trace, a record's tags, a file name) is
    shown through this before it reaches a terminal or a report, so it cannot move the cursor,
    recolour the screen, start a new line or reorder what follows. Every character Python deems
    non-printable is escaped: C0/C1 controls, bidi and other format characters, line and
    paragraph separators, and lone surrogates (a file name's bytes that are no UTF-8, shown as
    ``\xff``), so the result always encodes as UTF-8. It is idempotent: escaped text passes
    through unchanged.

    >>> printable("\x1b[31mred\x1b[0m\nnext")
    '\\x1b[31mred\\x1b[0m\\nnext'
    >>> printable("run\udcff.json\u202e")
    'run\\xff.json\\u202e'
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def first_invalid(exc: ValidationError) -> str:
    """A pydantic error's first problem as ``field.path: message`` (for a one-line error).

    >>> from pydantic import BaseModel
    >>> class M(BaseModel):
    ...     n: int
    >>> try:
    ...     M.model_validate({"n": "x"})
    ... except Exception as e:
    ...     first_invalid(e).split(":")[0]
    'n'
    """
    err = exc.errors()[0]
    return ".".join(str(p) for p in err["loc"]) + f": {err['msg']}"
