"""Prediction exercises: the answer is the direction the library computes (issue 20)."""

from __future__ import annotations

import pytest

from workbench.exercises import lesson04, lesson05
from workbench.exercises._check import direction
from workbench.exercises._shared import mapping
from workbench.options import MapOptions


def test_direction_words():
    assert direction(1.0, 0.9) == "faster"
    assert direction(1.0, 1.1) == "slower"
    assert direction(1.0, 1.004) == "same"
    assert direction(0.0, 1.0) == "same"


@pytest.mark.parametrize("rule", ["flash_attention", "gemm_epilogue", "layout_fold"])
def test_fusion_prediction_follows_the_mapper(rule):
    on = mapping("llama2-7b", "h100-sxm", phase="decode", seq=2048)
    off = mapping(
        "llama2-7b", "h100-sxm", phase="decode", seq=2048,
        options=MapOptions(disabled_fusion=(rule,)),
    )  # fmt: skip
    want = direction(on.time_s, off.time_s)
    assert lesson04.check_fusion_effect(want, rule=rule, strict=False)
    wrong = "faster" if want != "faster" else "slower"
    assert not lesson04.check_fusion_effect(wrong, rule=rule, strict=False)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_format_prediction_follows_the_mapper(phase):
    base = mapping("llama2-7b", "h100-sxm", phase=phase, seq=2048)
    quant = mapping(
        "llama2-7b", "h100-sxm", phase=phase, seq=2048, options=MapOptions(weight_dtype="int8")
    )
    want = direction(base.time_s, quant.time_s)
    assert lesson05.check_format_effect(want, weight_dtype="int8", phase=phase, strict=False)
    assert lesson05.check_format_effect("quicker" if want == "faster" else want,
                                        weight_dtype="int8", phase=phase, strict=False)  # fmt: skip


def test_level_words():
    from workbench.exercises._check import FIGURE

    assert FIGURE.check("x", "higher", 1.0, 2.0, hint="h", strict=False)
    assert FIGURE.check("x", "down", 2.0, 1.0, hint="h", strict=False)
    assert FIGURE.check("x", "same", 1.0, 1.001, hint="h", strict=False)
    assert not FIGURE.check("x", "higher", 2.0, 1.0, hint="h", strict=False)


def test_tail_and_pressure_predictions_follow_the_tables():
    from workbench.exercises import lesson10, lesson12

    table = lesson10.trace_table("llama2-7b", "h100-sxm", 5.0)
    synth, prod = table.loc["synthetic-fixed", "p99_s"], table.loc["production-chat", "p99_s"]
    want = "lower" if synth < prod else "higher"
    assert lesson10.check_tail_prediction(want, strict=False)
    lens = lesson12.trajectory_table("llama2-7b", "h100-sxm", "hbm")
    a, b = lens.loc["searched tiles", "pressure_pct"], lens.loc["int8 weights", "pressure_pct"]
    assert lesson12.check_pressure_prediction("lower" if b < a else "higher", strict=False)


def test_bottleneck_prediction_takes_the_batch():
    from workbench.exercises.lesson02 import check_bottleneck

    m = mapping("llama2-7b", "h100-sxm", phase="decode", batch=64, seq=2048)
    cls = m.kernel("layers.0.mlp.up_proj").cost.bottleneck.split(":")[0]
    assert check_bottleneck(cls, kernel="layers.0.mlp.up_proj", phase="decode", batch=64,
                            hardware_name="h100-sxm", strict=False)  # fmt: skip


def test_stall_prediction_follows_the_scenario_records():
    from workbench.exercises.lesson06 import check_stall_prediction
    from workbench.review import build_scenario

    base, cand = build_scenario("eager-launch")
    before, after = base.model.stall()["attention"], cand.model.stall()["attention"]
    want = "same" if abs(after / before - 1) <= 0.005 else ("higher" if after > before else "lower")
    assert check_stall_prediction(want, scenario="eager-launch", strict=False)
    wrong = "higher" if want != "higher" else "lower"
    assert not check_stall_prediction(wrong, scenario="eager-launch", strict=False)


@pytest.mark.parametrize("simulate", [False, True])
def test_control_decision_follows_triage(simulate):
    from workbench.exercises.lesson07 import check_release_decision
    from workbench.review import SCENARIOS, build_scenario, triage

    base, cand = build_scenario("unchanged")
    want = triage(base, cand, changed=SCENARIOS["unchanged"].changed, simulate=simulate).decision
    assert check_release_decision("unchanged", want, simulate=simulate, strict=False)
    wrong = "roll back" if want != "roll back" else "ship"
    assert not check_release_decision("unchanged", wrong, simulate=simulate, strict=False)


def test_control_decisions_differ_with_the_simulation():
    # the panel's prediction is only worth asking if the panel's answer is not the CLI's
    from workbench.exercises.lesson07 import check_release_decision

    on = check_release_decision("unchanged", None, simulate=True, strict=False).expected
    off = check_release_decision("unchanged", None, simulate=False, strict=False).expected
    assert on != off


@pytest.mark.parametrize(("first", "second"), [((1, 128), (8, 16)), ((1, 16), (64, 2048))])
def test_plan_prediction_follows_the_sweep(first, second):
    from workbench.exercises.lesson09 import check_plan_prediction, plan_table

    table = plan_table("llama2-7b", "h100-sxm", batches=(1, 8, 64), seqs=(16, 128, 2048))
    same = table.loc[first, "best_tile"] == table.loc[second, "best_tile"]
    want, wrong = ("same", "different") if same else ("different", "same")
    assert check_plan_prediction(want, first=first, second=second, strict=False)
    assert not check_plan_prediction(wrong, first=first, second=second, strict=False)


@pytest.mark.parametrize("platforms", [("h200", "gaudi3"), ("h100-sxm", "a100-80gb")])
def test_gemm_prediction_follows_the_gemm_table(platforms):
    from workbench.exercises.lesson11 import check_gemm_prediction, gemm_table

    table = gemm_table(platforms, n=8192)
    want = str(table["tflops"].idxmax())
    wrong = next(p for p in platforms if p != want)
    assert check_gemm_prediction(want, platforms=platforms, strict=False)
    assert not check_gemm_prediction(wrong, platforms=platforms, strict=False)


def test_lesson05_takeaway_reads_the_tables():
    d = lesson05.format_table("llama2-7b", "h100-sxm", phase="decode")
    p = lesson05.format_table("llama2-7b", "h100-sxm", phase="prefill")
    text = lesson05.takeaway_claim(d, p).text
    assert f"x{d.loc['int8 weight-only', 'speedup']:g}" in text
    worse = p.loc["int8 weight-only", "speedup"] < 0.99
    assert ("slow a compute-bound prefill" in text) == worse


def test_lesson02_peak_claim_remaps_a_faster_compute_chip():
    from workbench.exercises import lesson02

    text = lesson02.peak_claim("gpt2", "h100-sxm", factor=2.0, seq=256).text
    assert "x2 the matrix peak" in text
    assert "decode x" in text
    assert "prefill x" in text
