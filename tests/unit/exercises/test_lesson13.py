"""Lesson 13: energy table bound to the loop-nest model, claims, checks, chart and widget."""

import pytest

from workbench.errors import WorkbenchError
from workbench.exercises import lesson13
from workbench.hw import load_hardware
from workbench.report.charts.dataflow import energy_by_level_chart
from workbench.scheduling.loopnest import DATAFLOWS, access_words, cost, loop_nest
from workbench.ui.dataflow_panel import DataflowPanel


def test_energy_is_words_times_pj_per_byte():
    hw = load_hardware("eyeriss")
    table = lesson13.energy_table("alexnet conv3")
    nest = loop_nest(lesson13.LAYERS["alexnet conv3"], "row_stationary", hw)
    words = access_words(nest, hw)
    want = words["dram"] * 2 * hw.offchip.energy_pj_per_byte / 1e6
    assert table.loc["row_stationary", "dram"] == pytest.approx(want, abs=1e-3)
    assert list(table.index) == list(DATAFLOWS)
    assert (table[["mac", "spad", "noc", "glb", "dram"]] >= 0).all().all()
    assert ((table["utilisation"] > 0) & (table["utilisation"] <= 1)).all()
    c = cost(nest, hw)
    assert table.loc["row_stationary", "cycles"] == c.cycles
    assert table.loc["row_stationary", "pes_used"] == c.pes_used


def test_conv1_runs_at_stride_4_and_the_table_shows_pe_use():
    assert lesson13.LAYERS["alexnet conv1"].U == 4
    table = lesson13.energy_table("alexnet conv1")
    pes = table.loc["weight_stationary", "pes_used"]
    assert table.loc["weight_stationary", "pe_utilisation"] == pytest.approx(pes / 168, abs=1e-3)
    text = str(lesson13.utilisation_claim(table, "alexnet conv1"))
    assert f"weight_stationary uses {int(pes)} of 168 PEs" in text
    assert f"Fastest: **{table['cycles'].idxmin()}**" in text
    assert f"lowest energy: **{table['total'].idxmin()}**" in text


def test_hand_count_exercise():
    # for k in 2: for p in 3 with a 1-word buffer: W changes twice, I every iteration
    assert lesson13.check_hand_count(2 + 6).passed
    wrong = lesson13.check_hand_count(12)
    assert not wrong.passed
    assert "8" not in repr(wrong)


def test_claim_follows_the_table():
    table = lesson13.energy_table("alexnet conv1")
    text = str(lesson13.energy_claim(table, "alexnet conv1"))
    assert f"**{table['total'].idxmin()}** spends least" in text
    assert f"**{table['total'].idxmax()}** most" in text


def test_checks_accept_synonyms_and_do_not_leak():
    best = lesson13.energy_table("alexnet conv1")["total"].idxmin()
    short = {
        "weight_stationary": "WS",
        "output_stationary": "os",
        "row_stationary": "Row Stationary",
    }
    assert lesson13.check_best_dataflow(short[best], layer="alexnet conv1").passed
    other = next(d for d in DATAFLOWS if d != best)
    wrong = lesson13.check_best_dataflow(other, layer="alexnet conv1")
    assert not wrong.passed
    assert best not in repr(wrong)
    pes = loop_nest(lesson13.LAYERS["alexnet conv1"], "weight_stationary", load_hardware("eyeriss"))
    assert lesson13.check_pes_used(
        pes.pes_used, layer="alexnet conv1", dataflow="weight_stationary"
    ).passed
    with pytest.raises(WorkbenchError, match="layer"):
        lesson13.energy_table("vgg")


