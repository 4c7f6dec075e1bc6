"""An executed lesson exported to HTML shows every chart offline (issue 12).

The lesson is executed (nbclient, as ``jupyter nbconvert --execute`` does) and exported with
nbconvert's HTML exporter (``jupyter nbconvert --to html``). Saved lessons carry no widget state,
so the live charts cannot render in the page; each widget adds one static SVG figure per chart,
which needs no script at all.
"""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

LESSONS = Path(__file__).resolve().parents[2] / "lessons"
# nbconvert's own page template links these two (not used by any chart); nothing else may load.
TEMPLATE_SCRIPTS = (
    "cdnjs.cloudflare.com/ajax/libs/require.js",
    "cdnjs.cloudflare.com/ajax/libs/mathjax",
)


@pytest.fixture(scope="module")
def exported():
    nb = nbformat.read(LESSONS / "01-operators-to-flops-and-bytes.ipynb", as_version=4)
    # NOTE: saved lessons keep no widget state (test_lessons_thin); executed the same way, the
    # page has no widget manager to fetch from unpkg, and the static figures are what it shows.
    client = NotebookClient(
        nb, timeout=120, store_widget_state=False, resources={"metadata": {"path": str(LESSONS)}}
    )
    client.execute()
    body, _ = HTMLExporter().from_notebook_node(nb)
    return body


def test_every_chart_has_one_static_figure(exported):
    figures = re.findall(r"<figure class=\"wb-static-chart\"[^>]*><svg", exported)
    # lesson 01 has one MappingExplorer: the roofline and the time/utilisation bars
    assert len(figures) == 2


def test_no_external_script_for_the_charts(exported):
    sources = re.findall(r"<script[^>]+src\s*=\s*[\"']?([^\"' >]+)", exported, re.IGNORECASE)
    external = [s for s in sources if s.startswith(("http:", "https:", "//"))]
    assert all(any(t in s for t in TEMPLATE_SCRIPTS) for s in external), external
    assert "unpkg.com" not in exported
    assert "cdn.jsdelivr.net/npm/vega" not in exported
