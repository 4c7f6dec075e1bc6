"""Hostile text in every field that reaches HTML or Markdown is escaped (issue 13).

A hardware profile's name, vendor and description, and a model's name, flow into the mapping
sheet and the review pack: no script, no event handler, no raw tag may come out.
"""

from __future__ import annotations

import pytest
import yaml
from fuzz_contract import (
    HOSTILE_TEXT,
    assert_contract,
    assert_safe_html,
    assert_safe_markdown,
    fresh,
    run_cli,
)
from hypothesis import given
from hypothesis import strategies as st

from workbench.hw.loader import builtin_dir

BASE = yaml.safe_load((builtin_dir() / "teaching.yaml").read_text())


def _profile(tmp_path, text: str):
    doc = {**BASE, "name": text, "vendor": text, "description": text}
    path = fresh(tmp_path, "chip.yaml")
    path.write_text(yaml.safe_dump(doc))
    return path


@given(text=st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(min_size=1, max_size=30)))
def test_sheet_html_and_markdown_escape_hardware_text(tmp_path, text):
    path = _profile(tmp_path, text)
    for fmt, check in (("html", assert_safe_html), ("md", assert_safe_markdown)):
        out = fresh(tmp_path, f"sheet.{fmt}")
        argv = ("map", "--model", "mlp", "--hardware", str(path), "--format", fmt)
        outcome = assert_contract(run_cli(*argv, "--output", str(out)), names=(path.name,))
        if outcome.code == 0:  # NOTE: short random text ("<") legitimately occurs in markup
            check(out.read_text(), text if text in HOSTILE_TEXT else "")


@pytest.mark.parametrize("text", ["<!--<script>", "</script><script>alert(1)</script>"])
def test_review_pack_escapes_hardware_text(tmp_path, text):
    path = _profile(tmp_path, text)
    out = tmp_path / "pack.html"
    argv = ("review", "--model", "mlp", "--hardware", str(path), "--out", str(out))
    outcome = assert_contract(run_cli(*argv))
    assert outcome.code == 0, outcome.err
    md = next(p for p in tmp_path.iterdir() if p.suffix == ".md")
    assert_safe_html(out.read_text(), text, strict_tags=False)
    assert_safe_markdown(md.read_text(), text)
