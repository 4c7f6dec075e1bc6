"""Nsight Systems SQLite exports: reading, iterations from NVTX, tags, and malformed inputs."""

from __future__ import annotations

import sqlite3

import pytest

from workbench.evidence import TraceError, read_trace, write_kineto_trace, write_nsys_sqlite


def test_reads_the_same_run_as_the_kineto_trace(tmp_path, kernels):
    nsys = read_trace(write_nsys_sqlite(tmp_path / "t.sqlite", kernels))
    kineto = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    assert nsys.format == "nsys"
    assert nsys.repeats == kineto.repeats == 5
    assert [k.name for k in nsys.kernels] == [k.name for k in kineto.kernels]
    assert [(k.category, k.rule) for k in nsys.kernels] == [
        (k.category, k.rule) for k in kineto.kernels
    ]
    for a, b in zip(nsys.iterations, kineto.iterations, strict=True):
        assert a.wall_s == pytest.approx(b.wall_s)
        assert a.kernel_s == pytest.approx(b.kernel_s)
        assert a.gap_s == pytest.approx(b.gap_s, abs=1e-9)
        assert a.copy_s == pytest.approx(b.copy_s)


def test_launch_shape_and_copy_bytes_are_read(tmp_path, kernels):
    run = read_trace(write_nsys_sqlite(tmp_path / "t.db", kernels))
    gemm = next(k for k in run.kernels if k.category == "gemm")
    assert gemm.grid == (132, 1, 1)
    assert gemm.block == (384, 1, 1)
    assert gemm.registers_per_thread == 128
    assert gemm.shared_memory_bytes == 49152
    copy = next(k for k in run.kernels if k.kind == "memcpy")
    assert copy.name == "Memcpy DtoH"
    assert copy.bytes == 1 << 20


def test_tags_from_target_info_and_metadata(tmp_path, kernels):
    path = write_nsys_sqlite(
        tmp_path / "t.sqlite",
        kernels,
        gpus=[{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "smCount": 108},
              {"id": 3, "name": "NVIDIA H100", "smCount": 132}],
        metadata={"CUDA driver version": "550.54.15", "CUDA runtime version": "12.4"},
    )  # fmt: skip
    run = read_trace(path)
    assert run.tag("device") == "NVIDIA A100-SXM4-80GB"
    assert run.tag("sm_count") == "108"
    assert run.tag("driver") == "550.54.15"
    assert run.tag("cuda") == "12.4"
    assert run.tag("framework") == "unknown"


def test_without_nvtx_steps_the_trace_is_one_iteration(tmp_path, kernels):
    run = read_trace(write_nsys_sqlite(tmp_path / "t.sqlite", kernels, omit_tables=["NVTX_EVENTS"]))
    assert not run.steps_annotated
    assert run.repeats == 1


def test_without_runtime_table_kernels_fall_in_steps_by_their_own_start(tmp_path, kernels):
    omit = ["CUPTI_ACTIVITY_KIND_RUNTIME"]
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels, omit_tables=omit)
    assert read_trace(path).repeats == 5


@pytest.mark.parametrize("table", ["CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"])
def test_missing_required_tables_are_named(tmp_path, kernels, table):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels, omit_tables=[table])
    with pytest.raises(TraceError, match=f"missing table {table}") as info:
        read_trace(path)
    assert "\n" not in str(info.value)


def test_no_kernels(tmp_path):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", [])
    with pytest.raises(TraceError, match="no GPU kernels"):
        read_trace(path)


def test_clock_skew_end_before_start_names_the_row(tmp_path, kernels):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 10 WHERE rowid = 3")
    with pytest.raises(TraceError, match="clock skew in CUPTI_ACTIVITY_KIND_KERNEL row 3"):
        read_trace(path)


def test_unknown_schema_column_is_named(tmp_path, kernels):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN streamId TO stream")
    with pytest.raises(TraceError, match="no column 'streamId'"):
        read_trace(path)


def test_dangling_name_id(tmp_path, kernels):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 9999 WHERE rowid = 1")
    with pytest.raises(TraceError, match="row 1: name id not in StringIds"):
        read_trace(path)


def test_truncated_database_is_one_clear_error(tmp_path, kernels):
    data = write_nsys_sqlite(tmp_path / "t.sqlite", kernels).read_bytes()
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(TraceError, match=r"bad\.sqlite") as info:
        read_trace(bad)
    assert "\n" not in str(info.value)


def test_null_or_text_ids_become_unknown_not_garbage(tmp_path, kernels):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 'x', deviceId = NULL")
    run = read_trace(path)
    assert {k.stream for k in run.kernels if k.kind == "kernel"} == {None}
    assert {k.device for k in run.kernels if k.kind == "kernel"} == {None}
    assert run.to_dict()["kernels"][0]["stream"] is None


def _lagging_kernels():
    """4 GPU-bound steps of 10 x 1 ms kernels back to back on stream 7, plus a 6 ms side-stream
    kernel per step that runs into the next step's first kernels (the GPU lags the host)."""
    from workbench.evidence import MeasuredKernel

    out, t = [], 1.0
    for it in range(4):
        first = t
        for n in range(10):
            out.append(MeasuredKernel(name=f"sm80_xmma_gemm_{n}", category="other", rule="",
                                      start_s=t, duration_s=1e-3, device=0, stream=7,
                                      iteration=it))  # fmt: skip
            t += 1e-3
        out.append(MeasuredKernel(name="ncclDevKernel_AllReduce", category="other", rule="",
                                  start_s=first + 7e-3, duration_s=6e-3, device=0, stream=20,
                                  iteration=it))  # fmt: skip
    return sorted(out, key=lambda k: k.start_s)