def test_chart_rejects_bad_energy_and_panel_redraws():
    with pytest.raises(WorkbenchError, match="energy"):
        energy_by_level_chart([{"dataflow": "x", "level": "dram", "energy_uj": -1.0}])
    panel = DataflowPanel(layer="alexnet conv3", dataflow="row_stationary")
    nest, chart = panel.nest_html, panel.chart.to_dict()
    panel.controls["layer"].value = "alexnet conv1"
    assert panel.nest_html != nest
    assert panel.chart.to_dict() != chart
    status = panel.status_text
    panel.controls["dataflow"].value = "weight_stationary"
    assert panel.status_text != status
    assert "of the array" in panel.status_text
    assert "weight_stationary" in str(panel.chart.to_dict()["encoding"]["opacity"])


def test_profile_claim_reads_the_profile():
    hw = load_hardware("eyeriss")
    me = hw.matrix_engine
    text = str(lesson13.profile_claim())
    assert f"= {me.native_tile_m * me.native_tile_n} PEs" in text
    ratio = hw.offchip.energy_pj_per_byte / hw.memory[0].energy_pj_per_byte
    assert f"DRAM x{ratio:g}" in text
    table = lesson13.profile_table()
    assert list(table.index) == ["ifmap_spad", "filter_spad", "psum_spad", "noc", "glb", "dram"]
    assert list(table.loc[["ifmap_spad", "filter_spad", "psum_spad"], "capacity_words"]) == [
        12, 224, 24
    ]  # fmt: skip


def test_chart_keeps_table_order_and_short_ticks():
    spec = lesson13.energy_chart("alexnet conv1").to_dict()
    assert spec["encoding"]["y"]["sort"] == list(DATAFLOWS)
    assert spec["encoding"]["x"]["axis"]["format"] == "~s"
    assert "noc" in spec["encoding"]["color"]["scale"]["domain"]


# --- section 3: Timeloop's own files (issue 28, point 4) ---------------------------------------
def test_beat_greedy_check_passes_the_search_and_refuses_greedy_itself():
    from workbench.exercises import reveal
    from workbench.exercises._lesson13_timeloop import _greedy_and_best
    from workbench.scheduling.timeloop.mapfmt import map_yaml

    ex = lesson13.timeloop_exercise("05")
    greedy, best = _greedy_and_best("05")
    assert not lesson13.check_beats_greedy(None).answered
    same = lesson13.check_beats_greedy(map_yaml(ex.arch, ex.problem, greedy.mapping))
    assert not same.passed
    assert "greedy's" in repr(same)
    assert "mapping:" in reveal("mapping with lower energy-delay than the greedy one")
    assert lesson13.check_beats_greedy(map_yaml(ex.arch, ex.problem, best.mapping)).passed
    broken = lesson13.check_beats_greedy("mapping:\n- target: Nowhere\n  type: temporal\n")
    assert not broken.passed
    assert "Nowhere" in repr(broken)


def test_claims_that_answer_an_exercise_wait_for_its_check():
    claim = lesson13.move_claim(0)
    wrong = lesson13.check_best_dataflow("output_stationary", layer="alexnet conv1")
    right_name = str(lesson13.energy_table("alexnet conv1")["total"].idxmin())
    right = lesson13.check_best_dataflow(right_name, layer="alexnet conv1")
    unanswered = lesson13.check_best_dataflow(None, layer="alexnet conv1")
    for hidden in (unanswered, *([wrong] if not wrong.passed else [])):
        text = lesson13.after(hidden, claim, exercise=2).text
        assert right_name not in text
        assert "Exercise 2" in text
    assert lesson13.after(right, claim, exercise=2) is claim
    assert lesson13.after("reveal", claim, exercise=2) is claim


def test_reference_table_is_the_model_beside_timeloops_stats():
    ex = lesson13.timeloop_exercise("06")
    t = lesson13.reference_table(ex)
    assert t.loc["cycles", "workbench"] == t.loc["cycles", "timeloop"] == "5.50502e+06"
    for row in t.index:
        ours, theirs = float(t.loc[row, "workbench"]), float(t.loc[row, "timeloop"])
        assert ours == pytest.approx(theirs, rel=0.01, abs=0.006), row
    text = lesson13.timeloop_claim(ex).text
    assert "the reference's exactly" in text
    assert "mm²" in text
