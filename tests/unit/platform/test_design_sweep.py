import json

import pytest

from workbench._warn import WorkbenchWarning
from workbench.errors import WorkbenchError
from workbench.platform.sweep import MAX_ATTEMPTS, grid, read_results, run_sweep


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
    assert header == {"schema_version": 2, "kind": "workbench-sweep"}
    assert run_sweep(points, out, workers=1).done == 0


def test_truncated_last_line_is_dropped_and_redone(tmp_path, points):
    out = tmp_path / "r.jsonl"
    run_sweep(points, out, workers=1, limit=3)
    text = out.read_text()
    out.write_text(text[: len(text) - 25])  # cut the third record mid-line
    with pytest.warns(WorkbenchWarning, match="truncated"):
        assert len(read_results(out)) == 2
    with pytest.warns(WorkbenchWarning, match="truncated"):
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


def test_failed_point_is_recorded_as_failed_and_retried_a_bounded_number_of_times(tmp_path):
    out = tmp_path / "r.jsonl"
    bad = grid(["h100-sxm"], ["gpt2"], seqs=[5000])  # longer than gpt2's context
    for attempt in range(1, MAX_ATTEMPTS + 1):
        s = run_sweep(bad, out, workers=1)
        assert (s.done, s.failed, s.skipped, s.gave_up) == (0, 1, 0, 0)
        (rec,) = read_results(out)
        assert (rec["status"], rec["attempt"]) == ("failed", attempt)
        assert "error" in rec["result"]
        assert "\n" not in rec["result"]["error"]
    s = run_sweep(bad, out, workers=1)
    assert (s.done, s.failed, s.gave_up) == (0, 0, 1)
    assert len(out.read_text().splitlines()) == 1 + MAX_ATTEMPTS


def test_a_point_that_failed_once_is_done_on_resume(tmp_path, points, monkeypatch):
    import workbench.mapper

    real = workbench.mapper.map_model
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("transient\nsecond line")
        return real(*args, **kwargs)

    monkeypatch.setattr(workbench.mapper, "map_model", flaky)
    out = tmp_path / "r.jsonl"
    s = run_sweep(points, out, workers=1)
    assert (s.done, s.failed) == (3, 1)
    failed = [r for r in read_results(out) if r["status"] == "failed"]
    assert failed[0]["result"]["error"] == "RuntimeError: transient second line"
    s = run_sweep(points, out, workers=1)
    assert (s.done, s.failed, s.skipped) == (1, 0, 3)
    recs = read_results(out)
    assert all(r["status"] == "done" for r in recs)
    assert sorted(r["attempt"] for r in recs) == [1, 1, 1, 2]


def test_version_1_file_error_lines_are_retried(tmp_path, points):
    out = tmp_path / "r.jsonl"
    p = points[0]
    old = {"key": p.key, "point": {}, "result": {"error": "old failure"}}
    out.write_text('{"schema_version": 1, "kind": "workbench-sweep"}\n' + json.dumps(old) + "\n")
    s = run_sweep(points[:1], out, workers=1)
    assert (s.done, s.skipped) == (1, 0)
    assert read_results(out)[0]["status"] == "done"


@pytest.mark.parametrize(
    "line",
    ['{"key": 3, "point": {}, "result": {}}', '{"key": "k", "point": {}, "result": []}', "[1]"],
)
def test_malformed_record_lines_are_one_line_errors(tmp_path, points, line):
    out = tmp_path / "r.jsonl"
    out.write_text('{"schema_version": 2, "kind": "workbench-sweep"}\n' + line + "\n")
    with pytest.raises(WorkbenchError, match=r"line 2 is not a sweep record"):
        run_sweep(points, out, workers=1)


def test_out_must_be_a_regular_file(tmp_path, points):
    with pytest.raises(WorkbenchError, match="is a directory"):
        run_sweep(points, tmp_path, workers=1)
    with pytest.raises(WorkbenchError, match="character device"):
        run_sweep(points, "/dev/null", workers=1)


def test_second_sweep_on_the_same_out_is_refused_while_the_first_holds_the_lock(tmp_path, points):
    from workbench.platform._sweep_file import locked

    out = tmp_path / "r.jsonl"
    # NOTE: a second open file description conflicts even in one process
    with locked(out), pytest.raises(WorkbenchError, match="another sweep is writing it") as exc:
        run_sweep(points, out, workers=1)
    assert "\n" not in str(exc.value)
    assert str(out) in str(exc.value)
    assert not out.exists()
    assert run_sweep(points, out, workers=1).done == 4  # released


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("garbage", "not a scheduler address"),
        ("tcp://127.0.0.1:1", "no Dask scheduler answered within 1 s"),
    ],
)
def test_bad_or_unreachable_scheduler_is_one_line_and_writes_nothing(
    tmp_path, points, address, message
):
    pytest.importorskip("distributed")
    out = tmp_path / "r.jsonl"
    with pytest.raises(WorkbenchError, match=message) as exc:
        run_sweep(points, out, scheduler=address, connect_timeout_s=1.0)
    assert "\n" not in str(exc.value)
    assert not out.exists()


def test_dask_scheduler_address_with_no_default_client(tmp_path, points):
    # NOTE: `sweep --scheduler ADDRESS` makes a client that is not the default one; Dask's
    # as_completed once looked for a default client and failed ("No clients found")
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "r.jsonl"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        s = run_sweep(points, out, scheduler=cluster.scheduler_address)
    assert (s.done, s.backend) == (len(points), "dask")
