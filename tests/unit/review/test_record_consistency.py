"""A run record must agree with itself: duplicated or missing kernels, per-kernel sums that
disagree with the totals and implausible chip counts are refused with one line, even when the
record was re-locked (the lock hashes are unkeyed)."""

import dataclasses
import json

import pytest

from workbench.cli import main
from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.models.config import MAX_SYSTEM_CHIPS
from workbench.options import MapOptions
from workbench.review import RecordError, load_record, record_from_mapping, save_record
from workbench.review.records._consistency import SUM_REL_TOL, consistency_problems
from workbench.review.records.store import RECORD_KIND, Measurement, _lock, record_to_dict


@pytest.fixture(scope="module")
def record():
    hw = load_hardware("h100-sxm")
    return record_from_mapping(
        map_model(build_graph("gpt2", seq=128), hw, MapOptions(search="heuristic"))
    )


def _forge(path, fn):
    """Edit a record's JSON and recompute its (unkeyed) lock hashes, as a forger would."""
    data = json.loads(path.read_text())
    fn(data)
    body = {k: v for k, v in data.items() if k != "lock"}
    assert body["kind"] == RECORD_KIND
    data["lock"] = _lock(body)
    path.write_text(json.dumps(data))
    return path


def _refused(path, phrase):
    with pytest.raises(RecordError, match="inconsistent run record") as info:
        load_record(path)
    text = str(info.value)
    assert phrase in text, text
    assert "\n" not in text
    return text


def _dup3(d):
    d["kernels"] += d["kernels"][5:8]


def _drop(d):
    del d["kernels"][7]


def _drop_v2(d):
    """A version-2 record (no kernel count) with one kernel removed: the sums catch it."""
    d["schema_version"] = 2
    for key in ("mbu", "kernel_count", "step_overhead_s"):
        d["model"].pop(key)
    del d["kernels"][7]


def _slow_kernel(d):
    d["kernels"][7]["predicted_s"] *= 1.01  # 1e-4 of its layer type: 100 x the tolerance


def _flops(d):
    d["model"]["model_flops"] += 10**9


def _time(d):
    d["model"]["time_s"] *= 1.5


def _chips(n, model=None):
    def edit(d):
        d["tags"]["runtime"]["chips"] = n
        if model:
            d["tags"]["workload"]["model"] = model

    return edit


@pytest.mark.parametrize(
    ("edit", "phrase"),
    [
        (_dup3, "3 name(s) listed more than once"),
        (_drop, "listed but the run had"),
        (_drop_v2, "kernels sum to"),
        (_slow_kernel, "but its kernels sum to"),
        (_flops, "model.model_flops"),
        (_time, "model.time_s"),
        (_chips(16), "gpt2 has 12 attention heads"),
        (_chips(MAX_SYSTEM_CHIPS + 1, "my-config.json"), "largest published system"),
        (_chips(0), "at least one chip"),
    ],
    ids=["duplicated", "missing", "missing-v2", "sum", "flops", "time", "heads", "system", "0"],
)
def test_inconsistent_records_are_refused_with_one_line(tmp_path, record, edit, phrase):
    path = _forge(save_record(record, tmp_path / "r.json"), edit)
    _refused(path, phrase)


def test_a_sum_within_the_tolerance_still_loads(tmp_path, record):
    def nudge(d):
        d["kernels"][7]["predicted_s"] *= 1 + SUM_REL_TOL / 100

    assert load_record(_forge(save_record(record, tmp_path / "r.json"), nudge))


def test_a_measured_kernel_missing_from_the_list_is_refused(tmp_path, record):
    name = record.kernels[3].name
    meas = Measurement(
        method="test", backend="numpy", kernels=(name,), shapes=(), repeats=1, wall_s=0.1
    )
    measured = dataclasses.replace(record, measurement=meas)
    path = save_record(measured, tmp_path / "m.json")
    assert load_record(path).measurement == meas

    def drop(d):
        d["kernels"] = [k for k in d["kernels"] if k["name"] != name]
        d["model"]["kernel_count"] -= 1
        lt = record.kernels[3].layer_type
        d["model"]["time_by_layer_type"] = [
            [t, v - record.kernels[3].predicted_s if t == lt else v]
            for t, v in d["model"]["time_by_layer_type"]
        ]
        d["model"]["time_s"] -= record.kernels[3].predicted_s
        d["model"]["model_flops"] -= record.kernels[3].model_flops

    _refused(_forge(path, drop), f"{name!r} was measured")


def test_consistency_api_names_each_problem(record):
    assert consistency_problems(record) == []
    twice = dataclasses.replace(record, kernels=(*record.kernels, record.kernels[0]))
    found = consistency_problems(twice)
    assert any("listed more than once" in p for p in found)
    assert any("listed but the run had" in p for p in found)


def test_triage_cli_refuses_a_forged_record_exit_2_one_line(tmp_path, record, capsys):
    base = save_record(record, tmp_path / "a.json")
    forged = _forge(save_record(record, tmp_path / "b.json"), _dup3)
    code = main(["triage", str(base), str(forged)])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") <= 1
    assert "b.json: inconsistent run record" in err
    assert "ship" not in out


@pytest.mark.parametrize(
    ("model", "kwargs", "options"),
    [
        ("llama2-7b", {"seq": 256}, MapOptions(dtype_overrides=(("*.mlp.*", "fp32"),))),
        ("llama2-7b", {"phase": "decode", "context": 256, "tensor_parallel": 4}, MapOptions()),
        ("llama2-7b", {"phase": "decode", "context": 256}, MapOptions(weight_dtype="int4")),
        ("resnet50", {}, MapOptions(search="heuristic")),
        ("bert-base", {"seq": 128}, MapOptions(disabled_fusion=("gemm_epilogue",))),
    ],
    ids=["fp32-mlp", "tp4-decode", "int4-decode", "resnet50", "bert-no-fusion"],
)
def test_every_record_the_tool_writes_loads_and_is_consistent(tmp_path, model, kwargs, options):
    m = map_model(build_graph(model, **kwargs), load_hardware("h100-sxm"), options)
    rec = record_from_mapping(m)
    assert consistency_problems(rec) == []
    assert rec.model.kernel_count == len(rec.kernels)
    assert rec.model.mbu == pytest.approx(m.mbu)
    path = save_record(rec, tmp_path / "r.json")
    assert load_record(path) == rec
    assert record_to_dict(load_record(path)) == json.loads(path.read_text())


@pytest.mark.parametrize("chips", [64, 1_000_000])
def test_the_api_refuses_more_chips_than_heads_or_systems(chips):
    # The issue: `--chips 1000000` mapped to 130 s per step at MFU 0%.
    from workbench.errors import WorkbenchError

    with pytest.raises(WorkbenchError, match="at most 32 chips"):
        build_graph("llama2-7b", phase="decode", context=128, tensor_parallel=chips)


def test_the_tool_never_writes_a_record_it_would_refuse():
    m = map_model(
        build_graph("gpt2", seq=64),
        load_hardware("h100-sxm"),
        MapOptions(chips=64, search="heuristic"),
    )
    with pytest.raises(RecordError, match="gpt2 has 12 attention heads"):
        record_from_mapping(m)


def test_a_consistent_version_2_record_still_loads(tmp_path, record):
    def to_v2(d):
        d["schema_version"] = 2
        for key in ("mbu", "kernel_count", "step_overhead_s"):
            d["model"].pop(key)

    old = load_record(_forge(save_record(record, tmp_path / "v2.json"), to_v2))
    assert old.schema_version == 2
    assert old.model.kernel_count is None
    assert old.kernels == record.kernels
