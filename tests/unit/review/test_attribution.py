"""Triage on regressions that are not built-in scenarios: attribution, refusals, decisions."""

import dataclasses

import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.triage_render import triage_text
from workbench.review import Measurement, record_from_mapping, triage
from workbench.review.diagnosis.attribution import attribution_rows, counterfactual, diff_table

H100 = load_hardware("h100-sxm")


def rec(model="gpt2", hw=H100, opts=None, quality_error=None, **slice_args):
    slice_args.setdefault("seq", 512)
    mapping = map_model(build_graph(model, **slice_args), hw, opts or MapOptions())
    return record_from_mapping(mapping, quality_error=quality_error)


def slow_hbm(hw, factor=0.6):
    memory = tuple(
        m.model_copy(update={"bandwidth_bytes_per_s": m.bandwidth_bytes_per_s * factor})
        if m.name == "hbm"
        else m
        for m in hw.memory
    )
    return hw.model_copy(update={"memory": memory})


@pytest.fixture(scope="module")
def base():
    return rec()


@pytest.fixture(scope="module")
def compound(base):
    opts = MapOptions(disabled_fusion=("gemm_epilogue",), dtype_overrides=(("lm_head", "fp32"),))
    return base, rec(opts=opts)


def test_compound_change_names_every_cause_with_shares_summing_to_total(compound):
    base, cand = compound
    att = counterfactual(base, cand)
    assert att is not None
    names = [s.change.name for s in att.shares]
    assert any("gemm_epilogue" in n for n in names)
    assert any("lm_head=fp32" in n for n in names)
    assert all(s.share_s > 0 for s in att.shares)
    total = cand.model.time_s - base.model.time_s
    assert att.total_s == pytest.approx(total, rel=1e-6)
    assert abs(sum(s.share_s for s in att.shares) - total) <= 0.02 * total
    fp32 = next(s for s in att.shares if "lm_head" in s.change.name)
    fusion = next(s for s in att.shares if "gemm_epilogue" in s.change.name)
    assert fp32.share_s > fusion.share_s  # the fp32 kernel carries most of it
    rows = attribution_rows(att)
    assert rows[-1]["change"] == "(interaction remainder)"


def test_compound_triage_text_shows_both_shares_and_declared_change(compound):
    text = triage_text(triage(*compound, changed="compiler", simulate=False))
    assert "attribution of" in text
    assert "fusion rule off: gemm_epilogue" in text
    assert "format override lm_head=fp32" in text
    assert "(interaction remainder)" in text
    assert "(unexplained remainder)" in text


def test_diff_table_sorted_with_layer_types_and_remainder(compound):
    rows = diff_table(*compound)
    kernels = [r for r in rows if r.level == "kernel"]
    assert [r.delta_s for r in kernels] == sorted((r.delta_s for r in kernels), reverse=True)
    assert kernels[0].name == "lm_head"
    assert kernels[0].mechanism == "precision_fallback"
    assert {r.level for r in rows} == {"kernel", "layer_type", "remainder"}
    explained = sum(r.delta_s for r in kernels) + rows[-1].delta_s
    total = compound[1].model.time_s - compound[0].model.time_s
    assert explained == pytest.approx(total)


def test_slower_hbm_is_a_platform_mechanism_not_a_prediction_gap():
    base = rec(phase="decode", context=512)
    cand = rec(phase="decode", context=512, hw=slow_hbm(H100))
    report = triage(base, cand, changed="hardware", simulate=False)
    assert report.first_failing.mechanism == "hardware_rate"
    assert report.first_failing.level == "hbm"
    assert report.owner.role == "platform owner"
    text = triage_text(report)
    assert "memory[hbm].bandwidth_bytes_per_s: 3350000000000.0 -> 2010000000000.0" in text


def test_seven_b_vs_thirteen_b_refused_even_with_workload_declared():
    small, big = rec("llama2-7b", seq=128), rec("llama2-13b", seq=128)
    for changed in (None, "workload", ("workload", "compiler")):
        report = triage(small, big, changed=changed, simulate=False)
        assert report.decision == "refused"
        assert any(m.startswith("workload.model") for m in report.mismatched_tags)


def test_several_changed_groups(base):
    cand = rec(opts=MapOptions(disabled_fusion=("gemm_epilogue",), launch="eager"))
    assert triage(base, cand, changed="compiler", simulate=False).decision == "refused"
    report = triage(base, cand, changed=("compiler", "runtime"), simulate=False)
    assert report.comparable
    assert report.changed == "compiler,runtime"
    assert {c.group for c in report.declared} == {"compiler", "runtime"}


def test_decision_flips_from_roll_back_to_ship_when_candidate_is_faster():
    a100 = rec(hw=load_hardware("a100-80gb"))
    h100 = rec()
    slower = triage(h100, a100, changed="hardware")
    faster = triage(a100, h100, changed="hardware")
    assert slower.decision == "roll back"
    assert faster.decision == "ship", faster.reasons
    assert faster.first_failing is None
    # each side simulated on its own hardware: the latencies differ
    assert faster.sla.baseline["p95_s"] != faster.sla.candidate["p95_s"]
    assert faster.sla.sides == {"baseline": "gpt2 on a100-80gb", "candidate": "gpt2 on h100-sxm"}


