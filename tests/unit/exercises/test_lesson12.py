"""Lesson 12: the trajectory table, claims bound to it, checks and the lens widget."""

from workbench.exercises import lesson12
from workbench.ui.lens_panel import LensPanel

M, HW = "llama2-7b", "h100-sxm"


def test_table_has_every_step_and_pressure_follows_bytes_over_time():
    table = lesson12.trajectory_table(M, HW, "hbm")
    assert len(table) >= 5
    assert (table["pressure_pct"] > 0).all()
    assert set(table["serving"]) <= {"ok", "sla", "saturated"}
    for name, m in lesson12.variants(M, HW):
        lvl = m.hardware.level("hbm")
        want = m.total.bytes_at("hbm") / m.time_s / lvl.sustained_bytes_per_s * 100
        assert abs(table.loc[name, "pressure_pct"] - want) < 0.06


def test_claims_name_the_table_numbers():
    table = lesson12.trajectory_table(M, HW, "hbm")
    text = str(lesson12.trajectory_claim(table, "hbm"))
    assert f"{table.iloc[0]['step_ms']:g} ms" in text
    assert f"{int(table['saturated'].sum())} of the {len(table)} steps" in text
    serving = str(lesson12.serving_claim(table))
    for step in table.index[table["serving"] != "ok"]:
        assert f"`{step}`" in serving


def test_checks_pass_right_and_fail_wrong_without_leaking():
    table = lesson12.trajectory_table(M, HW, "hbm")
    ratio = table.loc["searched tiles", "step_ms"] / table.loc["int8 weights", "step_ms"]
    assert lesson12.check_speedup(ratio, model=M, hardware_name=HW).passed
    wrong = lesson12.check_speedup(ratio * 2, model=M, hardware_name=HW)
    assert not wrong.passed
    assert f"{ratio:.3f}" not in repr(wrong)
    kw = {"model": M, "hardware_name": HW, "level": "hbm", "step": "fusion"}
    # from the table alone: keeping the bytes, pressure scales as 1 / step time
    row = table.loc["fusion"]
    zone_ms = row["step_ms"] * row["pressure_pct"] / 100 / lesson12.SATURATION
    assert not row["saturated"]  # the exercise asks for a time no row shows
    assert lesson12.check_zone_step_ms(zone_ms, **kw).passed
    wrong = lesson12.check_zone_step_ms(row["step_ms"], **kw)
    assert not wrong.passed
    assert f"{zone_ms:.2f}" not in repr(wrong)


def test_lens_chart_marks_unstable_steps_from_the_simulation():
    table = lesson12.trajectory_table(M, HW, "hbm")
    spec = lesson12.lens_chart(M, HW, "hbm").to_dict()
    rows = [r for values in spec["datasets"].values() for r in values if "label" in r]
    labels = {r["variant"]: r["label"] for r in rows}
    assert "of sustained bandwidth" in " ".join(spec["title"]["subtitle"])
    ringed = {r["variant"] for r in rows if r["p99_unstable"]}
    assert ringed == set(table.index[table["serving"] != "ok"])
    assert any(
        {"filter": "datum.p99_unstable"} in layer.get("transform", []) for layer in spec["layer"]
    )
    for step in table.index[1:]:
        saturated = table.loc[step, "saturated"]
        stable = "saturated" if saturated else "headroom left"
        want = "unstable tail latency" if table.loc[step, "serving"] != "ok" else stable
        assert labels[step] == want


def test_panel_redraws_and_follows_hardware_levels():
    panel = LensPanel(model="gpt2", hardware="h100-sxm", level="hbm")
    before = panel.chart.to_dict()
    panel.controls["hardware"].value = "a100-80gb"
    assert panel.controls["level"].value in panel.controls["level"].options
    assert panel.chart.to_dict() != before
    panel.controls["level"].value = "l2"
    assert "l2" in str(panel.chart.to_dict()["title"])


