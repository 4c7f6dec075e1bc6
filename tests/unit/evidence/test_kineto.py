"""Kineto / PyTorch profiler traces: reading, iterations, tags, and malformed inputs."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from workbench.evidence import TraceError, read_trace, write_kineto_trace


def test_reads_kernels_iterations_and_statistics(tmp_path, kernels, h100):
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels, device_properties=[h100]))
    assert run.format == "kineto"
    assert run.repeats == 5
    assert run.steps_annotated
    assert len(run.kernels) == len(kernels)
    # Per step: 5 ms of kernels, 4 gaps of 0.25 ms, the 0.2 ms memcpy, then 1 ms idle before
    # the next step, which counts as gap (the step period); the last step's period ends at its
    # CPU-side step end, here its last activity.
    it = run.iterations[0]
    assert it.kernel_s == pytest.approx(5e-3)
    assert it.copy_s == pytest.approx(2e-4)
    assert it.gap_s == pytest.approx(2e-3)
    assert it.wall_s == pytest.approx(it.kernel_s + it.copy_s + it.gap_s)
    assert run.iterations[-1].gap_s == pytest.approx(1e-3)
    assert run.median_iteration_s() == pytest.approx(7.2e-3)
    assert [k.iteration for k in run.kernels[:5]] == [0] * 5


def test_kernels_are_classified_with_the_rule_recorded(tmp_path, kernels):
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    got = {k.name.split("(")[0][:20]: (k.category, k.rule) for k in run.kernels}
    assert ("gemm", "name~gemm") in got.values()
    assert ("attention", "name~attention") in got.values()
    assert ("elementwise", "name~elementwise") in got.values()
    assert ("collective", "name~nccl") in got.values()
    assert ("copy", "activity:memcpy") in got.values()
    k = next(k for k in run.kernels if k.category == "gemm")
    assert k.grid == (132, 1, 1)
    assert k.block == (384, 1, 1)
    assert k.registers_per_thread == 128
    assert k.shared_memory_bytes == 49152
    assert k.stream == 7
    assert k.device == 0


def test_gzip_reads_the_same(tmp_path, kernels):
    plain = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    packed = read_trace(write_kineto_trace(tmp_path / "t.json.gz", kernels, gz=True))
    assert packed.kernels == plain.kernels
    assert packed.iterations == plain.iterations


def test_tags_come_from_the_trace_and_absent_ones_are_unknown(tmp_path, kernels, h100):
    meta = {"distributedInfo": {"backend": "nccl", "rank": 2, "world_size": 8},
            "cuda_driver_version": 12040}  # fmt: skip
    run = read_trace(
        write_kineto_trace(tmp_path / "t.json", kernels, device_properties=[h100], metadata=meta)
    )
    assert run.tag("device") == "NVIDIA H100 80GB HBM3"
    assert run.tag("compute_capability") == "9.0"
    assert run.tag("driver") == "12040"
    assert run.tag("cuda") == "unknown"
    assert run.tag("framework") == "unknown"
    assert run.tag("world_size") == "8"
    assert {k.rank for k in run.kernels} == {2}


def test_overlapping_streams_are_counted_once(tmp_path, kernels):
    # A second stream runs a copy of every kernel at the same time: kernel time does not double.
    twin = [k.__class__(**{**_fields(k), "stream": 9, "correlation": None}) for k in kernels]
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels + twin))
    one = read_trace(write_kineto_trace(tmp_path / "one.json", kernels))
    assert run.iterations == one.iterations
    assert run.time_by_category()["gemm"] == pytest.approx(2 * one.time_by_category()["gemm"])


def test_several_devices_report_the_busiest(tmp_path, kernels, make_steps):
    slow = make_steps(slow=3.0)
    other = [k.__class__(**{**_fields(k), "device": 1}) for k in slow]
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels + other))
    assert {k.device for k in run.kernels} == {0, 1}
    assert run.iterations[0].kernel_s == pytest.approx(7e-3)


def test_unannotated_trace_is_one_iteration_without_repeats(tmp_path, kernels):
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels, iterations=[]))
    assert not run.steps_annotated
    assert run.repeats == 1
    with pytest.raises(TraceError, match="repeats"):
        run.interval95_s()


def test_kernel_outside_every_step_has_no_iteration(tmp_path, kernels):
    windows = [(0, kernels[0].start_s - 1e-5, kernels[3].end_s)]
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels, iterations=windows))
    assert run.repeats == 1
    assert run.kernels[0].iteration == 0
    assert run.kernels[-1].iteration is None


def test_chrome_array_form_is_read(tmp_path, kernels):
    path = write_kineto_trace(tmp_path / "t.json", kernels)
    events = json.loads(path.read_text())["traceEvents"]
    (tmp_path / "a.json").write_text(json.dumps(events))
    assert read_trace(tmp_path / "a.json").repeats == 5


def test_legacy_category_spellings_are_read(tmp_path, kernels):
    path = write_kineto_trace(tmp_path / "t.json", kernels)
    text = path.read_text().replace('"cat": "kernel"', '"cat": "Kernel"')
    text = text.replace('"cat": "cuda_runtime"', '"cat": "Runtime"')
    (tmp_path / "old.json").write_text(text)
    run = read_trace(tmp_path / "old.json")
    assert sum(k.kind == "kernel" for k in run.kernels) == 20


def _fields(k):
    return {f: getattr(k, f) for f in k.__slots__}


def _doc(tmp_path, kernels):
    return json.loads(write_kineto_trace(tmp_path / "t.json", kernels).read_text())


def _one_line(info):
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.99])
def test_truncated_json_is_one_clear_error(tmp_path, kernels, cut):
    text = write_kineto_trace(tmp_path / "t.json", kernels).read_text()
    bad = tmp_path / "bad.json"
    bad.write_text(text[: int(len(text) * cut)])
    with pytest.raises(TraceError, match="truncated") as info:
        read_trace(bad)
    assert "bad.json" in _one_line(info)


def test_truncated_gzip_is_one_clear_error(tmp_path, kernels):
    data = write_kineto_trace(tmp_path / "t.json.gz", kernels, gz=True).read_bytes()
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated") as info:
        read_trace(bad)
    _one_line(info)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"schemaVersion": 1}, "no 'traceEvents'"),
        ({"traceEvents": {"a": 1}}, "not an array"),
        ({"traceEvents": [1, 2]}, r"traceEvents\[0\] is not an object"),
        ({"traceEvents": []}, "no GPU kernels"),
        ({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]},
         "no GPU kernels"),
        ({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "1", "dur": 2}]},
         r"traceEvents\[0\].*'ts'"),
        ({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
                           "args": {"grid": [1, 1]}}]}, r"traceEvents\[0\].*grid"),
        ({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
                           "args": {"stream": "seven"}}]}, r"traceEvents\[0\].*stream"),
        ({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 2}]}, "name"),
    ],
)  # fmt: skip
def test_wrong_schema_is_one_clear_error(tmp_path, doc, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=message) as info:
        read_trace(path)
    _one_line(info)


def test_clock_skew_negative_duration_names_the_event(tmp_path, kernels):
    doc = _doc(tmp_path, kernels)
    index = next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel")
    doc["traceEvents"][index]["dur"] = -3.0
    (tmp_path / "skew.json").write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=rf"clock skew at traceEvents\[{index}\]") as info:
        read_trace(tmp_path / "skew.json")
    _one_line(info)


def test_steps_with_no_activity_inside_are_refused(tmp_path, kernels):
    path = write_kineto_trace(tmp_path / "t.json", kernels, iterations=[(0, 0.0, 1.0)])
    with pytest.raises(TraceError, match="no GPU activity falls inside"):
        read_trace(path)


def test_not_json_at_all(tmp_path):
    (tmp_path / "x.json").write_text("hello")
    with pytest.raises(TraceError, match="not a trace"):
        read_trace(tmp_path / "x.json")
    (tmp_path / "x.nsys-rep").write_bytes(b"\x00\x01binary report")
    with pytest.raises(TraceError, match="nsys export --type sqlite"):
        read_trace(tmp_path / "x.nsys-rep")


def test_malformed_json_in_the_middle(tmp_path, kernels):
    text = write_kineto_trace(tmp_path / "t.json", kernels).read_text()
    cut = len(text) // 2
    (tmp_path / "m.json").write_text(text[:cut] + "}}}]]" + text[cut:])
    with pytest.raises(TraceError, match="malformed JSON") as info:
        read_trace(tmp_path / "m.json")
    _one_line(info)


def test_non_regular_files_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        read_trace(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        read_trace("/dev/zero")
    with pytest.raises(TraceError, match="not a regular file"):
        read_trace(tmp_path)
    with pytest.raises(TraceError, match="no such"):
        read_trace(tmp_path / "missing.json")


def test_oversized_files_and_gzip_bombs_are_refused(tmp_path, kernels):
    path = write_kineto_trace(tmp_path / "t.json", kernels)
    with pytest.raises(TraceError, match="over the 100-byte limit"):
        read_trace(path, max_bytes=100)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wt") as f:
        f.write('{"traceEvents": [' + " " * 3_000_000 + "]}")
    assert bomb.stat().st_size < 100_000
    with pytest.raises(TraceError, match="decompressed text is over"):
        read_trace(bomb, max_bytes=1_000_000)


def test_the_writer_leaves_nothing_half_written(tmp_path, kernels):
    target = tmp_path / "t.json"
    target.write_text("old")
    bad = [*kernels[:2], "not a kernel"]
    with pytest.raises(AttributeError):
        write_kineto_trace(target, bad)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def test_cpu_ops_are_skipped(tmp_path, kernels):
    with_ops = read_trace(write_kineto_trace(tmp_path / "a.json", kernels, cpu_ops=True))
    plain = read_trace(write_kineto_trace(tmp_path / "b.json", kernels))
    assert '"cat": "cpu_op"' in (tmp_path / "a.json").read_text()
    assert with_ops.kernels == plain.kernels
    assert with_ops.iterations == plain.iterations


def test_a_host_stall_between_steps_shows_as_gap_not_kernel_time(tmp_path, make_steps):
    fast = read_trace(write_kineto_trace(tmp_path / "a.json", make_steps(idle_ms=1.0)))
    stalled = read_trace(write_kineto_trace(tmp_path / "b.json", make_steps(idle_ms=6.0)))
    assert stalled.median_iteration_s() - fast.median_iteration_s() == pytest.approx(5e-3)
    assert stalled.gap_s - fast.gap_s == pytest.approx(5e-3)
    assert stalled.kernel_time_s == pytest.approx(fast.kernel_time_s)


def test_profiler_steps_win_over_user_step_ranges(tmp_path, kernels):
    doc = json.loads(write_kineto_trace(tmp_path / "t.json", kernels).read_text())
    steps = [e for e in doc["traceEvents"] if str(e.get("name")).startswith("ProfilerStep#")]
    # A user's own "step N" range inside each ProfilerStep, numbered differently.
    doc["traceEvents"] += [{**e, "name": f"step {100 + i}"} for i, e in enumerate(steps)]
    (tmp_path / "u.json").write_text(json.dumps(doc))
    run = read_trace(tmp_path / "u.json")
    assert [it.index for it in run.iterations] == [0, 1, 2, 3, 4]
    # Without ProfilerStep annotations, the user's ranges are the steps.
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e not in steps]
    (tmp_path / "v.json").write_text(json.dumps(doc))
    user = read_trace(tmp_path / "v.json")
    assert [it.index for it in user.iterations] == [100, 101, 102, 103, 104]


def test_repeated_launch_shapes_are_one_object_each(tmp_path, kernels):
    # A trace repeats a few launch shapes over millions of kernels: each distinct shape is held
    # once (memory per kernel stays flat), and the values are the trace's.
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    gemms = [k for k in run.kernels if k.category == "gemm"]
    assert len(gemms) == 5
    assert all(k.grid == (132, 1, 1) and k.block == (384, 1, 1) for k in gemms)
    assert len({id(k.grid) for k in gemms}) == 1
    assert len({id(k.block) for k in run.kernels if k.block is not None}) == len(
        {k.block for k in run.kernels if k.block is not None}
    )
