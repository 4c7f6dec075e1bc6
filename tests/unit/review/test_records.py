import dataclasses
import json

import pytest

from workbench.hw import hardware_hash, load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.review import RecordError, load_record, record_from_mapping, save_record
from workbench.review.records.store import SCHEMA_VERSION


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
    with pytest.raises(RecordError, match=f"schema_version {SCHEMA_VERSION + 1} is not supported"):
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


def _relock(path, fn):
    """Edit a record and recompute its (unkeyed) lock hashes, as a forger would."""
    from workbench.review.records.store import RECORD_KIND, _lock

    data = json.loads(path.read_text())
    fn(data)
    body = {k: v for k, v in data.items() if k != "lock"}
    assert body["kind"] == RECORD_KIND
    data["lock"] = _lock(body)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("edit", "phrase"),
    [
        (lambda d: d["model"].update(time_s=-1.0), "model.time_s = -1.0 s"),
        (lambda d: d["model"].update(time_s=0.0), "model.time_s = 0.0 s"),
        (lambda d: d["model"].update(mfu=1.5, hfu=1.6), "model.mfu = 1.5 is outside 0..1"),
        (lambda d: d["model"].update(hfu=0.0001), "is below model.mfu"),
        (lambda d: d["kernels"][0].update(predicted_s=-0.001), "kernels[0].predicted_s"),
        (lambda d: d["kernels"][0].update(measured_s=0.0), "kernels[0].measured_s"),
        (
            lambda d: d["model"].update(latency=[["p50_s", 2.0], ["p95_s", 1.0], ["p99_s", 3.0]]),
            "percentiles out of order",
        ),
        (lambda d: d["model"].update(quality_error=-0.1), "model.quality_error"),
    ],
)
def test_impossible_records_are_refused_whatever_their_hash(tmp_path, record, edit, phrase):
    path = save_record(record, tmp_path / "r.json")
    _relock(path, edit)
    with pytest.raises(RecordError, match="physically impossible") as info:
        load_record(path)
    assert phrase in str(info.value)
    assert "integrity, not authenticity" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literals_are_refused(tmp_path, record, literal):
    path = save_record(record, tmp_path / "r.json")
    text = path.read_text().replace('"time_s": ', f'"time_s": {literal}, "x": ', 1)
    path.write_text(text)
    with pytest.raises(RecordError, match=rf"r\.json: {literal} is not a number"):
        load_record(path)


def test_deeply_nested_json_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RecordError, match=r"deep\.json"):
        load_record(path)


def test_record_embeds_its_hardware_profile_and_reproducer(tmp_path, record):
    from workbench.review.records.store import embedded_hardware

    hw = embedded_hardware(load_record(save_record(record, tmp_path / "r.json")))
    assert hw is not None
    assert hardware_hash(hw) == record.tags.hardware.hardware_hash
    assert record.model.hfu >= record.model.mfu
    cmd = record.command
    assert cmd.startswith("workbench run --model gpt2 --hardware h100-sxm")
    assert "--no-fusion gemm_epilogue" in cmd
    assert "--kernel-dtype '*.attn.sdpa=fp32'" in cmd


def test_edited_embedded_profile_is_refused(tmp_path, record):
    path = save_record(record, tmp_path / "r.json")

    def edit(d):
        d["hardware_profile"] = d["hardware_profile"].replace('"name":"h100-sxm"', '"name":"x"')

    _relock(path, edit)
    with pytest.raises(RecordError, match="hardware_profile does not hash"):
        load_record(path)


def test_reproducer_command_maps_the_same_run(tmp_path, record, capsys):
    import shlex

    from workbench.cli import main

    out = tmp_path / "again.json"
    argv = shlex.split(record.command.replace("run.json", str(out)))
    assert main(argv[1:]) == 0
    again = load_record(out)
    # NOTE: a record built in Python names no stack; the CLI maps with the default one, whose
    # figures are MapOptions' defaults
    from workbench.hw.stack import DEFAULT_STACK

    assert again.tags.runtime.stack == (record.tags.runtime.stack or DEFAULT_STACK)
    runtime = dataclasses.replace(again.tags.runtime, stack=record.tags.runtime.stack)
    assert dataclasses.replace(again.tags, runtime=runtime) == record.tags
    assert again.model == record.model