def _host_windows(kernels, lead_s):
    """CPU-side step ranges that hold each step's launches (lead_s before its kernels)."""
    firsts = sorted({k.iteration: k.start_s - lead_s for k in reversed(kernels)}.items())
    out = []
    for n, (it, start) in enumerate(firsts):
        end = firsts[n + 1][1] - 1e-6 if n + 1 < len(firsts) else start + 10e-3
        out.append((it, start - 1e-6, end))
    return out


def test_nvtx_steps_get_non_overlapping_gpu_windows_when_the_gpu_lags(tmp_path):
    kernels = _lagging_kernels()
    lead = 25e-3  # launches run 2.5 steps ahead of the GPU
    windows = _host_windows(kernels, lead)
    nsys = read_trace(
        write_nsys_sqlite(tmp_path / "t.sqlite", kernels, iterations=windows, launch_lead_s=lead)
    )
    kineto = read_trace(
        write_kineto_trace(tmp_path / "t.json", kernels, iterations=windows, launch_lead_s=lead)
    )
    assert [k.iteration for k in nsys.kernels] == [k.iteration for k in kernels]
    walls = [it.wall_s for it in nsys.iterations]
    # Step N's window: its first GPU activity to step N+1's (10 ms). Each step's side kernel runs
    # 3 ms into the next step (the steps overlap on the GPU), so the last step's own work (13 ms,
    # longer than any step) is no step period: it is left out, and the run says so.
    assert walls == pytest.approx([10e-3, 10e-3, 10e-3])
    last_first = min(k.start_s for k in kernels if k.iteration == 3)
    assert sum(walls) == pytest.approx(last_first - kernels[0].start_s)
    assert [it.gap_s for it in nsys.iterations] == pytest.approx([0, 0, 0], abs=1e-9)
    for run in (nsys, kineto):
        (note,) = [w for w in run.warnings if w.startswith("the last step (#3)")]
        assert "13 ms from its first kernel" in note
        assert "ran 3 ms past its start" in note
    for a, b in zip(nsys.iterations, kineto.iterations, strict=True):
        assert (a.index, a.wall_s, a.kernel_s) == pytest.approx((b.index, b.wall_s, b.kernel_s))


def _rename_ranges(path, names, extra=()):
    """Give the NVTX ranges of ``path`` the ``names`` (in time order), through StringIds for odd
    ones (as nsys stores registered strings), and add ``extra`` (name, start_ns, end_ns) ranges."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT rowid FROM NVTX_EVENTS ORDER BY start").fetchall()
    for n, ((rowid,), name) in enumerate(zip(rows, names, strict=True)):
        if n % 2:
            sid = db.execute("SELECT MAX(id) + 1 FROM StringIds").fetchone()[0]
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (sid, name))
            update = "UPDATE NVTX_EVENTS SET text = NULL, textId = ? WHERE rowid = ?"
            db.execute(update, (sid, rowid))
        else:
            db.execute("UPDATE NVTX_EVENTS SET text = ? WHERE rowid = ?", (name, rowid))
    for name, start, end in extra:
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, NULL)", (start, end, name))
    db.commit()
    db.close()


def test_a_named_step_range_marks_the_iterations(tmp_path, kernels):
    from workbench.evidence import read_nsys

    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    noise = [("forward", 10_000_000_000, 10_001_000_000), ("train_step_extra", 0, 1)]
    _rename_ranges(path, ["train_step"] * 5, noise)
    default = read_trace(path)
    assert not default.steps_annotated  # no ProfilerStep / step N ranges left
    run = read_nsys(path, step_range="train_step")
    assert run.steps_annotated
    assert [it.index for it in run.iterations] == [0, 1, 2, 3, 4]
    reference = read_trace(write_nsys_sqlite(tmp_path / "ref.sqlite", kernels))
    assert [it.wall_s for it in run.iterations] == pytest.approx(
        [it.wall_s for it in reference.iterations]
    )


def test_numbered_named_ranges_keep_their_numbers(tmp_path, kernels):
    from workbench.evidence import read_nsys

    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    _rename_ranges(path, [f"my_iter#{n}" for n in (7, 8, 9, 10, 11)])
    run = read_nsys(path, step_range="my_iter")
    assert [it.index for it in run.iterations] == [7, 8, 9, 10, 11]


def test_benchmark_measure_ranges_are_steps_without_step_range(tmp_path, kernels):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    _rename_ranges(path, ["[param|model|0|measure|forward]"] * 5)
    run = read_trace(path)
    assert run.steps_annotated
    assert run.repeats == 5


def test_a_step_range_that_is_not_there_is_one_clear_error(tmp_path, kernels):
    from workbench.evidence import read_nsys

    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    with pytest.raises(TraceError, match=r"no NVTX range named 'train\\x1b' .*ProfilerStep#0"):
        read_nsys(path, step_range="train\x1b")
    with pytest.raises(TraceError, match="step range name is empty"):
        read_nsys(path, step_range=" ")
    bare = write_nsys_sqlite(tmp_path / "bare.sqlite", kernels, omit_tables=["NVTX_EVENTS"])
    with pytest.raises(TraceError, match="no NVTX_EVENTS table"):
        read_nsys(bare, step_range="train_step")


def test_trace_command_passes_the_step_range(tmp_path, kernels, capsys):
    from workbench.cli import main

    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels)
    _rename_ranges(path, ["train_step"] * 5, [])
    assert read_trace(path, step_range="train_step").steps_annotated
    assert main(["trace", str(path), "--step-range", "train_step"]) == 0
    assert "5 steps" in capsys.readouterr().out
    kineto = tmp_path / "k.json"
    kineto.write_text('{"traceEvents": []}')
    assert main(["trace", str(kineto), "--step-range", "train_step"]) == 2
    assert "NVTX range" in capsys.readouterr().err
