"""The bad-input contract every fuzz test asserts (.github/CONTRIBUTING.md).

A command either exits 0 with finite, sane results, or exits 2 with exactly one line on stderr,
``workbench: error: ...``, naming the file (and field) that is wrong, and writes nothing. It never
shows a traceback (an internal error is exit 3, one line, and fails these tests), never hangs.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from workbench.cli import main

#: Text that must never reach HTML or Markdown unescaped.
HOSTILE_TEXT = (
    "<script>alert(1)</script>",
    "<!--<script>",
    '"><img src=x onerror=alert(1)>',
    "</style><script src='http://evil.example/x.js'></script>",
    "a|b\n| c |",
    "[x](javascript:alert(1))",
)

#: Values a careless or hostile file puts where a number, name or list belongs.
HOSTILE_VALUES = (
    float("nan"), float("inf"), float("-inf"), -1, 0, -0.0, 1e308, 10**400, 2**63, 2**64 + 1,
    True, False, None, "", "12", "1e3", "NaN", [], {}, [1, 2], {"a": 1}, "x" * 300, *HOSTILE_TEXT,
)  # fmt: skip

hostile_values = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)

_counter = itertools.count()


def fresh(folder: Path, name: str) -> Path:
    """A path never used before in ``folder`` (loaders cache by path, size and mtime)."""
    return folder / f"{next(_counter)}-{name}"


@dataclass(frozen=True)
class Outcome:
    """What one in-process CLI call did."""

    argv: tuple[str, ...]
    code: int
    out: str
    err: str


def run_cli(*argv: str) -> Outcome:
    """Call ``workbench.cli.main`` in-process, capturing stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse errors exit 2 with one line
            code = int(exc.code or 0)
    return Outcome(tuple(argv), code, out.getvalue(), err.getvalue())


def assert_contract(
    outcome: Outcome,
    *,
    names: tuple[str, ...] = (),
    outputs: tuple[Path, ...] = (),
    allowed: tuple[int, ...] = (0, 2),
) -> Outcome:
    """Exit 0 (any extra stderr lines are one-line notes/warnings) or 2 with one line naming
    one of ``names``, and nothing in ``outputs`` written."""
    where = f"workbench {' '.join(outcome.argv)}"
    assert "Traceback" not in outcome.err, f"{where}: traceback\n{outcome.err}"
    assert "internal error" not in outcome.err, f"{where}: {outcome.err}"
    assert outcome.code in allowed, f"{where}: exit {outcome.code}\n{outcome.err}"
    if outcome.code == 2:
        lines = outcome.err.strip().splitlines()
        assert len(lines) == 1, f"{where}: {len(lines)} error lines\n{outcome.err}"
        line = lines[0]
        assert line.startswith(("workbench: error: ", "workbench ")), f"{where}: {line}"
        if names:
            assert any(n in line for n in names), f"{where}: error names none of {names}: {line}"
        for path in outputs:
            assert not path.exists(), f"{where}: wrote {path} although it failed"
    else:
        for line in outcome.err.splitlines():
            assert line.startswith("workbench: "), f"{where}: stray stderr line {line!r}"
    return outcome


def assert_sane_numbers(doc: Any, where: str = "") -> None:
    """Every number in a JSON document is finite (``null`` stands for 'not applicable')."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            assert_sane_numbers(value, f"{where}.{key}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            assert_sane_numbers(value, f"{where}[{i}]")
    elif isinstance(doc, float):
        assert math.isfinite(doc), f"{where} = {doc}"


def assert_sane_mapping(doc: dict[str, Any]) -> None:
    """A ``map --format json`` document: finite, non-negative totals, HFU >= MFU, > 0 time."""
    assert_sane_numbers(doc)
    totals = doc["totals"]
    for key in ("time_s", "mfu", "hfu", "tokens_per_s", "energy_j", "power_w", "model_flops"):
        assert totals[key] >= 0, f"totals.{key} = {totals[key]}"
    assert totals["time_s"] > 0
    assert totals["hfu"] >= totals["mfu"] * (1 - 1e-9), totals
    for row in doc["kernels"]:
        for key in ("time_s", "compute_s", "stall_s", "flops", "bytes_offchip"):
            assert row[key] is None or row[key] >= 0, f"{row['kernel']}.{key} = {row[key]}"
    memory = doc["memory"]
    assert memory["fits"] == (memory["memory_bytes"] <= memory["capacity_bytes"])


_TAG = re.compile(r"<\s*/?\s*([a-zA-Z][a-zA-Z0-9-]*)")
_SAFE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "table",
    "thead", "tbody", "tr", "td", "th", "ul", "ol", "li", "div", "span", "section", "code",
    "pre", "details", "summary", "a", "b", "strong", "em", "small", "br", "hr", "figure",
    "figcaption", "caption", "nav", "header", "footer", "main", "svg", "g", "path", "rect",
    "line", "text", "circle", "polyline", "polygon", "tspan", "defs", "clippath", "script",
}  # fmt: skip


def assert_safe_html(text: str, hostile: str = "", *, strict_tags: bool = True) -> None:
    """No external script or asset, no event handler, and ``hostile`` never appears raw.

    ``strict_tags``: every tag is a known presentational one (pages without inline scripts).
    """
    low = text.lower()
    assert "src='http" not in low, "external asset"
    assert 'src="http' not in low, "external asset"
    assert not re.search(r"(href|src)\s*=\s*['\"]?\s*javascript:", low), "javascript: URL"
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", low), "event handler attribute"
    for m in re.finditer(r"<script([^>]*)>", low):
        assert "src" not in m.group(1), "external script"
    if hostile and "<" in hostile:  # NOTE: a raw quote or ampersand in text is harmless
        assert hostile not in text, f"unescaped {hostile!r}"
    if strict_tags:
        tags = {t.lower() for t in _TAG.findall(text)}
        assert tags <= _SAFE_TAGS - {"script"}, f"unexpected tags {tags - _SAFE_TAGS}"


def assert_safe_markdown(text: str, hostile: str = "") -> None:
    """No raw HTML tag from the input in Markdown (it would render), no raw ``hostile``."""
    if hostile and "<" in hostile:
        assert hostile not in text, f"unescaped {hostile!r}"
    assert "<script" not in text.lower()


def read_json(path: Path) -> Any:
    """Parse a JSON file the CLI wrote."""
    return json.loads(path.read_text(encoding="utf-8"))