def test_the_stack_is_a_runtime_tag_and_the_reproducer_keeps_it(tmp_path, capsys):
    """Issue 26: `--stack` was invisible to triage and dropped by the reproducer."""
    import shlex

    from workbench.cli import main

    flags = "--model llama2-7b --phase decode --context 512 --search heuristic"
    first = tmp_path / "trt.json"
    assert (
        main(["run", *flags.split(), "--stack", "tensorrt-llm-0.7+", "--record", str(first)]) == 0
    )
    record = load_record(first)
    assert record.tags.runtime.stack == "tensorrt-llm-0.7+"
    assert record.tags.runtime.step_overhead_s == pytest.approx(2.23e-3)
    assert "--stack tensorrt-llm-0.7+" in record.command
    again = tmp_path / "again.json"
    assert main(shlex.split(record.command.replace("run.json", str(again)))[1:]) == 0
    assert load_record(again).model.time_s == pytest.approx(record.model.time_s)
    # re-mapped from its tags alone (counterfactuals, the validation matrix), the stack's
    # per-step overhead is still paid
    from workbench.review.records.reproduce import remap

    assert remap(record).time_s == pytest.approx(record.model.time_s)


def test_version_1_record_still_loads(tmp_path, record):
    import dataclasses

    from workbench.review.records.store import record_to_dict

    old = dataclasses.replace(
        record,
        schema_version=1,
        hardware_profile="",
        command="",
        model=dataclasses.replace(record.model, hfu=None),
    )
    data = record_to_dict(old)
    for key in ("hardware_profile", "command"):
        data.pop(key)
    data["model"].pop("hfu")
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    _relock(path, lambda d: None)
    assert load_record(path).schema_version == 1


def test_profile_from_an_older_schema_still_loads(tmp_path, record):
    """Schema drift: the embedded profile no longer parses, yet its hash holds and it loads."""
    import hashlib

    from workbench.review.records.store import embedded_hardware

    path = save_record(record, tmp_path / "r.json")

    def drift(d):
        profile = json.loads(d["hardware_profile"])
        profile["vector_unit"]["retired_field_s"] = {}
        d["hardware_profile"] = json.dumps(profile)
        blob = json.dumps(profile, sort_keys=True, separators=(",", ":"))
        d["tags"]["hardware"]["hardware_hash"] = hashlib.sha256(blob.encode()).hexdigest()

    _relock(path, drift)
    old = load_record(path)
    assert embedded_hardware(old) is None  # cannot parse: falls back to the named profile


@pytest.mark.parametrize(
    ("edit", "phrase"),
    [
        (
            lambda d: d["tags"]["workload"].update(extra=[["tensor_parallel", "x"]]),
            "tensor_parallel = 'x' is no degree",
        ),
        (
            lambda d: d["tags"]["workload"].update(extra=[["tensor_parallel", "0"]]),
            "tensor_parallel = '0' is no degree",
        ),
        (
            lambda d: d["tags"]["compiler"].update(git_commit="\x1b[2J\x07\x1b]0;x\x07"),
            "tags.compiler.git_commit holds a control or bidi character",
        ),
        (
            lambda d: d["tags"]["hardware"].update(profile="h100\u202eevil"),
            "tags.hardware.profile holds a control or bidi character",
        ),
    ],
)
def test_forged_tags_are_refused_in_one_line(tmp_path, capsys, record, edit, phrase):
    from workbench.cli import main

    path = tmp_path / "r.json"
    save_record(record, path)
    _relock(path, edit)
    with pytest.raises(RecordError, match="malformed tags") as info:
        load_record(path)
    assert phrase in str(info.value)
    pack = str(tmp_path / "p.html")
    review = ["review", "--record", str(path), "--out", pack]
    for argv in (["triage", str(path), str(path)], review):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert "malformed tags" in err[0]
        assert "\x1b" not in err[0]
        assert "\u202e" not in err[0]


def test_a_record_whose_file_name_is_no_utf8_is_shown_escaped(tmp_path, capsys, record):
    import os

    from workbench.cli import main

    base = tmp_path / "base.json"
    save_record(record, base)
    odd = os.fsdecode(bytes(tmp_path) + b"/cand\xff\x1b.json")
    save_record(record, odd)
    out = tmp_path / "pack.html"
    code = main(["review", str(base), odd, "--out", str(out)])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    text = out.read_text(encoding="utf-8") + out.with_suffix(".md").read_text(encoding="utf-8")
    assert "cand\\xff\\x1b.json" in text
    assert "\x1b" not in text
