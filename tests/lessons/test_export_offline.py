"""An executed lesson exported to HTML shows every chart offline and loads nothing (issue 12).

The lesson is executed (nbclient, as ``jupyter nbconvert --execute`` does) and exported with
:func:`workbench.report.export.notebook_html`: nbconvert's HTML exporter with the package's
``offline`` template (nbconvert's own lab page links require.js and MathJax from cdnjs). Saved
lessons carry no widget state, so the live charts cannot render in the page; each widget adds
one static SVG figure per chart, which needs no script at all.
"""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from workbench.errors import WorkbenchError
from workbench.report.export import export_notebook, notebook_html, remote_resources

LESSONS = Path(__file__).resolve().parents[2] / "lessons"


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(LESSONS / "01-operators-to-flops-and-bytes.ipynb", as_version=4)
    # NOTE: saved lessons keep no widget state (test_lessons_thin); executed the same way, the
    # page has no widget manager to fetch from unpkg, and the static figures are what it shows.
    client = NotebookClient(
        nb, timeout=120, store_widget_state=False, resources={"metadata": {"path": str(LESSONS)}}
    )
    client.execute()
    return nb


@pytest.fixture(scope="module")
def exported(executed):
    return notebook_html(executed)


def test_every_chart_has_one_static_figure(exported):
    figures = re.findall(r"<figure class=\"wb-static-chart\"[^>]*><svg", exported)
    # lesson 01 has one MappingExplorer: the roofline and the time/utilisation bars
    assert len(figures) == 2


def test_no_script_or_resource_from_the_network(exported):
    sources = re.findall(r"<script[^>]+src\s*=\s*[\"']?([^\"' >]+)", exported, re.IGNORECASE)
    assert sources == []  # no script file at all, local or remote
    assert re.findall(r"<link\b[^>]*href\s*=\s*[\"']?(?:https?:)?//", exported, re.I) == []
    assert remote_resources(exported) == []
    for host in ("cdnjs.cloudflare.com", "unpkg.com", "cdn.jsdelivr.net"):
        assert host not in exported


def test_nbconverts_own_template_is_what_needed_fixing(executed):
    # The check is not vacuous: the stock lab page links require.js and MathJax from cdnjs.
    stock, _ = HTMLExporter().from_notebook_node(executed)
    assert any("cdnjs.cloudflare.com" in r or "//" in r for r in remote_resources(stock))


def test_export_notebook_writes_the_page_and_names_bad_input(tmp_path):
    out = export_notebook(LESSONS / "13-dataflows-and-energy.ipynb", tmp_path / "l13.html")
    page = out.read_text()
    assert "<title>13-dataflows-and-energy</title>" in page
    assert remote_resources(page) == []
    with pytest.raises(WorkbenchError, match="not a readable notebook"):
        export_notebook(tmp_path / "missing.ipynb", tmp_path / "x.html")


def test_a_remote_image_in_a_cell_is_refused():
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell('<img src="https://example.org/a.png">')]
    )
    with pytest.raises(WorkbenchError, match="loads from the network"):
        notebook_html(nb)


def test_a_widget_shows_its_static_copy_not_its_text_repr(executed, exported):
    # issue 20: the page printed `Panel(children=(HBox(...` above the static figure
    reprs = [
        o["data"]["text/plain"]
        for c in executed.cells
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert reprs  # the executed notebook has the fallback text ...
    assert "Panel(children" not in exported  # ... and the page does not show it
