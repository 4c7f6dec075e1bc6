"""`workbench trace DIR`, `run --from-trace DIR`, triage and the pack of job folders (issue 31)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.evidence.jobgen import write_job_folder
from workbench.review.records.store import load_record

DATA = Path(__file__).resolve().parents[2] / "data"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("jobs")
    write_job_folder(root / "base", ranks=4, steps=6, layers=4, jitter=0.02, seed=1)
    write_job_folder(root / "slow", ranks=4, steps=6, layers=4, jitter=0.02, seed=2,
                     slow=(2, "gemm", 1.5))  # fmt: skip
    return root


def test_trace_dir_names_the_straggler_in_text_and_json(capsys, jobs):
    code, out, _ = run(capsys, "trace", jobs / "slow")
    assert code == 0
    assert "rank 2 drives the step" in out
    assert "straggler: rank 2, gemm" in out
    code, out, _ = run(capsys, "trace", jobs / "slow", "--json")
    doc = json.loads(out)
    assert [(s["rank"], s["category"]) for s in doc["stragglers"]] == [(2, "gemm")]
    assert doc["stragglers"][0]["lost_s_per_step"] > 0
    assert doc["job"]["step_s"] == pytest.approx(
        sorted(max(r["steps_s"][n] for r in doc["ranks"]) for n in range(5))[2]
    )
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]
    assert all(r["collective_wait_s"] >= 0 for r in doc["ranks"])


def test_unchanged_folder_has_no_straggler(capsys, jobs):
    _, out, _ = run(capsys, "trace", jobs / "base", "--json")
    doc = json.loads(out)
    assert doc["stragglers"] == []
    assert doc["headline"].startswith("no rank drives the step")


def test_against_pairs_two_jobs_per_step_and_rank(capsys, jobs):
    code, out, _ = run(capsys, "trace", jobs / "base", "--against", jobs / "slow", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["job_shift"]["method"] == "paired"
    assert doc["job_shift"]["beyond_noise"]
    assert doc["job_shift"]["estimate_s"] > 0
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]
    assert all(r["shift"]["pairs"] == 5 for r in doc["ranks"])
    _, text, _ = run(capsys, "trace", jobs / "base", "--against", jobs / "slow")
    assert "beyond the noise" in text


def test_a_bad_rank_file_is_one_line_on_stderr(capsys, jobs, tmp_path):
    shutil.copytree(jobs / "slow", tmp_path / "job")
    (tmp_path / "job" / "rank-1.json").write_text('{"traceEvents": [')
    code, out, err = run(capsys, "trace", tmp_path / "job")
    assert code == 0
    (line,) = err.strip().splitlines()
    assert line.startswith("workbench: skipped rank file: ")
    assert "rank-1.json" in line
    # NOTE: with a rank missing, the waits are not estimated (the last to arrive may be it)
    assert "3 rank(s) read of world size 4" in out
    assert "3 of 4 ranks read" in out


def test_mixed_jobs_exit_2_in_one_line(capsys, tmp_path):
    for name in ("dlrm_a100.json.gz", "dlrm_v100_rank1.json.gz"):
        shutil.copy(DATA / "hta" / name, tmp_path / name)
    code, out, err = run(capsys, "trace", tmp_path)
    assert (code, out) == (2, "")
    (line,) = err.strip().splitlines()
    assert "not one job" in line
    assert "world sizes" in line


def test_one_trace_flags_are_refused_for_a_folder(capsys, jobs):
    code, _, err = run(capsys, "trace", jobs / "base", "--hardware", "h100-sxm")
    assert code == 2
    assert "read one trace file" in err


def test_records_triage_and_pack_of_two_job_folders(capsys, jobs, tmp_path):
    for name in ("base", "slow"):
        code, out, _ = run(capsys, "run", "--from-trace", jobs / name,
                           "--record", tmp_path / f"{name}.json")  # fmt: skip
        assert code == 0
        assert "job step" in out
    base, slow = load_record(tmp_path / "base.json"), load_record(tmp_path / "slow.json")
    assert slow.measurement is not None
    assert base.measurement is not None
    assert [r[0] for r in slow.measurement.rank_steps_s] == [0, 1, 2, 3]
    assert [(r, c) for r, c, _ in slow.measurement.stragglers] == [(2, "gemm")]
    assert base.measurement.stragglers == ()
    _, out, _ = run(capsys, "triage", tmp_path / "base.json", tmp_path / "slow.json")
    assert "job: rank 2 drives the step" in out
    assert "the baseline job has no straggler" in out
    run(capsys, "review", jobs / "base", jobs / "slow", "--out", tmp_path / "pack.html",
        "--no-simulate")  # fmt: skip
    md = (tmp_path / "pack.md").read_text()
    assert "## Per rank: step time, collective wait and stragglers (job folders)" in md
    assert "gemm +" in md
    assert "Per rank" in (tmp_path / "pack.html").read_text()


def test_real_two_rank_job(capsys):
    code, out, _ = run(capsys, "trace", DATA / "hta_job", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["world_size"], doc["ranks_read"], doc["steps"]) == (128, 2, [552])
    assert any("2 of 128 ranks read" in w for w in doc["warnings"])


def test_scheduler_flag_gives_the_in_process_document(capsys, jobs):
    distributed = pytest.importorskip("distributed")
    _, inline, _ = run(capsys, "trace", jobs / "slow", "--json")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        code, dask, _ = run(capsys, "trace", jobs / "slow", "--json",
                            "--scheduler", cluster.scheduler_address)  # fmt: skip
    assert code == 0
    assert json.loads(dask) == json.loads(inline)
    _, pooled, _ = run(capsys, "trace", jobs / "slow", "--json", "--workers", "2")
    assert json.loads(pooled) == json.loads(inline)


def test_unreachable_scheduler_exits_2_in_one_line(capsys, jobs):
    code, _, err = run(capsys, "trace", jobs / "base", "--scheduler", "tcp://127.0.0.1:9",
                       "--connect-timeout", "1")  # fmt: skip
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "no Dask scheduler answered" in line


def test_one_rank_folder_says_there_are_no_peers(capsys, tmp_path):
    write_job_folder(tmp_path, ranks=1, steps=4, layers=2)
    code, out, _ = run(capsys, "trace", tmp_path, "--json")
    doc = json.loads(out)
    assert (code, doc["stragglers"], doc["ranks_read"]) == (0, [], 1)
    assert doc["headline"].startswith("one rank read")
