"""Autotuning, Spearman, the plan cache, sweeps and workbench validate."""

import json
import os
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.execution import get_backend
from workbench.hw import load_hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.lowering import lower
from workbench.options import MapOptions
from workbench.tuning import PlanCache, autotune, average_ranks, spearman, sweep_best_plan
from workbench.tuning.cache import CACHE_SCHEMA_VERSION, plan_key

os.environ.setdefault("TQDM_DISABLE", "1")
OPTS = MapOptions(dtype="fp32")
HW = load_hardware("teaching")


def _graph(m=48, k=64, n=40):
    return Graph(
        name="g",
        ops=(
            O.Linear(
                name="fc", inputs=("x",), tokens=(m,), in_features=k, out_features=n, dtype="fp32"
            ),
        ),
    )


def _kernel():
    return lower(_graph(), HW, OPTS)[0]


def test_spearman_handles_ties_and_small_inputs():
    assert average_ranks([3, 1, 1]).tolist() == [3.0, 1.5, 1.5]
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1])[0] == pytest.approx(-1.0)
    rho, _ = spearman([1, 1, 2, 3], [1, 2, 2, 3])
    assert 0 < rho < 1
    assert spearman([1, 2], [1, 2]) == (None, "needs at least 3 candidates to rank, got 2")
    assert spearman([1, 1, 1], [1, 2, 3])[0] is None


def test_autotune_times_k_candidates_and_ranks_them(tmp_path):
    cache = PlanCache(tmp_path / "plans.json")
    r = autotune(
        _kernel(),
        HW,
        OPTS,
        k=4,
        backend="numpy",
        warmup=0,
        repeats=2,
        cache=cache,
        graph=_graph(),
        progress=False,
    )
    assert len(r.candidates) == 4
    assert r.spearman is None or -1.0 <= r.spearman <= 1.0
    # the best is the fastest group's cost-model pick; a tie never overrules the model
    assert r.best_tiling == r.tied_best[0].tiling
    assert all(len(c.measured.samples) == 2 for c in r.candidates)
    assert r.gain_over_model >= 1.0
    again = autotune(_kernel(), HW, OPTS, cache=PlanCache(tmp_path / "plans.json"))
    assert again.from_cache
    assert again.best_tiling.shape == r.best_tiling.shape


def test_autotune_k_below_three_gives_no_spearman():
    r = autotune(_kernel(), HW, OPTS, k=2, backend="numpy", warmup=0, repeats=1, progress=False)
    assert r.spearman is None
    assert "at least 3" in r.spearman_note


def test_plan_cache_round_trip_and_atomic_write(tmp_path):
    path = tmp_path / "c.json"
    key = plan_key(_kernel(), HW, get_backend("numpy"))
    t = lower(_graph(), HW, OPTS)
    from workbench.cost.search import rank

    tiling = rank(t[0], HW, OPTS, k=1)[0][0]
    PlanCache(path).put(key, tiling, 1e-3)
    got = PlanCache(path).get(key)
    assert got is not None
    assert got[0].shape == tiling.shape
    assert got[1] == 1e-3
    data = json.loads(path.read_text())
    assert data["schema_version"] == CACHE_SCHEMA_VERSION
    # no temp file left behind (the sidecar lock file stays: removing it would race)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".c.json.lock", "c.json"]


def _tuned(tmp_path):
    """A cache file holding one tuned entry for ``_kernel()``; returns (path, key, result)."""
    path = tmp_path / "plans.json"
    r = autotune(
        _kernel(), HW, OPTS, k=2, backend="numpy", warmup=0, repeats=1,
        cache=PlanCache(path), graph=_graph(), progress=False,
    )  # fmt: skip
    return path, plan_key(_kernel(), HW, get_backend("numpy")), r


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("split_k", 10**6, "split_k 1000000 is not in the mapspace"),
        ("tile_m", 4096, "tile_m 4096 is not in the mapspace"),
        ("tile_k", 13, "tile_k 13"),
        ("dataflow", "diagonal", "dataflow 'diagonal'"),
    ],
)
def test_poisoned_cache_entry_is_ignored_and_retuned(tmp_path, capsys, field, value, why):
    path, key, _ = _tuned(tmp_path)
    data = json.loads(path.read_text())
    data["entries"][key]["tiling"][field] = value
    data["entries"][key]["measured_s"] = 1e-9  # a forged "fast" figure
    path.write_text(json.dumps(data))
    with pytest.warns(RuntimeWarning, match=why):
        again = autotune(
            _kernel(), HW, OPTS, k=2, backend="numpy", warmup=0, repeats=1,
            cache=PlanCache(path), graph=_graph(), progress=False,
        )  # fmt: skip
    assert not again.from_cache
    assert len(again.candidates) == 2
    fixed = json.loads(path.read_text())["entries"][key]
    assert fixed["tiling"][field] != value  # replaced on disk
    assert fixed["measured_s"] > 1e-9
    assert autotune(_kernel(), HW, OPTS, cache=PlanCache(path), progress=False).from_cache


