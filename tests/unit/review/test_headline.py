"""The headline follows the attribution; tags compare after normalisation (issue 18)."""

import dataclasses
import json

import pytest

from workbench.cli import main
from workbench.hw.loader import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.triage_render import triage_document, triage_text
from workbench.review.decision.signoff import precision_changed
from workbench.review.decision.verdict import compare_tags, triage
from workbench.review.diagnosis.headline import family_of, natural_key
from workbench.review.records.store import record_from_mapping


@pytest.fixture(scope="module")
def run():
    cache = {}

    def get(model="gpt2", seq=128, quality=None, **opts):
        key = (model, seq, quality, tuple(sorted(opts.items())))
        if key not in cache:
            graph = build_graph(model, seq=seq)
            options = MapOptions(search="heuristic", **opts)
            mapping = map_model(graph, load_hardware("h100-sxm"), options)
            cache[key] = record_from_mapping(mapping, quality_error=quality)
        return cache[key]

    return get


def test_natural_sort_puts_layer_2_before_layer_10():
    names = ["layers.10.mlp", "layers.2.mlp", "layers.1.mlp"]
    assert sorted(names, key=natural_key) == ["layers.1.mlp", "layers.2.mlp", "layers.10.mlp"]
    assert family_of("layers.31.mlp.down_proj") == "layers.*.mlp.down_proj"


def test_headline_is_the_largest_share_not_the_first_kernel(run):
    # NOTE: the case: fp32 down_proj carries ~96%, the lost epilogue ~4%; the old
    # headline named fusion_broken at layers.0.attn.q_proj (first in execution order)
    base = run()
    cand = run(disabled_fusion=("gemm_epilogue",), dtype_overrides=(("*down_proj*", "fp32"),))
    r = triage(base, cand, changed="compiler", simulate=False)
    ff = r.first_failing
    assert ff.mechanism == "precision_fallback"
    assert ff.family == "layers.*.mlp.down_proj"
    assert ff.count == 12
    assert 0.8 < ff.share <= 1.0
    assert f"{ff.share:.1%}" in ff.evidence
    assert r.mechanisms[0].share == max(m.share for m in r.mechanisms)
    text = triage_text(r)
    assert "precision_fallback at layers.*.mlp.down_proj x12" in text
    doc = triage_document(r)["first_failing"]
    assert doc["family"] == "layers.*.mlp.down_proj"
    assert doc["mechanisms"][0]["mechanism"] == "precision_fallback"


def test_a_group_carries_every_mechanism_that_applies(run):
    from workbench.review.diagnosis.first_failing import align

    base = run()
    cand = run(disabled_fusion=("gemm_epilogue",), dtype_overrides=(("*down_proj*", "fp32"),))
    group = next(g for g in align(base, cand) if g.anchor == "layers.0.mlp.down_proj")
    kinds = [m for m, _, _ in group.mechanisms]
    assert kinds[0] == "fusion_broken"
    assert "precision_fallback" in kinds
    assert "fp32" in group.evidence_for("precision_fallback")


def test_explicit_defaults_are_not_a_tag_mismatch(run):
    base = run()
    spelled = run(dtype="bf16", layout="auto", launch="graph", chips=1)
    assert compare_tags(base, spelled) == ()
    r = triage(base, spelled, simulate=False)
    assert r.comparable
    assert r.first_failing is None


def test_enabling_flash_attention_is_no_precision_change(run):
    slow = run(disabled_fusion=("flash_attention",))
    fast = run()
    assert not precision_changed(slow, fast)
    r = triage(slow, fast, changed="compiler", simulate=False)
    assert not any("quality" in m for m in r.missing)
    assert precision_changed(fast, run(dtype_overrides=(("*q_proj", "fp32"),)))


def test_changed_takes_a_comma_list_and_the_refusal_names_the_groups(run):
    base = run()
    cand = run(disabled_fusion=("gemm_epilogue",), launch="eager")
    refused = triage(base, cand, changed="compiler", simulate=False)
    assert refused.decision == "refused"
    assert any("tags differ in runtime" in r for r in refused.reasons)
    both = triage(base, cand, changed="compiler,runtime", simulate=False)
    assert both.comparable
    assert "tags differ in runtime: if deliberate, declare --changed runtime" in triage_text(
        refused
    )


def test_cli_changed_comma_list_and_quality_metric(tmp_path, capsys):
    common = ["run", "--model", "gpt2", "--seq", "64", "--search", "heuristic"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main([*common, "--quality-metric", "quality_error=0.001", "--record", str(a)]) == 0
    assert json.loads(a.read_text())["model"]["quality_error"] == 0.001
    assert (
        main([*common, "--launch", "eager", "--no-fusion", "gemm_epilogue", "--record", str(b)])
        == 0
    )
    capsys.readouterr()
    main(["triage", str(a), str(b), "--changed", "compiler,runtime"])
    out = capsys.readouterr().out
    assert "REFUSED" not in out
    assert "validation matrix" in out
    assert main([*common, "--quality-metric", "quality_error=nan", "--record", str(a)]) == 2
    assert "VALUE must be a finite number" in capsys.readouterr().err


def test_a_kernel_under_the_noise_never_anchors(run):
    base = run()
    cand = run(disabled_fusion=("gemm_epilogue",))
    m = cand.model
    wide = dataclasses.replace(m, time_interval_s=(m.time_s * 0.5, m.time_s * 1.5))
    noisy = dataclasses.replace(cand, model=wide)
    r = triage(base, noisy, changed="compiler", simulate=False)
    assert r.first_failing is None or r.first_failing.delta_s > r.noise * base.model.time_s


def test_text_diff_is_grouped_by_family_with_counts_in_natural_order(run):
    base = run()
    cand = run(disabled_fusion=("gemm_epilogue",), dtype_overrides=(("*down_proj*", "fp32"),))
    r = triage(base, cand, changed="compiler", simulate=False)
    text = triage_text(r)
    assert "layers.*.mlp.down_proj x12" in text
    assert "[fusion_broken, precision_fallback]" in text  # both mechanisms of the family
    kernels = [d.name for d in r.diff if d.level == "kernel" and "down_proj" in d.name]
    assert kernels[:3] == [
        "layers.0.mlp.down_proj",
        "layers.1.mlp.down_proj",
        "layers.2.mlp.down_proj",
    ]


def test_quality_evidence_from_a_file(tmp_path, capsys):
    common = ["run", "--model", "gpt2", "--seq", "64", "--search", "heuristic"]
    good, bad, rec = tmp_path / "q.json", tmp_path / "bad.json", tmp_path / "r.json"
    good.write_text('{"quality_error": 0.004}')
    bad.write_text('{"quality_error": -1}')
    assert main([*common, "--quality-file", str(good), "--record", str(rec)]) == 0
    assert json.loads(rec.read_text())["model"]["quality_error"] == 0.004
    assert main([*common, "--quality-file", str(bad), "--record", str(rec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--quality-file" in err[0]
