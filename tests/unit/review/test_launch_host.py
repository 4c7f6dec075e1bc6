"""The host time per eager launch in run records, re-maps, declared changes and attribution.

A run launched eagerly records its stack's host time per launch (``runtime.launch_host_s``), so
triage re-maps it as it was mapped; the figure rides with a launch-mode change and is its own
change only between two eager runs of different stacks.
"""

import json
import shlex

import pytest

from workbench.cli import main
from workbench.hw import load_hardware
from workbench.hw.stack import load_stack
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.review import load_record, record_from_mapping, triage
from workbench.review.diagnosis.attribution import counterfactual
from workbench.review.diagnosis.changes import declared_changes
from workbench.review.records.reproduce import remap

H100 = load_hardware("h100-sxm")
COMPILE_S = load_stack("pytorch-compile").eager_launch_s.value
EAGER_S = load_stack("pytorch-eager").eager_launch_s.value


def _rec(**opts):
    graph = build_graph("gpt2", "decode", 1, 256)
    return record_from_mapping(map_model(graph, H100, MapOptions(search="heuristic", **opts)))


@pytest.fixture(scope="module")
def runs():
    return {
        "graph": _rec(),
        "compile": _rec(launch="eager", launch_host_s=COMPILE_S),
        "eager": _rec(launch="eager", launch_host_s=EAGER_S),
    }


def test_an_eager_run_records_its_host_time_and_re_maps_to_it(runs):
    rec = runs["eager"]
    assert rec.tags.runtime.launch_host_s == EAGER_S
    again = remap(rec)
    assert again is not None
    assert again.time_s == pytest.approx(rec.model.time_s, rel=1e-12)


def test_a_graph_run_records_no_host_time_whatever_its_stack():
    graph = build_graph("gpt2", "decode", 1, 256)
    options = load_stack("pytorch-compile").map_options(MapOptions(search="heuristic"))
    assert options.launch == "graph"
    assert options.launch_host_s == COMPILE_S
    rec = record_from_mapping(map_model(graph, H100, options))
    assert rec.tags.runtime.launch_host_s is None


def test_the_cli_records_the_default_stacks_figure_and_its_reproducer_maps_the_same(tmp_path):
    first = tmp_path / "run.json"
    argv = ["run", "--model", "gpt2", "--phase", "decode", "--seq", "256", "--launch", "eager"]
    assert main([*argv, "--record", str(first)]) == 0
    rec = load_record(first)
    assert rec.tags.runtime.launch_host_s == COMPILE_S
    again = tmp_path / "again.json"
    command = shlex.split(rec.command.replace("run.json", str(again)))
    assert main(command[1:]) == 0
    assert load_record(again).model == rec.model


def test_a_record_written_before_the_field_loads_as_the_profiles_figure(tmp_path, runs):
    from workbench.review.records.store import _lock, record_to_dict

    data = record_to_dict(runs["graph"])
    del data["tags"]["runtime"]["launch_host_s"]
    body = {k: v for k, v in data.items() if k != "lock"}
    data["lock"] = _lock(body)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert load_record(path).tags.runtime.launch_host_s is None


def test_the_host_time_rides_with_a_launch_mode_change(runs):
    base, cand = runs["graph"], runs["compile"]
    changes = declared_changes(base, cand)
    assert [c.name for c in changes] == ["launch"]
    att = counterfactual(base, cand)
    assert att is not None
    assert [s.change.name for s in att.shares] == ["launch"]
    assert att.shares[0].share_s == pytest.approx(att.total_s, rel=1e-9)


def test_another_stacks_host_time_is_its_own_runtime_change(runs):
    base, cand = runs["compile"], runs["eager"]
    changes = declared_changes(base, cand)
    assert [(c.group, c.name, c.before, c.after) for c in changes] == [
        ("runtime", "host time per eager launch", "7.5 us", "20 us")
    ]
    report = triage(base, cand, changed="runtime", simulate=False)
    assert report.first_failing is not None
    assert report.first_failing.mechanism == "launch_sync_overhead"
    assert report.decision == "roll back"


def test_a_launch_mode_change_is_one_mismatch_not_two(runs):
    from workbench.review.decision.verdict import compare_tags

    assert compare_tags(runs["graph"], runs["compile"]) == ("runtime.launch: 'graph' != 'eager'",)
    mismatch = compare_tags(runs["compile"], runs["eager"])
    assert mismatch == (f"runtime.launch_host_s: {COMPILE_S!r} != {EAGER_S!r}",)
