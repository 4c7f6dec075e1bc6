"""Every row of the decision policy (workbench.review.decision.policy) is exercised here."""

import dataclasses
from types import SimpleNamespace

import pytest

from workbench.hw.loader import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.triage_render import triage_text
from workbench.review.decision.policy import (
    EVIDENCE,
    NOT_JUDGED,
    SLICES,
    change_kinds,
    is_training,
    judge_slices,
    needs,
    trade_offs,
)
from workbench.review.decision.signoff import missing_evidence
from workbench.review.decision.verdict import triage


@pytest.fixture(scope="module")
def run():
    cache = {}

    def get(hw="h100-sxm", seq=128, batch=1, quality=None, **opts):
        from workbench.review.records.store import record_from_mapping

        key = (hw, seq, batch, quality, tuple(sorted(opts.items())))
        if key not in cache:
            tp = opts.get("chips", 1)
            graph = build_graph("gpt2", seq=seq, batch=batch, tensor_parallel=tp)
            mapping = map_model(graph, load_hardware(hw), MapOptions(search="heuristic", **opts))
            cache[key] = record_from_mapping(mapping, quality_error=quality)
        return cache[key]

    return get


#: One comparison per kind of change: (kwargs of the baseline, of the candidate, --changed).
PAIRS = {
    "hardware": ({}, {"hw": "a100-80gb"}, "hardware"),
    "tensor_parallel": ({}, {"chips": 2}, "runtime"),
    "workload": ({}, {"batch": 4, "disabled_fusion": ("gemm_epilogue",)}, "workload,compiler"),
    "workload_only": ({}, {"seq": 256}, "workload"),
    "format_changed": ({}, {"dtype": "fp8"}, "compiler"),
    "model_format_changed": ({}, {"dtype": "fp8"}, "compiler"),
    "faster": ({"disabled_fusion": ("flash_attention",)}, {}, "compiler"),
}


def _report(run, kind, **kw):
    b, c, changed = PAIRS[kind]
    return triage(run(**b), run(**c), changed=changed, **kw)


@pytest.mark.parametrize("rule", NOT_JUDGED, ids=lambda r: f"{r.kind}-{r.metric}")
def test_a_metric_the_policy_does_not_judge_is_na_with_its_reason(run, rule):
    r = _report(run, rule.kind, simulate=False)
    assert rule.kind in change_kinds(r.baseline, r.candidate, r.matrix, per_item=r.per_item)
    check = next(k for k in r.checks if k.metric == rule.metric)
    assert check.status == "n/a"
    assert check.note in {x.why for x in NOT_JUDGED if x.metric == rule.metric}


def test_tensor_parallel_is_judged_on_latency_with_the_trade_off_stated():
    from workbench.review.records.store import record_from_mapping

    def tp(chips):
        graph = build_graph("llama2-7b", "decode", 8, 1024, tensor_parallel=chips)
        options = MapOptions(search="heuristic", chips=chips)
        return record_from_mapping(map_model(graph, load_hardware("h100-sxm"), options))

    r = triage(tp(2), tp(4), changed="runtime")
    assert r.decision == "ship", r.reasons  # NOTE: per-chip MFU fell: it is not judged here
    mfu = next(k for k in r.checks if k.metric == "mfu")
    assert mfu.status == "n/a"
    line = next(x for x in r.reasons if x.startswith("tensor parallel 2 -> 4 chips"))
    assert "per-request latency -" in line
    assert "throughput per chip -" in line


def test_the_workload_alone_is_owned_by_nobody(run):
    r = _report(run, "workload_only")
    assert r.owner is None
    assert r.decision == "ship"


def test_a_faster_candidate_ships_unless_a_slice_fails(run):
    r = _report(run, "faster")
    assert r.decision == "ship"
    slow = triage(run(), run(disabled_fusion=("gemm_epilogue",)), changed="compiler")
    assert slow.decision == "roll back"
    assert any("[worst slice: gpt2" in x for x in slow.reasons)  # the reason names the slice
    assert "decision driven by" in triage_text(slow)


