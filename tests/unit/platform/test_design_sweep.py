import json

import pytest

from workbench.errors import WorkbenchError
from workbench.platform.sweep import grid, read_results, run_sweep


@pytest.fixture
def points():
    return grid(["h100-sxm"], ["gpt2"], batches=[1, 4], seqs=[64, 128], dtypes=["bf16"])


def keys(path):
    return [r["key"] for r in read_results(path)]


def test_grid_is_the_product(points):
    assert len(points) == 4
    assert len({p.key for p in points}) == 4
    with pytest.raises(WorkbenchError, match="--batch"):
        grid(["h100-sxm"], ["gpt2"], batches=[0])


def test_inline_resume_has_no_duplicates(tmp_path, points):
    out = tmp_path / "r.jsonl"
    first = run_sweep(points, out, workers=1, limit=2)
    assert (first.done, first.skipped) == (2, 0)
    second = run_sweep(points, out, workers=1)
    assert (second.done, second.skipped) == (2, 2)
    assert sorted(keys(out)) == sorted(p.key for p in points)
    header = json.loads(out.read_text().splitlines()[0])
    assert header == {"schema_version": 1, "kind": "workbench-sweep"}
    assert run_sweep(points, out, workers=1).done == 0


def test_truncated_last_line_is_dropped_and_redone(tmp_path, points):
    out = tmp_path / "r.jsonl"
    run_sweep(points, out, workers=1, limit=3)
    text = out.read_text()
    out.write_text(text[: len(text) - 25])  # cut the third record mid-line
    with pytest.warns(UserWarning, match="truncated"):
        assert len(read_results(out)) == 2
    with pytest.warns(UserWarning, match="truncated"):
        s = run_sweep(points, out, workers=1)
    assert s.done == 2
    assert sorted(keys(out)) == sorted(p.key for p in points)


def test_foreign_or_newer_file_is_refused(tmp_path, points):
    out = tmp_path / "r.jsonl"
    out.write_text('{"schema_version": 99, "kind": "workbench-sweep"}\n')
    with pytest.raises(WorkbenchError, match="newer"):
        run_sweep(points, out, workers=1)
    out.write_text("hello\nworld\n")
    with pytest.raises(WorkbenchError, match=r"not a (workbench )?sweep"):
        run_sweep(points, out, workers=1)


def test_process_pool(tmp_path, points):
    out = tmp_path / "r.jsonl"
    s = run_sweep(points, out, workers=2)
    assert (s.done, s.backend) == (4, "process-pool")
    rec = read_results(out)[0]["result"]
    assert rec["time_s"] > 0
    assert 0 < rec["mfu"] < 1


def test_dask_local_cluster_and_resume(tmp_path, points):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "r.jsonl"
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        first = run_sweep(points, out, scheduler=client, limit=2)
        second = run_sweep(points, out, scheduler=client)
    assert (first.done, second.done, second.skipped, second.backend) == (2, 2, 2, "dask")
    assert sorted(keys(out)) == sorted(p.key for p in points)


def test_unmappable_point_records_an_error(tmp_path):
    out = tmp_path / "r.jsonl"
    run_sweep(grid(["h100-sxm"], ["gpt2"], seqs=[5000]), out, workers=1)
    assert "error" in read_results(out)[0]["result"]
