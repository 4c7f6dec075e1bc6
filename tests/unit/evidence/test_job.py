"""A job's folder of ranks: per-rank summaries, their round trip, and combining them (issue 31)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.evidence import MeasuredKernel, TraceError, write_kineto_trace
from workbench.evidence.job import RankSummary, rank_files, summarize_rank
from workbench.evidence.jobgen import JobShape, layers_for, write_job_folder
from workbench.evidence.stragglers import _median_without, combine_ranks

DATA = Path(__file__).resolve().parents[2] / "data"


def _job(folder: Path):
    return combine_ranks([summarize_rank(f) for f in rank_files(folder)])


def test_summary_round_trips_through_json(tmp_path):
    write_job_folder(tmp_path, ranks=2, steps=3, layers=2)
    s = summarize_rank(tmp_path / "rank-1.json")
    back = RankSummary.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back == s
    assert (s.rank, s.world_size, s.backend) == (1, 2, "nccl")
    assert [st.index for st in s.steps] == [1, 2, 3]
    assert all(len(st.collectives) == 4 for st in s.steps)  # 4 buckets, one all-reduce each


@pytest.mark.parametrize(
    "bad",
    [{}, {"kind": "x"}, {"kind": "workbench.rank_summary", "source": "f", "rank": True},
     {"kind": "workbench.rank_summary", "source": "f", "rank": 0, "steps": []}],
)  # fmt: skip
def test_malformed_summary_is_refused(bad):
    with pytest.raises(TraceError):
        RankSummary.from_dict(bad)


def test_non_finite_time_in_summary_is_refused(tmp_path):
    write_job_folder(tmp_path, ranks=1, steps=2, layers=1)
    d = summarize_rank(tmp_path / "rank-0.json").to_dict()
    d["steps"][0]["wall_s"] = float("nan")
    with pytest.raises(TraceError, match="wall_s"):
        RankSummary.from_dict(d)


def test_rank_files_skips_hidden_and_other_files(tmp_path):
    write_job_folder(tmp_path, ranks=2, steps=2, layers=1)
    (tmp_path / ".rank-0.json.tmp").write_text("{}")
    (tmp_path / "notes.txt").write_text("x")
    assert [f.name for f in rank_files(tmp_path)] == ["rank-0.json", "rank-1.json"]
    with pytest.raises(TraceError, match="holds no trace"):
        rank_files(tmp_path / "empty" if (tmp_path / "empty").mkdir() is None else tmp_path)
    with pytest.raises(TraceError, match="not a folder"):
        rank_files(tmp_path / "rank-0.json")


def test_peers_wait_for_a_slow_gemm_rank_and_job_step_is_the_slowest(tmp_path):
    shape = JobShape(gemm_s=200e-6, elementwise_s=30e-6, transfer_s=400e-6, host_gap_s=50e-6)
    write_job_folder(tmp_path, ranks=4, steps=5, buckets=4, layers=8, shape=shape,
                     slow=(2, "gemm", 1.5))  # fmt: skip
    job = _job(tmp_path)
    # each bucket: rank 2 arrives 8 x 100 us late; its peers wait that in every all-reduce
    for r in job.ranks:
        expected = 0.0 if r.rank == 2 else 4 * 8 * 100e-6
        assert r.wait_s == pytest.approx(expected, abs=2e-6)
    assert [(s.rank, s.category) for s in job.stragglers] == [(2, "gemm")]
    assert job.stragglers[0].lost_s == pytest.approx(4 * 8 * 100e-6, rel=0.01)
    for n, step in enumerate(job.job_steps_s):
        assert step == max(r.walls_s[n] for r in job.ranks)
    assert job.steps == (2, 3, 4, 5)  # the warm-up step left out


def test_one_rank_has_no_straggler(tmp_path):
    write_job_folder(tmp_path, ranks=1, steps=3, layers=2)
    job = _job(tmp_path)
    assert job.stragglers == ()
    assert job.ranks[0].wait_s == 0


def test_mixed_jobs_are_refused_in_one_line(tmp_path):
    # HTA's DLRM traces: rank 3 of 8 (A100) and rank 1 of 2 (V100): two jobs
    for name in ("dlrm_a100.json.gz", "dlrm_v100_rank1.json.gz"):
        shutil.copy(DATA / "hta" / name, tmp_path / name)
    with pytest.raises(TraceError, match=r"not one job: .*world sizes") as err:
        _job(tmp_path)
    assert "\n" not in str(err.value)


def test_repeated_rank_is_refused(tmp_path):
    write_job_folder(tmp_path / "a", ranks=2, steps=2, layers=1)
    runs = [summarize_rank(tmp_path / "a" / "rank-0.json")] * 2
    with pytest.raises(TraceError, match="rank 0 is in"):
        combine_ranks(runs)


def test_trace_without_rank_is_refused_naming_the_file(tmp_path):
    k = MeasuredKernel(name="gemm", category="gemm", rule="r", start_s=1.0, duration_s=1e-3,
                       device=0, stream=7, iteration=1)  # fmt: skip
    path = write_kineto_trace(tmp_path / "norank.json", [k])
    with pytest.raises(TraceError, match=r"norank.json: its rank is unknown"):
        summarize_rank(path)


def test_missing_ranks_warn_and_waits_are_not_estimated(tmp_path):
    write_job_folder(tmp_path, ranks=4, steps=3, layers=2, slow=(1, "gemm", 2.0))
    (tmp_path / "rank-3.json").unlink()
    job = _job(tmp_path)
    assert not job.waits_matched
    assert all(r.wait_s == 0 for r in job.ranks)
    assert any("3 of 4 ranks read" in w for w in job.warnings)


def test_real_two_ranks_of_one_job():
    job = _job(DATA / "hta_job")
    assert ([r.rank for r in job.ranks], job.world_size, job.backend) == ([0, 1], 128, "nccl")
    assert job.steps == (552,)
    for r in job.ranks:
        assert r.step_s > 0
        assert r.work_s <= r.step_s
        assert dict(r.breakdown)["span_s"] > 0


@pytest.mark.parametrize(("values", "drop", "median"), [
    ([1.0, 2.0, 3.0], 1.0, 2.5), ([1.0, 2.0, 3.0], 3.0, 1.5), ([1.0, 2.0, 3.0, 10.0], 2.0, 3.0),
    ([5.0, 5.0], 5.0, 5.0),
])  # fmt: skip
def test_median_without_one_value(values, drop, median):
    assert _median_without(values, drop) == median


def test_layers_for_a_target_size_makes_a_file_about_that_size(tmp_path):
    layers = layers_for(2_000_000, steps=3, buckets=2)
    (f,) = write_job_folder(tmp_path, ranks=1, steps=3, buckets=2, layers=layers)
    assert 0.7 < f.stat().st_size / 2_000_000 < 1.3


def test_gzip_job_folder_reads_as_the_plain_one(tmp_path):
    write_job_folder(tmp_path / "plain", ranks=2, steps=3, layers=2, seed=4)
    write_job_folder(tmp_path / "gz", ranks=2, steps=3, layers=2, seed=4, gz=True)
    plain, gz = _job(tmp_path / "plain"), _job(tmp_path / "gz")
    assert [f.name for f in rank_files(tmp_path / "gz")] == ["rank-0.json.gz", "rank-1.json.gz"]
    assert gz.job_steps_s == plain.job_steps_s
