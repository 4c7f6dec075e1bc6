"""What a fresh install needs: Altair's JupyterChart (the lessons' live charts) imports anywidget,
so it is a declared dependency even though workbench never imports it (a session dropped it as
unused and every live chart failed on a clean machine)."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_anywidget_stays_a_dependency_for_altairs_live_charts():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("anywidget") for d in deps)
    assert "anywidget==" in (REPO / "binder" / "requirements.txt").read_text()


def test_a_live_chart_builds():
    import altair as alt

    chart = alt.Chart({"values": [{"x": 1}]}).mark_point().encode(x="x:Q")
    assert alt.JupyterChart(chart).spec["mark"] == {"type": "point"}
