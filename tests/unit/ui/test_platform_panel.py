from workbench.ui.platform_panel import LatencyPanel


def test_panel_reruns_on_control_change():
    panel = LatencyPanel(model="gpt2", n_requests=200, sla_ms=5000)
    first = panel.points
    assert "knee" in panel.knee_text or "breaks" in panel.knee_text
    panel.controls["trace"].value = "synthetic-fixed"
    assert panel.points is not first
    assert panel.points[0].workload == "synthetic-fixed"
    assert panel.widget.children


def test_panel_shows_the_lessons_simulation():
    # Lesson 10's table and its panel: the same rates, requests and batch limit give the same
    # points, so the knee in the text is the knee in the panel.
    from workbench.exercises import lesson10

    rates = (1.0, 4.0)
    panel = LatencyPanel(model="gpt2", sla_ms=5000, n_requests=200, rates=rates)
    table = lesson10.sweep("gpt2", "h100-sxm", rates, n=200)
    assert [p.p99_e2e_s for p in panel.points] == [p.p99_e2e_s for p in table]
    assert "offered" in panel.knee_text
