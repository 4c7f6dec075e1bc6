"""Several ranks' traces merged; and edge cases of reading (NaN times, writers, size limits)."""

from __future__ import annotations

import json

import pytest

from workbench.evidence import (
    TraceError,
    merge_runs,
    read_rank_traces,
    read_trace,
    write_kineto_trace,
    write_nsys_sqlite,
)


@pytest.fixture
def rank_trace(tmp_path, make_steps, h100):
    """A function writing rank ``rank``'s trace (``slow`` scales its GEMM, ``name`` its GPU)."""

    def write(rank, *, slow=1.0, name="NVIDIA H100 80GB HBM3"):
        meta = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}
        return write_kineto_trace(
            tmp_path / f"rank{rank}.json",
            make_steps(slow=slow),
            device_properties=[{**h100, "name": name}],
            metadata=meta,
        )

    return write


def test_ranks_merge_and_the_slowest_rank_bounds_each_iteration(rank_trace):
    run = read_rank_traces([rank_trace(0), rank_trace(1, slow=3.0)])
    assert {k.rank for k in run.kernels} == {0, 1}
    assert run.repeats == 5
    # Rank 1's gemm takes 3 ms instead of 1 ms: its 7 ms of kernels bound each step.
    assert run.iterations[0].kernel_s == pytest.approx(7e-3)
    assert run.tag("rank") == "0, 1"
    assert run.tag("device") == "NVIDIA H100 80GB HBM3"


def test_a_mixed_fleet_shows_in_the_tags(rank_trace):
    run = read_rank_traces([rank_trace(0), rank_trace(1, name="NVIDIA A100-SXM4-80GB")])
    assert run.tag("device") == "NVIDIA H100 80GB HBM3, NVIDIA A100-SXM4-80GB"


def test_merge_refuses_unknown_or_repeated_ranks_and_mixed_formats(tmp_path, kernels, rank_trace):
    a = read_trace(rank_trace(0))
    with pytest.raises(TraceError, match="rank 0 again"):
        merge_runs([a, a])
    plain = read_trace(write_kineto_trace(tmp_path / "plain.json", kernels))
    with pytest.raises(TraceError, match="rank is unknown"):
        merge_runs([a, plain])
    nsys = read_trace(write_nsys_sqlite(tmp_path / "n.sqlite", kernels))
    with pytest.raises(TraceError, match="mixed trace formats"):
        merge_runs([a, nsys])
    with pytest.raises(TraceError, match="no runs"):
        merge_runs([])
    assert merge_runs([a]) is a


@pytest.mark.parametrize("value", ["NaN", "Infinity"])
def test_non_finite_times_are_refused(tmp_path, kernels, value):
    doc = json.loads(write_kineto_trace(tmp_path / "t.json", kernels).read_text())
    index = next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel")
    text = json.dumps(doc).replace(f'"ts": {doc["traceEvents"][index]["ts"]}', f'"ts": {value}', 1)
    (tmp_path / "nan.json").write_text(text)
    with pytest.raises(TraceError, match=rf"traceEvents\[{index}\] has no finite numeric 'ts'"):
        read_trace(tmp_path / "nan.json")


def test_nsys_oversized_and_half_written(tmp_path, kernels):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    with pytest.raises(TraceError, match="over the 1000-byte limit"):
        read_trace(path, max_bytes=1000)
    before = path.read_bytes()
    with pytest.raises(AttributeError):
        write_nsys_sqlite(path, [*kernels[:2], "not a kernel"])  # type: ignore[list-item]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.sqlite"]


def test_writers_refuse_to_replace_a_device_or_folder(tmp_path, kernels):
    with pytest.raises(TraceError, match="not a regular file"):
        write_kineto_trace(tmp_path, kernels)


def test_trace_with_only_copies_has_no_kernels(tmp_path, kernels):
    copies = [k for k in kernels if k.kind == "memcpy"]
    with pytest.raises(TraceError, match="no GPU kernels"):
        read_trace(write_kineto_trace(tmp_path / "t.json", copies))
