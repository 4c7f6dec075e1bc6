import json

import pytest

from workbench.hw import hardware_hash, load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.review import RecordError, load_record, record_from_mapping, save_record
from workbench.review.records import SCHEMA_VERSION


@pytest.fixture(scope="module")
def record():
    hw = load_hardware("h100-sxm")
    opts = MapOptions(
        disabled_fusion=("gemm_epilogue",), dtype_overrides=(("*.attn.sdpa", "fp32"),)
    )
    return record_from_mapping(map_model(build_graph("gpt2", seq=128), hw, opts))


def test_round_trip_is_exact(tmp_path, record):
    path = save_record(record, tmp_path / "r.json")
    assert load_record(path) == record
    assert not list(tmp_path.glob(".r.json.*"))  # no temp file left behind


def test_tags_carry_compiler_runtime_hardware_workload(record):
    t = record.tags
    assert "gemm_epilogue" in t.compiler.fusion_disabled
    assert "gemm_epilogue" not in t.compiler.fusion_enabled
    assert t.compiler.dtype_overrides == (("*.attn.sdpa", "fp32"),)
    assert t.compiler.git_commit == "unknown" or len(t.compiler.git_commit) == 40
    assert t.runtime.launch == "graph"
    assert t.runtime.backend == "predicted"
    assert t.hardware.hardware_hash == hardware_hash(load_hardware("h100-sxm"))
    assert (t.workload.model, t.workload.phase, t.workload.seq) == ("gpt2", "prefill", 128)


def test_kernel_results_carry_mechanism_fields(record):
    k = record.kernel("layers.0.attn.sdpa")
    assert k.dtype == "fp32"
    assert k.engine == "vector"
    assert k.tile
    assert k.traffic
    assert k.bottleneck
    assert k.predicted_s > 0
    assert k.measured_s is None
    assert record.model.mfu > 0
    assert dict(record.model.stall_fraction_by_layer_type)


def _edit(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("group", ["compiler", "runtime", "hardware", "workload"])
def test_edited_tags_are_refused(tmp_path, record, group):
    path = save_record(record, tmp_path / "r.json")
    first = next(iter(json.loads(path.read_text())["tags"][group]))

    def tamper(d):
        d["tags"][group][first] = "edited"

    _edit(path, tamper)
    with pytest.raises(RecordError, match=f"{group} tags were edited"):
        load_record(path)


def test_edited_results_are_refused(tmp_path, record):
    path = save_record(record, tmp_path / "r.json")

    def tamper(d):
        d["model"]["mfu"] = 0.99

    _edit(path, tamper)
    with pytest.raises(RecordError, match="results were edited"):
        load_record(path)


def test_truncated_file(tmp_path, record):
    path = save_record(record, tmp_path / "r.json")
    path.write_text(path.read_text()[:500])
    with pytest.raises(RecordError, match=r"r\.json: truncated JSON"):
        load_record(path)


def test_corrupt_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"kind": "workbench.run_record", oops}')
    with pytest.raises(RecordError, match=r"bad\.json: corrupt JSON"):
        load_record(path)


def test_foreign_json(tmp_path):
    path = tmp_path / "foreign.json"
    path.write_text(json.dumps({"schema_version": 1, "hello": "world"}))
    with pytest.raises(RecordError, match=r"foreign\.json: not a workbench run record"):
        load_record(path)


def test_newer_schema(tmp_path, record):
    path = save_record(record, tmp_path / "r.json")

    def bump(d):
        d["schema_version"] = SCHEMA_VERSION + 1

    _edit(path, bump)
    with pytest.raises(RecordError, match="schema_version 2 is not supported"):
        load_record(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(RecordError, match="no such run record"):
        load_record(tmp_path / "nope.json")
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(RecordError, match="empty file"):
        load_record(tmp_path / "empty.json")


def test_errors_are_one_line(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[1, 2")
    with pytest.raises(RecordError) as info:
        load_record(path)
    assert "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_save_into_missing_folder(tmp_path, record):
    with pytest.raises(RecordError, match="does not exist"):
        save_record(record, tmp_path / "no" / "r.json")
