import errno
import json
import re

import altair as alt
import pytest

from workbench.errors import WorkbenchError
from workbench.report.export import chart_html_fragment, offline_page, save_chart


@pytest.fixture(scope="module")
def chart():
    data = alt.Data(values=[{"x": 1, "y": 2}, {"x": 2, "y": 3}])
    return alt.Chart(data).mark_point().encode(x="x:Q", y="y:Q")


def _no_external_scripts(page):
    assert not re.search(r"<script[^>]+src\s*=\s*[\"']?https?:", page, re.IGNORECASE)


def test_png_and_svg(tmp_path, chart):
    png = save_chart(chart, tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = save_chart(chart, tmp_path / "sub" / "c.svg").read_text()
    assert svg.lstrip().startswith("<svg")
    assert "</svg>" in svg
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["c.png", "c.svg", "sub"]  # no temp left


def test_html_is_offline(tmp_path, chart):
    page = save_chart(chart, tmp_path / "c.html").read_text()
    _no_external_scripts(page)
    assert "vegaEmbed(" in page
    assert len(page) > 100_000
    assert '"mark"' in page


def test_json_spec(tmp_path, chart):
    spec = json.loads(save_chart(chart, tmp_path / "c.json").read_text())
    assert spec["mark"]["type"] == "point"


def test_unknown_suffix_and_failed_write_leave_nothing(tmp_path, chart, monkeypatch):
    with pytest.raises(WorkbenchError, match="unknown suffix"):
        save_chart(chart, tmp_path / "c.pdf")
    (tmp_path / "keep.json").write_text("old")

    def broken_replace(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("workbench._files.os.replace", broken_replace)
    with pytest.raises(WorkbenchError, match=r"keep\.json: no space left on device \(disk full\)$"):
        save_chart(chart, tmp_path / "keep.json")
    assert (tmp_path / "keep.json").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_offline_page_with_sections(chart):
    frag = chart_html_fragment(chart, div_id="one")
    assert '<div id="one"' in frag
    assert 'vegaEmbed("#one"' in frag
    page = offline_page("A <review>", [("Roofline", frag), ("Second", chart_html_fragment(chart))])
    _no_external_scripts(page)
    assert "A &lt;review&gt;" in page
    assert page.count("<section>") == 2
    assert page.count("vegaEmbed(") >= 2


def test_static_figures_one_svg_per_chart_no_script(chart):
    from workbench.report.export import STATIC_FIGURE_CLASS, static_figures_html

    block = static_figures_html([chart, chart.mark_line()], caption="gpt2 <b>")
    assert block.count(f"<figure class='{STATIC_FIGURE_CLASS}'") == 2
    assert block.count("<svg") == 2
    assert "<script" not in block
    assert "gpt2 &lt;b&gt;" in block  # the caption is escaped
    # hidden only where the live widget just before it rendered
    assert ":has(.widget-vbox)" in block
