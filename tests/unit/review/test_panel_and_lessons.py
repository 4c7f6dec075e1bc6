import pytest

from workbench.exercises import ExerciseError
from workbench.exercises.lesson06 import check_first_failing
from workbench.exercises.lesson07 import (
    check_dominant_bottleneck,
    check_release_decision,
    dominant_bottleneck,
    review_mapping,
)
from workbench.review import save_record
from workbench.ui import TriagePanel


def test_panel_loads_scenario_and_follows_dropdowns():
    p = TriagePanel(scenario="epilogue-fusion")
    assert p.report.first_failing.mechanism == "fusion_broken"
    assert "fusion_broken" in p.first_failing.value
    assert "ML compiler engineer" in p.owners.value
    p.scenario.value = "barrier-per-layer"
    assert p.report.owner.role == "runtime systems engineer"
    p.changed.value = "(none)"
    assert not p.report.comparable
    assert "REFUSED" in p.headline.value


def test_panel_loads_records(tmp_path, scenario_records):
    base, cand = scenario_records("conv-layout")
    a, b = save_record(base, tmp_path / "a.json"), save_record(cand, tmp_path / "b.json")
    p = TriagePanel(scenario=None)
    p.changed.value = "compiler"
    r = p.load_records(a, b)
    assert r.first_failing.mechanism == "layout_transform_inserted"
    assert "pass" in p.branches.value


def test_lesson06_check():
    assert check_first_failing("long-seq-tile", "tile_spills_sram", "ML compiler engineer")
    wrong = check_first_failing(
        "long-seq-tile", "fusion_broken", "ML compiler engineer", strict=False
    )
    assert not wrong
    with pytest.raises(ExerciseError):
        check_first_failing("long-seq-tile", "fusion_broken", "x", strict=True)


def test_lesson07_checks():
    m = review_mapping("gpt2", seq=256)
    assert check_dominant_bottleneck(m, dominant_bottleneck(m))
    assert not check_dominant_bottleneck(m, "nonsense", strict=False)
    assert check_release_decision("unchanged", "ship")
    assert not check_release_decision("eager-launch", "ship", strict=False)


def test_show_pack_renders_the_page_in_an_isolated_frame():
    from workbench.ui.triage_panel import show_pack

    page = "<!doctype html><html><body><h1>x &amp; <b>y</b></h1><script>1</script></body></html>"
    shown = show_pack(page).data
    assert '<iframe sandbox="allow-scripts" srcdoc=' in shown
    assert "<script>" not in shown  # the page is escaped into srcdoc, never run by the notebook
    assert "&lt;script&gt;" in shown


def test_synthetic_scenario_traces_triage_like_the_scenario(tmp_path):
    from workbench.evidence import read_trace
    from workbench.review import SCENARIOS, record_from_trace, synthetic_scenario_traces, triage

    pair = synthetic_scenario_traces("barrier-per-layer", tmp_path, fmt="nsys")
    assert pair.baseline_trace.suffix == ".sqlite"
    base = record_from_trace(read_trace(pair.baseline_trace), pair.baseline_mapping)
    cand = record_from_trace(read_trace(pair.candidate_trace), pair.candidate_mapping)
    report = triage(base, cand, changed=pair.changed, simulate=False)
    assert report.first_failing.mechanism == SCENARIOS["barrier-per-layer"].expected_mechanism
