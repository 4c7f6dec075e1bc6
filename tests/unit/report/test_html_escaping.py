"""One escaping path for HTML (issue 29): report/ and ui/ build markup only through report/_html.py,
and a name from a record or trace comes out escaped in both review packs."""

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report._html import Html, each, escape, trusted
from workbench.report.review_pack import comparison_html, review_pack
from workbench.review import record_from_mapping
from workbench.review.pack.content import comparison_pack

ROOT = Path(__file__).resolve().parents[3] / "workbench"
EVIL = "<script>alert(1)</script>"
TAG = re.compile(r"<[A-Za-z!/]")


def _sources():
    for package in ("report", "ui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "_html.py":
                yield path


@pytest.mark.parametrize("path", list(_sources()), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_markup_in_f_strings_and_no_other_escape(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            assert not TAG.search(text), f"{path.name}:{node.lineno}: markup in an f-string"
        if isinstance(node, ast.Attribute) and node.attr == "escape":
            base = node.value
            assert not (isinstance(base, ast.Name) and base.id == "html"), (
                f"{path.name}:{node.lineno}: html.escape outside report/_html.py"
            )


def test_html_escapes_every_value_once():
    assert Html("<a title='{}'>{}</a>").format("x'y", EVIL) == (
        "<a title='x&#x27;y'>&lt;script&gt;alert(1)&lt;/script&gt;</a>"
    )
    inner = Html("<i>{}</i>").format("a&b")
    assert Html("<b>{}</b>").format(inner) == "<b><i>a&amp;b</i></b>"  # not twice
    assert Html("{:.1%}").format(0.25) == "25.0%"
    assert each("<li>{}</li>", [EVIL, inner]) == (
        "<li>&lt;script&gt;alert(1)&lt;/script&gt;</li><li><i>a&amp;b</i></li>"
    )
    assert escape(inner) is inner
    assert trusted("<svg/>") == "<svg/>"


@pytest.fixture(scope="module")
def evil_records():
    graph = dataclasses.replace(build_graph("mlp"), name=f"mlp {EVIL}")
    hw = load_hardware("h100-sxm")
    hw = hw.model_copy(update={"name": f"chip {EVIL}"})
    base = map_model(graph, hw)
    cand = map_model(graph, hw, MapOptions(launch="eager"))
    return base, record_from_mapping(base), record_from_mapping(cand)


def test_a_script_name_comes_out_escaped_in_the_one_run_pack(evil_records):
    mapping, _, _ = evil_records
    page = review_pack(mapping, simulate=False)
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_script_name_comes_out_escaped_in_the_regression_pack(evil_records):
    _, base, cand = evil_records
    pack = comparison_pack(base, cand, changed="runtime", simulate=False)
    page = comparison_html(pack)
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
