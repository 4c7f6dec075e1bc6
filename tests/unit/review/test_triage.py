import pytest

from workbench.report.triage_render import triage_document
from workbench.review import (
    JSON_KEYS,
    SCENARIOS,
    compare_tags,
    find_first_failing,
    triage,
)

INJECTED = [n for n in SCENARIOS if n != "unchanged"]


def test_at_least_six_injected_scenarios():
    assert len(INJECTED) >= 6
    mechanisms = {SCENARIOS[n].expected_mechanism for n in INJECTED}
    assert {
        "fusion_broken",
        "tile_spills_sram",
        "precision_fallback",
        "layout_transform_inserted",
        "launch_sync_overhead",
    } <= mechanisms


@pytest.mark.parametrize("name", INJECTED)
def test_triage_names_injected_mechanism_and_owner(scenario_records, name):
    s = SCENARIOS[name]
    base, cand = scenario_records(name)
    report = triage(base, cand, changed=s.changed, simulate=False)
    assert report.comparable
    assert report.first_failing is not None
    assert report.first_failing.mechanism == s.expected_mechanism
    assert report.owner.role == s.expected_owner
    assert report.first_failing.rows  # sheet rows as evidence
    assert report.decision in ("roll back", "ship behind a flag")


def test_tile_scenario_fits_short_and_spills_long(scenario_records):
    base, cand = scenario_records("long-seq-tile")
    k = cand.kernel("layers.0.attn.sdpa")
    assert not k.fits
    assert k.bottleneck == "capacity"
    assert base.kernel("layers.0.attn.sdpa").fits
    from workbench.review import SCENARIOS

    s = SCENARIOS["long-seq-tile"]
    (tile,) = s.candidate.tiles  # the story's heuristic: seq/2 x seq/2
    assert (tile.pattern, tile.m, tile.n) == ("*.attn.sdpa", s.seq // 2, s.seq // 2)


def test_unchanged_pair_ships_with_no_failing_mechanism(scenario_records):
    base, cand = scenario_records("unchanged")
    report = triage(base, cand, simulate=True)
    assert report.comparable
    assert report.first_failing is None
    assert report.decision == "ship"
    assert {n.id for n in report.branches} == {"comparable", "representative", "mature", "sla"}


def test_refuses_mismatched_runtime_tags(scenario_records):
    base, cand = scenario_records("eager-launch")
    report = triage(base, cand, simulate=False)
    assert not report.comparable
    assert report.decision == "refused"
    assert any(m.startswith("runtime.launch") for m in report.mismatched_tags)
    assert triage(base, cand, changed="runtime", simulate=False).comparable


def test_declaring_the_wrong_group_still_refuses(scenario_records):
    base, cand = scenario_records("epilogue-fusion")
    assert compare_tags(base, cand, "runtime")
    assert not compare_tags(base, cand, "compiler")


def test_new_kernels_are_attributed_to_their_op(scenario_records):
    base, cand = scenario_records("epilogue-fusion")
    ff = find_first_failing(base, cand)
    sides = {r["side"] for r in ff.rows}
    assert sides == {"baseline", "candidate"}
    assert len([r for r in ff.rows if r["side"] == "candidate"]) > 1  # the split-out kernel


def test_json_contract(scenario_records):
    base, cand = scenario_records("barrier-per-layer")
    doc = triage_document(triage(base, cand, changed="runtime"))
    assert tuple(doc) == JSON_KEYS
    assert set(doc["first_failing"]) >= {"kernel", "mechanism", "evidence", "owner"}
    assert doc["first_failing"]["owner"] == "runtime systems engineer"
    assert doc["decision"]["action"] in ("ship", "ship behind a flag", "roll back")
    assert {"baseline", "candidate"} <= set(doc["headline"])
    row = doc["validation_matrix"][0]
    assert {"mfu", "time_s", "sla_p99_s"} <= set(row["candidate"])
    assert all(n["status"] in ("pass", "fail", "unknown") for n in doc["debug_branches"])
    assert sum(o["assigned"] for o in doc["owners"]) == 1
