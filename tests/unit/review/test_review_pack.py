import dataclasses
import re

import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.report.review_pack import review_markdown, review_pack

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def evil_mapping():
    graph = build_graph("mlp")
    graph = dataclasses.replace(graph, name=f"mlp {EVIL}")
    return map_model(graph, load_hardware("h100-sxm"))


@pytest.fixture(scope="module")
def page(evil_mapping):
    return review_pack(evil_mapping, simulate=False)


def test_untrusted_model_name_is_escaped(page):
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_page_is_offline(page):
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)


def test_page_has_every_section(page):
    for heading in (
        "Mapping sheet",
        "Roofline",
        "Bandwidth lens",
        "stall fraction by layer type",
        "Owners",
        "Debug branches",
        "Validation matrix",
        "Rollback criteria",
    ):
        assert heading in page


def test_markdown_twin_has_sections_and_computed_figures(evil_mapping):
    md = review_markdown(evil_mapping, simulate=False)
    assert "## Rollback criteria" in md
    assert "ML compiler engineer" in md
    assert f"{evil_mapping.mfu:.4g}" in md
