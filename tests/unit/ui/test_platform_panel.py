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
    # both loads meet the SLA: the highest swept rate is not a knee, and the panel says so
    assert "no knee in the swept range" in panel.knee_text
    assert "up to 4 requests/s" in panel.knee_text


def test_prepared_batch_limits_give_the_same_points_as_a_fresh_sweep():
    # issue 12: the panel sweeps the slider's other batch limits ahead so the slider only
    # redraws; the numbers must be those a fresh, uncached sweep of the same setting gives.
    from workbench.exercises import lesson10

    rates = (1.0, 4.0)
    panel = LatencyPanel(model="gpt2", sla_ms=5000, n_requests=120, rates=rates, max_batch=8)
    swept = panel.prepare_batches()
    assert swept == (4, 16, 32, 64)  # nearest first, the current one excluded
    for max_batch in (4, 16, 8):  # 4 used to build a batch grid (1, 1, 4) and raise
        panel.controls["max_batch"].value = max_batch
        lesson10.panel_sweep.cache_clear()
        fresh = lesson10.sweep("gpt2", "h100-sxm", rates, n=120, max_batch=max_batch)
        assert panel.points == fresh


def test_sla_change_redraws_without_a_new_sweep():
    panel = LatencyPanel(model="gpt2", sla_ms=5000, n_requests=120, rates=(1.0,), prepare=False)
    points, before = panel.points, panel._chart.chart.to_dict()
    panel.controls["sla_ms"].value = 1000
    assert panel.points is points  # the same cached sweep; only the SLA line moved
    assert panel._chart.chart.to_dict() != before


def test_new_workload_says_computing_then_clears():
    panel = LatencyPanel(model="gpt2", sla_ms=5000, n_requests=120, rates=(1.0,), prepare=False)
    seen: list[str] = []
    panel._status.observe(lambda change: seen.append(change["new"]), names="value")
    disabled: list[bool] = []
    panel.controls["model"].observe(lambda c: disabled.append(c["new"]), names="disabled")
    panel.controls["trace"].value = "synthetic-fixed"
    assert seen[0].startswith("<i>computing: gpt2 on h100-sxm (synthetic-fixed)")
    assert seen[-1] == ""
    assert disabled == [True, False]
    assert not panel.controls["model"].disabled