def test_a_tile_that_does_not_fit_is_refused():
    import numpy as np

    from workbench.scheduling.gemm import gemm_mapspace
    from workbench.scheduling.tiling import Tiling
    from workbench.tuning._plan_check import mapspace_problem

    big = lower(_graph(1024, 1024, 1024), HW, OPTS)[0]
    ms = gemm_mapspace(big, HW)
    i = np.unravel_index(int(np.argmin(np.broadcast_to(ms.fits, ms.shape))), ms.shape)
    assert not np.broadcast_to(ms.fits, ms.shape)[i]
    axes = (ms.tm, ms.tn, ms.tk, ms.stages, ms.split)
    tm, tn, tk, st, sk = (int(np.ravel(a)[j]) for a, j in zip(axes, i[:5], strict=True))
    bad = Tiling(
        tile_m=tm, tile_n=tn, tile_k=tk, stages=st, split_k=sk, raster="mn" if i[5] == 0 else "nm"
    )
    assert "more than" in mapspace_problem(big, HW, bad)
    good = Tiling(tile_m=tm, tile_n=tn, tile_k=tk, stages=1, split_k=1)
    assert mapspace_problem(big, HW, good) == ""


@pytest.mark.parametrize(
    "entry",
    [
        {"tiling": {"tile_m": True}, "measured_s": 1.0},
        {"tiling": {"tile_m": 16, "tile_n": 16, "tile_k": 16, "stages": 1, "split_k": 1,
                    "raster": "mn", "dataflow": "output_stationary"}, "measured_s": float("nan")},
        {"tiling": {"tile_m": 16, "tile_n": 16, "tile_k": 16, "stages": 1, "split_k": -1,
                    "raster": "mn", "dataflow": "output_stationary"}, "measured_s": 1e-3},
        [1, 2],
    ],
)  # fmt: skip
def test_malformed_entries_are_dropped_with_one_warning(tmp_path, entry):
    path = tmp_path / "c.json"
    body = {"kind": "workbench-plan-cache", "schema_version": 1, "entries": {"k": entry}}
    path.write_text(json.dumps(body))
    with pytest.warns(RuntimeWarning, match="1 malformed entries ignored"):
        assert len(PlanCache(path)) == 0


def _writer(path: str, tag: str, n: int) -> None:
    from workbench.scheduling.tiling import Tiling

    cache = PlanCache(path)  # opened once: its view of the file goes stale while the other writes
    for i in range(n):
        cache.put(f"{tag}{i}", Tiling(tile_m=16, tile_n=16, tile_k=16), 1e-3 + i * 1e-6)


def test_two_processes_writing_the_cache_both_keep_their_entries(tmp_path):
    import multiprocessing

    path = str(tmp_path / "shared.json")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, tag, 25)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = PlanCache(path)
    assert len(cache) == 50
    assert {f"{t}{i}" for t in "ab" for i in range(25)} == set(
        json.loads(Path(path).read_text())["entries"]
    )


def test_plan_key_changes_with_the_kernel():
    bk = get_backend("numpy")
    other = lower(_graph(m=49), HW, OPTS)[0]
    assert plan_key(_kernel(), HW, bk) != plan_key(other, HW, bk)
    assert plan_key(_kernel(), HW, bk) == plan_key(_kernel(), HW, bk)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"kind": "workbench-plan-cache", "schema_v', "corrupt"),
        ('{"kind": "something-else", "schema_version": 1, "entries": {}}', "not a workbench"),
        ('{"kind": "workbench-plan-cache", "schema_version": 99, "entries": {}}', "newer"),
    ],
)
def test_bad_cache_files_are_ignored_with_a_warning(tmp_path, text, why):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.warns(RuntimeWarning, match=why):
        cache = PlanCache(path)
    assert len(cache) == 0