@pytest.mark.parametrize("rule", EVIDENCE, ids=lambda r: r.kind)
def test_each_evidence_rule_asks_only_where_it_applies(run, rule):
    base = run()
    if rule.needs == "p99":
        cand = run(disabled_fusion=("gemm_epilogue",))
        assert any("p99" in m for m in missing_evidence(base, cand, simulated_p99=False))
        renamed = tuple(dataclasses.replace(k, name=k.name + ".backward") for k in cand.kernels)
        training = dataclasses.replace(cand, kernels=renamed)
        assert is_training(training)
        kinds = change_kinds(base, training, per_item=False)
        got = missing_evidence(base, training, simulated_p99=False, needs=needs(kinds))
        assert not any("p99" in m for m in got)
    elif rule.needs == "quality":
        cand = run(dtype="fp8")
        kinds = change_kinds(base, cand, per_item=False)
        assert any(
            "quality" in m
            for m in missing_evidence(base, cand, simulated_p99=True, needs=needs(kinds))
        )
        given = missing_evidence(
            run(quality=0.001), run(dtype="fp8", quality=0.002), simulated_p99=True
        )
        assert not any("quality" in m for m in given)
        flash = run(disabled_fusion=("flash_attention",))
        assert "format_changed" not in change_kinds(flash, base, per_item=False)
    else:
        measured = dataclasses.replace(base, measurement=SimpleNamespace(repeats=1))
        kinds = change_kinds(measured, measured, per_item=False)
        assert "measured" in kinds
        got = missing_evidence(measured, measured, simulated_p99=True, needs=needs(kinds))
        assert any("repeats" in m for m in got)


def test_missing_quality_is_printed_in_the_text(run):
    r = triage(run(), run(dtype="fp8"), changed="compiler", simulate=False)
    text = triage_text(r)
    assert "missing evidence (blocks a sign-off):" in text
    assert "quality metric" in text


def test_a_kernel_override_keeps_mfu_judged(run):
    # the denominator is the model's format (cost/utilisation.py): one fp32 kernel does not move
    # it, so MFU judges the change; it needs quality evidence all the same
    r = triage(run(), run(dtype_overrides=(("*down_proj*", "fp32"),)), changed="compiler",
               simulate=False)  # fmt: skip
    kinds = change_kinds(r.baseline, r.candidate, r.matrix, per_item=r.per_item)
    assert "format_changed" in kinds
    assert "model_format_changed" not in kinds
    assert next(k for k in r.checks if k.metric == "mfu").status != "n/a"


def _decode(quality, **opts):
    from workbench.review.records.store import record_from_mapping

    graph = build_graph("llama2-7b", "decode", 1, 512)
    mapping = map_model(graph, load_hardware("h100-sxm"), MapOptions(search="heuristic", **opts))
    return record_from_mapping(mapping, quality_error=quality)


@pytest.fixture(scope="module")
def int8_decode():
    # weight-only int8: decode streams half the weight bytes (faster), prefill dequantizes on
    # compute-bound GEMMs (slower): a change that targets decode, with a prefill trade-off
    base, cand = _decode(0.0002), _decode(0.0006, weight_dtype="int8")
    return triage(base, cand, changed="compiler")


@pytest.mark.parametrize("rule", SLICES, ids=lambda r: r.slice)
def test_each_slice_rule_judges_or_states_a_trade_off(int8_decode, run, rule):
    r = int8_decode
    rows = [x for x in r.matrix if (x["phase"] == "decode") == (rule.slice == "recorded_phase")]
    assert rows
    assert all(x["judged"] is rule.judged for x in rows)
    if rule.judged:
        # a regression on the recorded phase drives the decision and names its slice
        slow = triage(run(), run(disabled_fusion=("gemm_epilogue",)), changed="compiler")
        assert slow.decision == "roll back"
        assert any("gpt2 prefill" in x for x in slow.reasons)
        assert r.decision == "ship", r.reasons  # faster on every judged (decode) slice
    else:
        assert all(x["note"] == rule.why for x in rows)
        prefill = rows[0]
        assert prefill["candidate"]["time_s"] > 1.05 * prefill["baseline"]["time_s"]
        line = next(x for x in r.reasons if x.startswith("trade-off: "))
        assert prefill["slice"] in line
        assert "p95/p99" in line
        assert "trade-off, not judged" in triage_text(r)
        assert r.decision == "ship", r.reasons  # not rolled back on the other phase


def test_without_a_serving_simulation_the_trade_off_says_nothing_weighed_it(int8_decode):
    lines = trade_offs(int8_decode.matrix, "time_s", 0.01, simulated=False)
    assert len(lines) == 1
    assert "no serving simulation weighed the request mix" in lines[0]


def test_the_recorded_slice_is_always_judged():
    rows = judge_slices([{"slice": "a", "phase": "prefill"}, {"slice": "b", "phase": "decode"}])
    assert [x["judged"] for x in rows] == [True, False]
    assert judge_slices([]) == ()
