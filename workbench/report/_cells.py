"""Table cells of the review packs, in HTML and Markdown: every number with its unit.

One convention for the rows the packs render: a float in a column named ``*_s`` is a duration
(``40.3 ms``), in a column named ``share`` or ``*_share`` a fraction (``96.3%``); any other
float is a plain figure at three significant digits (rows carry text for mixed units, made with
:mod:`workbench._format`). Lists join with commas; None is ``-``. In HTML a name longer than
:data:`SHORTEN_AT` characters without spaces is shortened in the middle, the full name in the
cell's ``title``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from workbench._format import fmt_percent, fmt_quantity
from workbench.report._html import Html, each

__all__ = ["SHORTEN_AT", "cell_text", "html_table", "md_escape", "md_table", "shorten"]

#: Longest unbroken token shown in full in an HTML cell.
SHORTEN_AT = 44


def cell_text(v: Any, col: str = "") -> str:
    """One cell's text (see the module docstring).

    >>> cell_text(0.04026, "time_s"), cell_text(0.963, "share"), cell_text(None), cell_text(2.177)
    ('40.3 ms', '96.3%', '-', '2.18')
    """
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-"
        if col.endswith("_s"):
            return fmt_quantity(v, "s")
        if col == "share" or col.endswith("_share"):
            return fmt_percent(v)
        return fmt_quantity(v, "")
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v) or "-"
    return "-" if v is None or v == "" else str(v)


def shorten(text: str, at: int = SHORTEN_AT) -> str:
    """``text`` with unbroken runs longer than ``at`` cut in the middle (``head...tail``).

    >>> shorten("layers.0.attn.q_proj")
    'layers.0.attn.q_proj'
    >>> len(shorten("x" * 100))
    44
    """
    words = text.split(" ")
    half = (at - 3) // 2
    return " ".join(w if len(w) <= at else f"{w[:half]}...{w[-(at - 3 - half) :]}" for w in words)


def _html_cell(v: Any, col: str) -> Html:
    text = cell_text(v, col)
    short = shorten(text)
    if short == text:
        return Html("<td>{}</td>").format(text)
    return Html('<td title="{}">{}</td>').format(text, short)


def html_table(rows: Sequence[dict[str, Any]], cols: Sequence[str]) -> Html:
    """An HTML table in a box that scrolls sideways when it is wider than the page (escaped)."""
    if not rows:
        return Html("<p class='wb-empty'>(none)</p>\n")
    head = each("<th>{}</th>", (c.replace("_", " ") for c in cols))
    body = each("<tr>{}</tr>", (Html("").join(_html_cell(r.get(c), c) for c in cols) for r in rows))
    return Html(
        "<div class='wb-table'><table><thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>\n"
    ).format(head, body)


_MD_SPECIAL = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "|": "\\|",
        "`": "\\`",
        "[": "\\[",
        "]": "\\]",
        "*": "\\*",
        "\\": "\\\\",
        "\n": " ",
        "\r": " ",
        # NOTE: other control characters and ANSI escapes (a kernel name from a trace) shown
        **{chr(c): f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if c not in (0x09, 0x0A, 0x0D)},
        "\t": " ",
    }
)


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell or heading: no HTML, links, code or emphasis.

    >>> md_escape("a <!--<script>")
    'a &lt;!--&lt;script&gt;'
    """
    return text.translate(_MD_SPECIAL)


def md_table(rows: Sequence[dict[str, Any]], cols: Sequence[str]) -> str:
    """A Markdown table, every cell escaped."""
    if not rows:
        return "(none)\n"
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += [
        "| " + " | ".join(md_escape(cell_text(r.get(c), c)) for c in cols) + " |" for r in rows
    ]
    return "\n".join(lines) + "\n"
