"""A job folder read in this process, on local processes and on Dask gives one job (issue 31).

A bad rank file is one line naming it and the other ranks are still combined; a folder with no
readable rank, or that is not one job, is refused with the reason; nothing hangs.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.evidence import TraceError
from workbench.evidence.jobgen import write_job_folder
from workbench.platform.job_run import read_job
from workbench.review.join.job_summary import job_document

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("job")
    write_job_folder(out, ranks=4, steps=5, layers=4, jitter=0.02, slow=(1, "gemm", 1.5), seed=3)
    return out


def test_process_pool_gives_the_in_process_figures(folder):
    inline = job_document(read_job(folder, workers=1))
    pooled = job_document(read_job(folder, workers=2))
    assert pooled == inline
    assert inline["stragglers"][0]["rank"] == 1


def test_dask_local_cluster_gives_the_in_process_figures(folder):
    distributed = pytest.importorskip("distributed")
    inline = job_document(read_job(folder, workers=1))
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        by_client = job_document(read_job(folder, scheduler=client))
        by_address = job_document(read_job(folder, scheduler=cluster.scheduler_address))
    assert by_client == inline
    assert by_address == inline


def test_unreachable_scheduler_is_one_line_within_the_timeout(folder):
    start = time.monotonic()
    with pytest.raises(WorkbenchError, match="no Dask scheduler answered") as err:
        read_job(folder, scheduler="tcp://127.0.0.1:9", connect_timeout_s=1.0)
    assert time.monotonic() - start < 30
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_rank_file_is_named_and_the_others_reported(folder, tmp_path, workers):
    shutil.copytree(folder, tmp_path / "job")
    bad = tmp_path / "job" / "rank-2.json"
    bad.write_text(bad.read_text()[:5000])  # truncated mid-event
    job = read_job(tmp_path / "job", workers=workers)
    assert [r.rank for r in job.ranks] == [0, 1, 3]
    ((path, why),) = job.skipped
    assert path.endswith("rank-2.json")
    assert "rank-2.json" in why
    assert "\n" not in why


def test_a_pipe_named_like_a_rank_is_refused_not_read(folder, tmp_path):
    shutil.copytree(folder, tmp_path / "job")
    os.mkfifo(tmp_path / "job" / "rank-9.json")
    job = read_job(tmp_path / "job")
    assert [Path(p).name for p, _ in job.skipped] == ["rank-9.json"]
    assert "not a regular file" in job.skipped[0][1]


def test_no_readable_rank_refuses_the_folder(tmp_path):
    (tmp_path / "rank-0.json").write_text("not json")
    (tmp_path / "rank-1.json").write_text("")
    with pytest.raises(TraceError, match=r"no rank trace could be read \(first: .*rank-0.json"):
        read_job(tmp_path)


def test_mixed_jobs_refuse_the_folder(tmp_path):
    for name in ("dlrm_a100.json.gz", "dlrm_v100_rank1.json.gz"):
        shutil.copy(DATA / "hta" / name, tmp_path / name)
    with pytest.raises(TraceError, match="not one job"):
        read_job(tmp_path, workers=2)


def test_progress_bar_counts_the_ranks_on_stderr(folder, capsys):
    job = read_job(folder, progress=True)
    err = capsys.readouterr().err
    assert "ranks" in err
    assert "/4 " in err  # the bar counts out of the 4 rank files
    assert len(job.ranks) == 4
