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
