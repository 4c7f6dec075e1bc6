from workbench.ui.platform_panel import LatencyPanel


def test_panel_reruns_on_control_change():
    panel = LatencyPanel(model="gpt2", n_requests=200, sla_ms=5000)
    first = panel.points
    assert "knee" in panel.knee_text or "breaks" in panel.knee_text
    panel.controls["trace"].value = "synthetic-fixed"
    assert panel.points is not first
    assert panel.points[0].workload == "synthetic-fixed"
    assert panel.widget.children
