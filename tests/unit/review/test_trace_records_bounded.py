"""Records written from traces stay readable, and a trace is never overwritten (issue 17)."""

from __future__ import annotations

import os

import pytest

from workbench.cli import main
from workbench.evidence import IterationStats, MeasuredKernel, MeasuredRun, write_kineto_trace
from workbench.review.join.from_trace import MAX_RECORD_KERNELS, record_from_trace
from workbench.review.records import store as records
from workbench.review.records.store import RecordError, load_record, save_record


def _run(n_names: int) -> MeasuredRun:
    kernels = tuple(
        MeasuredKernel(name=f"void kernel_{i}<float>", category=("gemm", "elementwise")[i % 2],
                       rule="r", start_s=i * 1e-5, duration_s=(1 + i % 7) * 1e-6, device=0,
                       stream=7, iteration=0)
        for i in range(n_names)
    )  # fmt: skip
    it = IterationStats(index=0, wall_s=n_names * 1e-5, kernel_s=0.5, gap_s=0.1, copy_s=0.0)
    return MeasuredRun(source="t.json", format="kineto", tags=(("device", "x"),),
                       kernels=kernels, iterations=(it,))  # fmt: skip


def test_ten_to_the_five_distinct_names_round_trip(tmp_path):
    run = _run(100_000)
    record = record_from_trace(run)
    path = save_record(record, tmp_path / "r.json")
    assert path.stat().st_size < records.MAX_RECORD_BYTES / 16
    back = load_record(path)
    assert len(back.kernels) == MAX_RECORD_KERNELS + 2  # the longest, then one row per category
    rest = {k.name: k.measured_s for k in back.kernels[MAX_RECORD_KERNELS:]}
    assert set(rest) == {"(49500 more kernels, category gemm)",
                         "(49500 more kernels, category elementwise)"}  # fmt: skip
    total = sum(k.measured_s or 0.0 for k in back.kernels)
    assert total == pytest.approx(sum(k.duration_s for k in run.kernels))
    kept = min(k.measured_s or 0.0 for k in back.kernels[:MAX_RECORD_KERNELS])
    assert kept == pytest.approx(7e-6)  # the kept rows are the longest kernels
    assert len(back.measurement.kernels) == MAX_RECORD_KERNELS + 1


def test_a_record_over_the_load_limit_is_refused_before_writing(tmp_path, monkeypatch):
    record = record_from_trace(_run(50))
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 4096)
    with pytest.raises(RecordError, match=r"r\.json: the record would be .* over the 0 MiB"):
        save_record(record, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def _trace(tmp_path):
    k = MeasuredKernel(name="sm90_xmma_gemm_bf16", category="gemm", rule="", start_s=1.0,
                       duration_s=1e-3, device=0, stream=7, iteration=1)  # fmt: skip
    return write_kineto_trace(tmp_path / "t.json", [k])


def _one_error(capsys, needle):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("workbench: error: "), err[0]
    assert needle in err[0], err[0]


@pytest.mark.parametrize("path", ["", "  "])
def test_an_empty_trace_path_is_an_error_not_a_default_model(tmp_path, capsys, path):
    out = tmp_path / "r.json"
    assert main(["run", "--from-trace", path, "--record", str(out)]) == 2
    _one_error(capsys, "--from-trace: an empty value")
    assert not out.exists()


@pytest.mark.parametrize("how", ["same", "dotdot", "symlink", "hardlink"])
def test_record_may_not_name_the_trace(tmp_path, capsys, how):
    trace = _trace(tmp_path)
    before = trace.read_bytes()
    record = {
        "same": str(trace),
        "dotdot": str(tmp_path / "x" / ".." / "t.json"),
        "symlink": str(tmp_path / "link.json"),
        "hardlink": str(tmp_path / "hard.json"),
    }[how]
    (tmp_path / "x").mkdir()
    os.symlink(trace, tmp_path / "link.json")
    os.link(trace, tmp_path / "hard.json")
    assert main(["run", "--from-trace", str(trace), "--record", record]) == 2
    _one_error(capsys, "names the input")
    assert trace.read_bytes() == before


def test_review_out_may_not_name_an_input(tmp_path, capsys):
    trace = _trace(tmp_path).rename(tmp_path / "t.md")  # read by content, whatever its suffix
    before = trace.read_bytes()
    out = tmp_path / "t.html"  # its Markdown twin would be the trace
    assert main(["review", str(trace), str(trace), "--out", str(out)]) == 2
    _one_error(capsys, "names the input")
    assert trace.read_bytes() == before
    assert not out.exists()