def test_workbench_warnings_print_one_line(capsys):
    import warnings

    from workbench._warn import warn

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = __import__("workbench._warn", fromlist=["_show"])._show
        warn("plan cache x.json: corrupt\nsecond line; ignoring it")
    err = capsys.readouterr().err
    assert err == "workbench: warning: plan cache x.json: corrupt second line; ignoring it\n"


def test_sweep_reports_every_point():
    rows = sweep_best_plan(lambda b, s: _graph(m=b * s), [1, 2], [8, 64], HW, OPTS, progress=False)
    assert [(r.batch, r.seq) for r in rows] == [(1, 8), (1, 64), (2, 8), (2, 64)]
    assert all(r.measured_s is None and r.predicted_s > 0 for r in rows)
    assert not rows[0].changed


def test_validate_quick_json_has_the_contract_keys(capsys, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert (
        main(
            [
                "validate",
                "--quick",
                "--format",
                "json",
                "--hardware",
                "teaching",
                "--repeats",
                "1",
                "--rounds",
                "1",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {"median_abs_pct_error", "backend", "hardware", "kernels"} <= out.keys()
    assert out["backend"] == "numpy"
    assert out["hardware"] == "teaching"
    from workbench.tuning._suite import suite

    assert out["cases"] == len(suite(quick=True))
    assert len(out["kernels"]) >= out["cases"]
    assert out["rounds"] == 1
    assert out["blas_threads"] == 1
    assert isinstance(out["class_mismatches"], list)
    assert set(out["median_abs_pct_error_by_kind"]) == {k["kind"] for k in out["kernels"]}
    for k in out["kernels"]:
        assert {
            "name",
            "predicted_s",
            "measured_s",
            "abs_pct_error",
            "predicted_bottleneck",
            "measured_bottleneck",
            "class_match",
        } <= k.keys()
        assert k["measured_bottleneck"] in ("overhead", "bandwidth", "compute")
        assert len(k["round_errors_pct"]) == 1  # one round: its error is the kernel's
        assert k["abs_pct_error"] == pytest.approx(abs(k["round_errors_pct"][0]))
        assert k["abs_pct_error"] == pytest.approx(
            100 * abs(k["predicted_s"] - k["measured_s"]) / k["measured_s"]
        )
        assert k["measured_best_s"] <= k["measured_s"]


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["validate", "--backend", "tpu", "--quick"], "unknown"),
        (["validate", "--hardware", "missing/host.yaml", "--quick"], "no such file"),
        (["validate", "--blas-threads", "-1", "--quick"], "--blas-threads"),
    ],
)
def test_validate_bad_input_exits_2_with_one_line(capsys, argv, msg):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err
    assert err.count("\n") == 1


def _host(issue_s: float):
    hw = HW.model_copy(deep=True)
    data = hw.model_dump()
    data["overheads"]["tile_issue_s"] = issue_s
    data["scheduling"] = "software_issued" if issue_s else "hardware_scheduled"
    data["matrix_engine"]["cores"] = 1
    data["overheads"]["kernel_launch_s"] = 1e-10
    return type(hw).model_validate(data)


def test_tile_issue_cost_makes_tiny_forced_tiles_slower():
    from workbench.cost.search import schedule
    from workbench.options import TileOverride

    hw = _host(2e-6)
    kernel = lower(_graph(256, 256, 256), hw, OPTS)[0]
    native = hw.matrix_engine.native_tile_m
    tiny = MapOptions(
        dtype="fp32", tiles=(TileOverride(pattern="*", m=native, n=native, k=native),)
    )
    large = MapOptions(dtype="fp32", tiles=(TileOverride(pattern="*", m=256, n=256, k=256),))
    t_tiny = schedule(kernel, hw, tiny)[1]
    t_large = schedule(kernel, hw, large)[1]
    assert t_tiny.total_s > t_large.total_s
    # The issue term is what separates them: without it the tiny tiles are not that much slower.
    base = _host(0.0)
    gap0 = schedule(kernel, base, tiny)[1].total_s - schedule(kernel, base, large)[1].total_s
    assert t_tiny.total_s - t_large.total_s > gap0 + 1e-6


def test_measured_class_rules():
    from workbench.cost.host import home_level
    from workbench.tuning.validate import CLASS_MARGIN, measured_class

    hw = _host(1e-6)
    kernel = _kernel()
    mem = kernel.bytes / home_level(kernel, hw).bandwidth_bytes_per_s
    # fixed cost far above the work: overhead
    assert measured_class(kernel, hw, 1e-5, fixed_s=0.9e-5) == "overhead"
    # no fixed cost, moving the bytes takes the whole time: bandwidth
    assert measured_class(kernel, hw, mem, fixed_s=0.0) == "bandwidth"
    # work ten times the moving time: compute
    assert measured_class(kernel, hw, 10 * mem, fixed_s=0.0) == "compute"
    # within the margin of a threshold both classes are accepted, the picked one first
    assert measured_class(kernel, hw, 2 * mem * 1.1, fixed_s=0.0) == "compute|bandwidth"
    assert measured_class(kernel, hw, 10 * mem, fixed_s=10 * mem / 2.1) == "compute|overhead"
    assert CLASS_MARGIN > 1


def test_host_class_uses_the_same_split():
    from workbench.cost.host import home_level, host_class

    hw = _host(1e-6)
    kernel = _kernel()
    mem = kernel.bytes / home_level(kernel, hw).bandwidth_bytes_per_s
    assert host_class(kernel, hw, 1e-5, 0.9e-5)[0] == "overhead"
    assert host_class(kernel, hw, mem, 0.0)[0].startswith("bandwidth:")
    assert host_class(kernel, hw, 10 * mem, 0.0)[0] == "compute"


def test_validate_cupy_without_a_gpu_warns_in_one_line():
    import subprocess
    import sys

    from workbench.execution.backend import _cupy_backend

    if not isinstance(_cupy_backend(), str):
        pytest.skip("CuPy sees a CUDA device here: there is no fallback to warn about")
    argv = ["validate", "--quick", "--backend", "cupy", "--hardware", "teaching", "--repeats", "1"]
    env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONWARNINGS": "default"}
    done = subprocess.run(
        [sys.executable, "-m", "workbench", *argv], capture_output=True, text=True, env=env,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("workbench: warning: ")
    assert lines[0].endswith("using NumPy")
    assert '"backend": "numpy"' not in done.stdout  # the table, not JSON
    assert "numpy" in done.stdout


def test_quick_validate_probes_the_host_once_per_round():
    from workbench.tuning._suite import suite
    from workbench.tuning.validate import validate

    report = validate(quick=True, rounds=2, repeats=1, progress=False, backend="numpy")
    assert report.cases == len(suite(quick=True))
    assert len(report.kernels) > report.cases  # the NCHW conv also runs its layout transform
    assert "once per round" in report.rates
    assert f"over {len(report.kernels)} kernels of {report.cases} cases" in report.table()
    assert len(report.round_medians_pct) == 2
    for k in report.kernels:
        assert len(k.round_errors_pct) == 2
        assert k.abs_pct_error == pytest.approx(
            sorted(abs(e) for e in k.round_errors_pct)[0] / 2
            + sorted(abs(e) for e in k.round_errors_pct)[1] / 2
        )
        assert k.error_iqr_pct >= 0
        assert k.predicted_s > 0
        assert k.measured_best_s <= k.measured_s
    kinds = {k.kind for k in report.kernels}
    assert {"layout", "conv", "attention", "gemm"} <= kinds


def test_a_conv_is_timed_on_its_mapped_layout():
    from workbench.execution.run import execute, make_inputs
    from workbench.mapper import map_model
    from workbench.tuning._suite import suite
    from workbench.tuning.validate import _as_mapped

    _, build, opts = next(c for c in suite(quick=True) if "NCHW" in c[0])
    graph = build()
    hw = _host(1e-6)
    conv = next(k for k in map_model(graph, hw, opts).kernels if k.kernel.kind == "conv")
    assert conv.kernel.layout == "NHWC"
    mapped = _as_mapped(graph, conv)
    assert next(op for op in mapped.ops if op.name in conv.kernel.ops).layout == "NHWC"
    res = execute(conv, make_inputs(conv.kernel, 0, "numpy", graph=mapped), graph=mapped)
    assert not any("NCHW -> NHWC" in n for n in res.notes)  # no transform inside the conv


def test_transpose_cost_uses_the_calibrated_rate_by_row_length_and_size():
    from workbench.cost.host import transpose_s
    from workbench.hw.calibrate import best_of
    from workbench.mapper import map_model
    from workbench.tuning._suite import suite

    _, build, opts = next(c for c in suite(quick=True) if "NCHW" in c[0])
    hw = _host(1e-6)
    data = hw.model_dump()
    layout = next(k for k in map_model(build(), hw, opts).kernels if k.kernel.kind == "layout")
    rows = layout.kernel.rows
    n = rows.rows * rows.cols
    assert rows.cols == 8
    # width 8 sits halfway between 4 and 16 on a log scale, size n halfway between n/2 and 2n
    table = ((4, n // 2, 1e9), (4, 2 * n, 3e9), (16, n // 2, 4e9), (16, 2 * n, 6e9))
    data["vector_unit"]["transpose_rates"] = table
    slow = type(hw).model_validate(data)
    assert transpose_s(layout.kernel, slow) == pytest.approx(n / 3.5e9)
    assert transpose_s(layout.kernel, HW) == 0.0  # no figures: the copy-rate model
    assert map_model(build(), slow, opts).kernels[0].cost.total_s >= n / 3.5e9
    data["vector_unit"]["transpose_rates"] = ((4, n // 2, 2e9), (4, 2 * n, 1e9))
    data["vector_unit"]["transpose_rates"] += ((16, n // 2, 1e9), (16, 2 * n, 1e9))
    merged = best_of([slow, type(hw).model_validate(data)])
    assert merged.vector_unit.transpose_rates[0] == (4, n // 2, 2e9)
    assert merged.vector_unit.transpose_rates[1] == (4, 2 * n, 3e9)
    data["vector_unit"]["transpose_rates"] = ((16, n, 1e9), (4, n, 1e9))
    with pytest.raises(ValueError, match="increasing"):
        type(hw).model_validate(data)
    data["vector_unit"]["transpose_rates"] = ((4, n, 1e9), (16, 2 * n, 1e9))
    with pytest.raises(ValueError, match="same element counts"):
        type(hw).model_validate(data)


def _with(hw, section: str, **fields):
    data = hw.model_dump()
    data[section].update(fields)
    return type(hw).model_validate(data)


def test_skinny_calls_run_at_the_rate_of_their_rows():
    from workbench.cost.host import skinny_slowdown
    from workbench.cost.search import schedule

    hw = _host(1e-6)
    peak = hw.peak_flops("fp32")
    slow = _with(hw, "matrix_engine", skinny_call_rates=((1, peak / 8), (64, peak)))
    assert skinny_slowdown(hw, 8) == 1.0  # no table: unchanged
    assert skinny_slowdown(slow, 1) == pytest.approx(8.0)
    assert skinny_slowdown(slow, 8) == pytest.approx(1 / (1 / 8 + 0.5 * 7 / 8))  # log midpoint
    assert skinny_slowdown(slow, 512) == pytest.approx(1.0)
    kernel = lower(_graph(8, 1024, 1024), hw, OPTS)[0]
    assert schedule(kernel, slow, OPTS)[1].total_s > schedule(kernel, hw, OPTS)[1].total_s


def test_dram_streaming_adds_on_a_host_only():
    from workbench.cost.issue import tile_issue

    hw = _host(1e-6)
    cache = max(m.capacity_bytes for m in hw.memory if m.kind != "dram")
    n = int((2 * cache / 4) ** 0.5) + 1  # a weight larger than the caches
    big = lower(_graph(1, n, n), hw, OPTS)[0]
    small = _kernel()
    dram = next(m for m in hw.memory if m.kind == "dram")
    stream = tile_issue(hw).streaming
    assert stream(big, hw).serial_s == pytest.approx(big.bytes / dram.bandwidth_bytes_per_s)
    assert stream(small, hw).serial_s == 0.0  # fits a cache: warm runs read it there
    # accelerator profile: overlapped as before (its strategy has no streaming term)
    assert tile_issue(HW).streaming(big, HW).serial_s == 0.0


def test_row_kernels_use_the_rate_at_their_row_length():
    from workbench.cost.host import row_rate, vector_rate

    hw = _host(1e-6)
    hw = _with(hw, "vector_unit", kernel_flops_per_s={"softmax": 1e9})
    table = ((128, 1e9), (8192, 4e9))
    tabled = _with(hw, "vector_unit", row_rates={"softmax": table})
    g = Graph(name="s", ops=(O.Softmax(name="sm", inputs=("x",), shape=(64, 1024), dtype="fp32"),))
    kernel = lower(g, hw, OPTS)[0]
    assert row_rate(hw, "softmax", 1024) is None
    assert row_rate(tabled, "softmax", 1024) == pytest.approx(2.5e9)  # halfway on log2
    assert vector_rate(kernel, tabled) == pytest.approx(2.5e9)
    assert vector_rate(kernel, hw) == pytest.approx(1e9)
    with pytest.raises(ValueError, match="increasing"):
        _with(hw, "vector_unit", row_rates={"softmax": ((8192, 1e9), (128, 1e9))})


def test_light_calibration_measures_every_table():
    from workbench.execution.probe import ROW_LENGTHS, TRANSPOSE_WIDTHS, probe_engine
    from workbench.execution.threads import blas_threads
    from workbench.hw._measure import SKINNY_ROWS, cpu_clock
    from workbench.hw.calibrate import calibrate

    with blas_threads(1), cpu_clock():
        hw = calibrate(light=True, progress=False, engine=probe_engine)
    from workbench.execution.probe import TRANSPOSE_ELEMENTS

    keys = [(w, n) for w, n, _ in hw.vector_unit.transpose_rates]
    assert keys == [(w, n) for w in TRANSPOSE_WIDTHS for n in TRANSPOSE_ELEMENTS]
    assert [n for n, _ in hw.matrix_engine.skinny_call_rates] == list(SKINNY_ROWS)
    assert set(hw.vector_unit.row_rates) == {"layernorm", "rmsnorm", "softmax"}
    assert all([n for n, _ in t] == list(ROW_LENGTHS) for t in hw.vector_unit.row_rates.values())


def test_cpu_clock_and_kept_heap_are_scoped():
    import time

    from workbench.execution.threads import kept_heap
    from workbench.hw import _measure

    assert _measure._CLOCK[-1] is time.perf_counter
    with _measure.cpu_clock():
        assert _measure._CLOCK[-1] is time.thread_time
        with _measure.cpu_clock(enabled=False):
            assert _measure._CLOCK[-1] is time.thread_time
    assert _measure._CLOCK[-1] is time.perf_counter
    with kept_heap(enabled=False) as on:
        assert on is False
    with kept_heap() as on:
        assert isinstance(on, bool)


def _ranked(n):
    from workbench.cost.search import rank

    return rank(_kernel(), HW, OPTS, k=n)[:n]


def _m(*samples):
    from workbench.execution.measure import Measurement

    return Measurement.of(list(samples))


def test_candidates_within_the_spread_share_a_rank_and_the_model_pick_stands():
    from workbench.tuning.autotune import tune_result

    ranked = _ranked(3)
    # the model's pick measures a bit slower, but its interval overlaps the fastest's
    times = [_m(1.1e-3, 1.2e-3, 1.5e-3), _m(1.0e-3, 1.05e-3, 1.3e-3), _m(5e-3, 5.1e-3, 5.2e-3)]
    r = tune_result("k", "numpy", ranked, times)
    assert [c.measured_rank for c in r.candidates] == [1.5, 1.5, 3.0]
    assert not r.resolved
    assert r.best_tiling == ranked[0][0]
    assert r.gain_over_model == 1.0


def test_candidates_apart_are_ranked_by_their_medians():
    from workbench.tuning.autotune import tune_result

    ranked = _ranked(3)
    times = [_m(3e-3, 3.1e-3, 3.2e-3), _m(1e-3, 1.1e-3, 1.2e-3), _m(2e-3, 2.1e-3, 2.2e-3)]
    r = tune_result("k", "numpy", ranked, times)
    assert [c.measured_rank for c in r.candidates] == [3.0, 1.0, 2.0]
    assert r.resolved
    assert r.best_tiling == ranked[1][0]
    assert r.gain_over_model == pytest.approx(3.1 / 1.1)


def test_measure_pins_blas_threads_and_refuses_bad_samples():
    from workbench.execution.errors import ExecutionError
    from workbench.execution.measure import Measurement, timed
    from workbench.execution.threads import blas_thread_count

    seen = []
    m = timed(lambda: seen.append(blas_thread_count()), warmup=1, repeats=4, threads=1)
    assert len(m.samples) == 4
    assert set(seen) <= {1, None}  # None: no BLAS pool visible to threadpoolctl
    assert "4 runs" in m.interval_text()
    with pytest.raises(ExecutionError, match="negative or not finite"):
        Measurement.of([1.0, float("nan")])
    with pytest.raises(ExecutionError, match="repeats 0"):
        timed(lambda: None, repeats=0)
