"""Host-side launches (issue 17): each activity keeps its launch call, the per-stream statistics
follow HTA's definitions, and a measured run with the new fields round-trips while older
records without them still load."""

from __future__ import annotations

import json

import pytest

from workbench.evidence import MeasuredKernel, MeasuredRun, read_trace, write_nsys_sqlite
from workbench.evidence.launches import launch_stats, queue_lengths, summarize
from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import IterationStats
from workbench.report.trace_text import trace_text
from workbench.review.join.trace_summary import trace_document


def _kernel(start, launch, call, *, stream=7, iteration=1, **kw):
    return MeasuredKernel(
        name="k", category="gemm", rule="r", start_s=start, duration_s=1e-4, stream=stream,
        iteration=iteration, launch_start_s=launch, launch_duration_s=call, **kw,
    )  # fmt: skip


def _run(kernels):
    it = IterationStats(index=1, wall_s=1e-2, kernel_s=1e-3, gap_s=9e-3, copy_s=0.0)
    return MeasuredRun(
        source="t", format="kineto", tags=(), kernels=tuple(kernels), iterations=(it,)
    )


def test_launch_delay_is_start_minus_the_calls_end_clipped_at_zero():
    assert _kernel(5e-3, 1e-3, 1e-3).launch_delay_s == pytest.approx(3e-3)
    # a kernel that starts before its call returns (the call blocked): no negative delay
    assert _kernel(1.5e-3, 1e-3, 1e-3).launch_delay_s == 0.0
    assert _kernel(1e-3, None, None).launch_delay_s is None


def test_queue_length_counts_launched_but_not_started_work_per_event():
    # three launches at 0, 1, 2 ms; the GPU starts them at 3, 4, 5 ms
    kernels = [_kernel(3e-3 + i * 1e-3, i * 1e-3, 1e-5) for i in range(3)]
    assert queue_lengths(kernels) == [1, 2, 3, 2, 1, 0]
    (row,) = launch_stats(_run(kernels))
    assert row.launches == 3
    assert row.queue.maximum == 3
    assert row.queue.mean == pytest.approx(9 / 6)
    assert row.queue.median == pytest.approx(1.5)
    assert row.delay.median == pytest.approx(3e-3 - 1e-5)
    assert row.runtime.mean == pytest.approx(1e-5)


def test_a_host_bound_stream_has_no_queue():
    kernels = [_kernel(i * 1e-3 + 2e-5, i * 1e-3, 1e-5) for i in range(4)]
    (row,) = launch_stats(_run(kernels))
    assert row.queue.maximum == 1
    assert row.delay.maximum == pytest.approx(1e-5)


def test_rows_per_stream_and_only_over_the_steps():
    kernels = [
        _kernel(3e-3, 0.0, 1e-5, stream=7),
        _kernel(4e-3, 1e-3, 1e-5, stream=20),
        _kernel(5e-3, 2e-3, 1e-5, stream=20),
        _kernel(9e-3, 8e-3, 1e-5, stream=7, iteration=None),  # outside every step
        _kernel(9e-3, None, None, stream=21),  # no launch call
    ]
    rows = launch_stats(_run(kernels))
    assert [(r.stream, r.launches) for r in rows] == [(7, 1), (20, 2)]


def test_summary_quantiles_are_linear_like_pandas():
    pd = pytest.importorskip("pandas")
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    s = summarize(values)
    ref = pd.Series(values)
    assert s.median == pytest.approx(ref.quantile(0.5))
    assert s.p95 == pytest.approx(ref.quantile(0.95))
    assert (s.mean, s.maximum) == (pytest.approx(ref.mean()), 9.0)


def test_kineto_reader_keeps_only_launch_calls(tmp_path):
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 100},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 4,
             "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 30, "dur": 5,
             "args": {"device": 0, "stream": 7, "correlation": 1}},
            # a correlated call that is not a launch (HTA counts none of these)
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 40,
             "dur": 3, "args": {"correlation": 2}},
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 50, "dur": 5,
             "args": {"device": 0, "stream": 7, "correlation": 2}},
        ]
    }  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    a, b = read_trace(path).kernels
    assert (a.launch_start_s, a.launch_duration_s) == (pytest.approx(10e-6), pytest.approx(4e-6))
    assert a.launch_delay_s == pytest.approx(16e-6)
    assert (b.launch_start_s, b.launch_duration_s) == (None, None)
    assert b.iteration == 1  # still placed by its (non-launch) runtime event


def test_nsys_reader_reads_versioned_launch_names(tmp_path):
    k = MeasuredKernel(name="k", category="gemm", rule="r", start_s=1e-3, duration_s=1e-4,
                       device=0, stream=7, iteration=1)  # fmt: skip
    run = read_trace(write_nsys_sqlite(tmp_path / "t.sqlite", [k], launch_lead_s=1e-5))
    (got,) = run.kernels
    assert got.launch_start_s == pytest.approx(1e-3 - 1e-5)
    assert got.launch_duration_s == pytest.approx(0.5e-5)
    import sqlite3

    db = sqlite3.connect(tmp_path / "t.sqlite")
    db.execute("UPDATE StringIds SET value = 'cudaLaunchKernel_v7000' "
               "WHERE value = 'cudaLaunchKernel'")  # fmt: skip
    db.commit()
    db.close()
    (again,) = read_trace(tmp_path / "t.sqlite").kernels
    assert again.launch_duration_s == pytest.approx(0.5e-5)


def test_a_run_with_launches_round_trips_and_older_records_still_load():
    run = _run([_kernel(3e-3, 1e-3, 2e-5), _kernel(4e-3, None, None)])
    data = json.loads(json.dumps(run.to_dict(), allow_nan=False))
    assert data["kernels"][0]["launch_start_s"] == 1e-3
    back = MeasuredRun.from_dict(data)
    assert back == run
    assert launch_stats(back) == launch_stats(run)
    # a record written before the launch fields existed: no keys, read as "no launch"
    for k in data["kernels"]:
        del k["launch_start_s"], k["launch_duration_s"]
    old = MeasuredRun.from_dict(data)
    assert all(k.launch_start_s is None and k.launch_duration_s is None for k in old.kernels)
    assert launch_stats(old) == ()


def test_a_record_with_a_bad_launch_field_is_refused():
    from workbench.evidence import TraceError

    data = _run([_kernel(3e-3, 1e-3, 2e-5)]).to_dict()
    data["kernels"][0]["launch_duration_s"] = -1.0
    with pytest.raises(TraceError, match="launch_duration_s"):
        MeasuredRun.from_dict(data)
    data["kernels"][0]["launch_duration_s"] = "fast"
    with pytest.raises(TraceError, match="launch_duration_s"):
        MeasuredRun.from_dict(data)


def test_trace_document_and_text_carry_the_launches():
    run = _run([_kernel(3e-3 + i * 1e-3, i * 1e-3, 1e-5) for i in range(3)])
    ops = RecordedOps(ops=(), by_correlation={}, shapes_recorded=False)
    doc = trace_document(run, ops, hardware=None)
    (row,) = doc["launches"]
    assert row["stream"] == 7
    assert row["launches"] == 3
    assert row["queue_length"]["max"] == 3
    assert row["launch_delay_s"]["median"] == pytest.approx(3e-3 - 1e-5)
    json.dumps(doc, allow_nan=False)
    text = trace_text(doc)
    assert "host-side launches per stream" in text
    assert "stream 7: 3 launches" in text
    assert "delay median 2.99 ms" in text
    assert "queue mean 1.5, max 3" in text
