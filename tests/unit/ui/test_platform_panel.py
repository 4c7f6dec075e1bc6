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


def test_a_model_the_platform_cannot_hold_is_refused_with_the_reason():
    # issue 20: every widget applies the fit check of `map` and the explorer; Llama-2-7B's
    # 12.6 GiB of weights on a 1 GiB edge NPU has no latency curve (the panel drew p99s past
    # 10^5 s).
    import pytest

    from workbench.errors import WorkbenchError

    want = r"LatencyPanel: llama2-7b on edge-npu: .* does not fit on one edge-npu: needs 14\.55 GiB"
    with pytest.raises(WorkbenchError, match=want + r" per chip \(weights 12\.55 GiB"):
        LatencyPanel(model="llama2-7b", hardware="edge-npu", n_requests=120, prepare=False)
    panel = LatencyPanel(
        model="gpt2", hardware="edge-npu", sla_ms=5000, n_requests=120, rates=(0.01,),
        prepare=False,
    )  # fmt: skip
    points = panel.points
    assert not panel.refusal_text
    panel.controls["model"].value = "llama2-7b"
    assert "not drawn: llama2-7b on edge-npu" in panel.refusal_text
    assert "does not fit on one edge-npu" in panel.refusal_text
    assert panel.points is points  # nothing swept, nothing drawn for the refused setting
    assert panel.knee_text == ""  # no knee of the previous model left on screen
    assert panel.prepare_batches() == ()
    panel.controls["max_batch"].value = 8
    assert panel.points is points
    panel.controls["model"].value = "gpt2"
    assert panel.refusal_text == ""
    assert panel.knee_text  # drawn again, with its own knee line


def test_the_lessons_panels_are_not_refused():
    from workbench.hw import load_hardware
    from workbench.platform.compare import serving_refusal

    # lesson 10 (h100-sxm, 1,500 requests) and lesson 11 (gaudi3 and h200, 1,000 requests)
    for hw, n in (("h100-sxm", 1500), ("gaudi3", 1000), ("h200", 1000)):
        for trace in ("production-chat", "synthetic-fixed"):
            assert serving_refusal("llama2-7b", load_hardware(hw), trace=trace, n_requests=n) == ""