def test_batch_increase_is_compared_per_token_and_ships(base):
    cand = rec(batch=8)
    report = triage(base, cand, changed="workload")
    assert report.per_item
    assert cand.model.time_s > base.model.time_s  # the raw step is slower ...
    assert report.headline()["change"] < 0  # ... the time per token is not
    assert report.decision == "ship", report.reasons
    assert "time per token" in triage_text(report)


def test_missing_p99_cannot_sign_off(base):
    report = triage(base, base, simulate=False)
    assert report.decision == "cannot sign off"
    assert report.reasons[0].startswith("cannot sign off: missing p99")


def test_precision_change_needs_a_quality_metric(base):
    opts = MapOptions(dtype_overrides=(("*.mlp.*", "fp8"),))
    cand = rec(opts=opts)
    report = triage(base, cand, changed="compiler")
    assert report.decision in ("cannot sign off", "roll back")
    if report.decision == "cannot sign off":
        assert any("quality metric" in r for r in report.reasons)
    with_quality = triage(
        dataclasses.replace(base, model=dataclasses.replace(base.model, quality_error=0.001)),
        rec(opts=opts, quality_error=0.0011),
        changed="compiler",
    )
    assert not any("quality metric" in r for r in with_quality.reasons)


def test_measured_run_without_repeats_cannot_sign_off(base):
    once = Measurement(
        method="one run", backend="numpy", kernels=(), shapes=(), repeats=1, wall_s=0.1
    )
    measured = dataclasses.replace(base, measurement=once)
    report = triage(measured, measured)
    assert report.decision == "cannot sign off"
    assert any("repeats for the measured baseline run" in r for r in report.reasons)


def test_regression_within_measured_noise_is_not_a_regression(base):
    t = base.model.time_s

    def measured(scale, half):
        model = dataclasses.replace(
            base.model, time_s=t * scale, time_interval_s=(t * (scale - half), t * (scale + half))
        )
        return dataclasses.replace(base, model=model)

    noisy = triage(measured(1.0, 0.05), measured(1.03, 0.05), simulate=False)
    assert noisy.first_failing is None
    time_check = next(c for c in noisy.checks if c.metric == "time_s")
    assert time_check.status == "ok"
    assert "noise" in time_check.note
    tight = triage(measured(1.0, 0.001), measured(1.03, 0.001), simulate=False)
    assert next(c for c in tight.checks if c.metric == "time_s").status != "ok"


def test_second_regression_figure_is_labelled():
    base = rec(seq=128)
    cand = rec(seq=128, opts=MapOptions(disabled_fusion=("gemm_epilogue",)))
    text = triage_text(triage(base, cand, changed="compiler", simulate=False))
    lines = [ln for ln in text.splitlines() if "%" in ln and ln.lstrip().startswith("time_s")]
    for ln in lines:
        if "slice" not in ln:
            continue
        assert "worst validation slice:" in ln


def test_a_forced_tile_that_still_fits_is_tile_or_wave_quantization():
    from workbench.options import TileOverride

    tile = TileOverride(pattern="*.mlp.gate_proj", m=256, n=256, k=64)
    base = rec("llama2-7b")
    cand = rec("llama2-7b", opts=MapOptions(tiles=(tile,)))
    report = triage(base, cand, changed="compiler", simulate=False)
    assert report.first_failing.mechanism == "tile_wave_quantization"
    assert report.owner.role == "ML compiler engineer"
    assert cand.kernel("layers.0.mlp.gate_proj").fits


def test_several_changed_groups_from_the_cli(tmp_path, capsys):
    from workbench.cli import main
    from workbench.review import save_record

    base = rec()
    cand = rec(opts=MapOptions(disabled_fusion=("gemm_epilogue",), launch="eager"))
    b, c = save_record(base, tmp_path / "b.json"), save_record(cand, tmp_path / "c.json")
    assert main(["triage", str(b), str(c), "--changed", "compiler"]) == 1
    assert "REFUSED" in capsys.readouterr().out
    main(["triage", str(b), str(c), "--changed", "compiler", "--changed", "runtime"])
    out = capsys.readouterr().out
    assert "(changed: compiler,runtime)" in out
    assert "runtime: launch: graph -> eager" in out
    assert "compiler: fusion rule off: gemm_epilogue: absent -> present" in out


def test_sla_simulates_enough_requests_for_a_p99_with_intervals(base):
    report = triage(base, base)
    sla = report.sla
    assert sla.requests >= 1000  # >= 10 requests beyond the p99
    for side in ("baseline", "candidate"):
        lo, hi = sla.intervals[side]["p99_s"]
        assert lo <= sla.baseline["p99_s"] <= hi