def test_panel_model_change_draws_the_lens_first_then_the_same_final_chart():
    # issue 12: an unseen model shows the mapped lens at once (no rings), then the chart with
    # the serving replay's rings; the final chart is exactly lens_chart's.
    from workbench.exercises.lesson12 import lens_chart

    panel = LensPanel(model="gpt2", hardware="h100-sxm", level="hbm")
    specs: list[dict] = []
    seen: list[str] = []
    panel._status.observe(lambda c: seen.append(c["new"]), names="value")
    original = type(panel._chart).chart.fset

    def spy(live, new):
        specs.append(new.to_dict())
        original(live, new)

    panel._chart.__class__ = type("Spy", (type(panel._chart),), {"chart": property(
        type(panel._chart).chart.fget, spy)})  # fmt: skip
    panel.controls["hardware"].value = "a100-80gb"
    assert len(specs) == 2
    assert specs[0] == lens_chart("gpt2", "a100-80gb", "hbm", serving=False).to_dict()
    assert specs[1] == lens_chart("gpt2", "a100-80gb", "hbm").to_dict()
    interim = " ".join(specs[0]["title"]["subtitle"])
    assert "red ring" not in interim  # no replay yet: no ring is claimed either way
    assert "red ring" in " ".join(specs[1]["title"]["subtitle"])
    assert any("mapping the optimisation steps" in s for s in seen)
    assert any("replaying the serving trace" in s for s in seen)
    assert seen[-1] == ""


def test_panel_refuses_a_model_that_does_not_fit_with_the_reason():
    # issue 20: llama2-7b on tpu-v5e (16 GiB) was drawn with p99 up to 378,573 s
    import pytest

    from workbench.errors import WorkbenchError

    panel = LensPanel(model="llama2-7b", hardware="h100-sxm", level="hbm")
    before = panel.chart
    panel.controls["hardware"].value = "tpu-v5e"
    assert "does not fit on one tpu-v5e" in panel.refusal_text
    assert panel.chart is before  # kept, not redrawn with a meaningless step
    assert panel.update() is before
    panel.controls["hardware"].value = "h100-sxm"
    assert panel.refusal_text == ""
    with pytest.raises(WorkbenchError, match="does not fit"):
        LensPanel(model="llama2-7b", hardware="tpu-v5e")


def test_headroom_and_queue_claims_follow_the_table():
    table = lesson12.trajectory_table(M, HW, "hbm")
    text = lesson12.headroom_claim(table, "hbm").text
    left = 100 / table.iloc[-1]["pressure_pct"]
    assert f"x{left:.3g}" in text
    for step, win, bound in lesson12._kept_bytes(table):
        assert win <= bound
        assert f"{step} x{win:.3g}" in text
    queue = lesson12.queue_claim(table).text
    bad = table[table["serving"] != "ok"]
    good = table[table["serving"] == "ok"]
    if len(bad) and len(good) and bad["step_ms"].min() > good["step_ms"].max():
        assert "property of the request queue" in queue


def test_headroom_exercise_is_one_over_the_pressure():
    table = lesson12.trajectory_table(M, HW, "hbm")
    want = 100 / table.loc["searched tiles", "pressure_pct"]
    assert lesson12.check_headroom(want, model=M, hardware_name=HW, level="hbm", strict=False)
    assert not lesson12.check_headroom(
        want * 1.1, model=M, hardware_name=HW, level="hbm", strict=False
    )


def test_a_level_without_bytes_bounds_nothing():
    # no division by a zero pressure, no inf printed as a bound
    table = lesson12.trajectory_table(M, HW, "hbm").copy()
    table["pressure_pct"] = 0.0
    table["gb"] = 0.0
    text = lesson12.headroom_claim(table, "hbm").text
    assert "bounds nothing" in text
    assert "inf" not in text


def test_the_lens_axis_has_one_name_tied_to_mbu():
    # issue 20: the axis had six names ("working-set pressure", "achieved bandwidth" ...)
    import json
    from pathlib import Path

    nb = Path(__file__).resolve().parents[3] / "lessons" / "12-the-bandwidth-lens.ipynb"
    text = " ".join(
        " ".join("".join(c["source"]).split())
        for c in json.loads(nb.read_text())["cells"]
        if c["cell_type"] == "markdown"
    )
    for alias in ("working-set pressure", "bandwidth utilisation", "bandwidth utilization"):
        assert alias not in text
    assert "MBU" in text
    chart = lesson12.lens_figure("llama2-7b", "h100-sxm", "hbm")
    assert "hbm pressure = MBU" in json.dumps(chart.chart.to_dict())
