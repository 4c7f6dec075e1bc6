"""MBU heads decode and every bandwidth-bound slice in triage's text output and matrix."""

import dataclasses

import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.triage_render import triage_document, triage_text
from workbench.review import record_from_mapping, triage
from workbench.review.records.mbu import bandwidth_bound, bandwidth_share, record_mbu

FP32_MLP = MapOptions(search="heuristic", dtype_overrides=(("*.mlp.*", "fp32"),))


def _record(phase: str, options: MapOptions):
    kw = {"context": 512} if phase == "decode" else {"seq": 512}
    g = build_graph("llama2-7b", phase=phase, **kw)
    return record_from_mapping(map_model(g, load_hardware("h100-sxm"), options))


@pytest.fixture(scope="module")
def decode_pair():
    return _record("decode", MapOptions(search="heuristic")), _record("decode", FP32_MLP)


@pytest.fixture(scope="module")
def prefill_pair():
    return _record("prefill", MapOptions(search="heuristic")), _record("prefill", FP32_MLP)


def test_decode_headline_leads_with_mbu(decode_pair):
    base, cand = decode_pair
    text = triage_text(triage(base, cand, changed="compiler", simulate=False))
    head = next(line for line in text.splitlines() if line.startswith("time "))
    assert f"MBU {base.model.mbu:.1%} -> {cand.model.mbu:.1%}" in head
    assert head.index("MBU") < head.index("MFU")
    assert "bandwidth-bound slices" in text


def test_compute_bound_prefill_headline_has_mfu_only_but_lists_its_decode_slice(prefill_pair):
    base, cand = prefill_pair
    assert not bandwidth_bound(base)
    report = triage(base, cand, changed="compiler", simulate=False)
    text = triage_text(report)
    head = next(line for line in text.splitlines() if line.startswith("time "))
    assert "MBU" not in head
    assert "MFU" in head
    lines = text.splitlines()
    at = lines.index(next(x for x in lines if x.startswith("bandwidth-bound slices")))
    assert " decode " in lines[at + 1]
    assert "MBU" in lines[at + 1]


def test_matrix_rows_carry_mbu_and_the_bandwidth_fraction(decode_pair):
    base, cand = decode_pair
    doc = triage_document(triage(base, cand, changed="compiler", simulate=False))
    first = doc["validation_matrix"][0]
    assert first["baseline"]["mbu"] == pytest.approx(base.model.mbu)
    assert 0.5 <= first["baseline"]["bandwidth_fraction"] <= 1.0
    for row in doc["validation_matrix"]:
        for side in ("baseline", "candidate"):
            assert 0.0 <= row[side]["mbu"] <= 1.0


def test_mbu_of_a_version_2_record_comes_from_its_embedded_profile(decode_pair):
    base, _ = decode_pair
    old = dataclasses.replace(
        base, schema_version=2, model=dataclasses.replace(base.model, mbu=None)
    )
    assert record_mbu(old) == pytest.approx(base.model.mbu, rel=1e-9)
    assert bandwidth_share(base) > 0.5
