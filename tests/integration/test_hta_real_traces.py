"""Real public PyTorch-profiler traces (HTA's own test data, tests/data/hta/README.md): the
workbench's breakdown and step periods against HTA run on the same files (issue 17)."""

from __future__ import annotations

import dataclasses
import shutil
import statistics
from pathlib import Path

import pytest
from hta_oracle import hta_breakdown, hta_load_file, hta_step_periods

from workbench.evidence import CATEGORIES, MeasuredRun, read_trace, temporal_breakdown

DATA = Path(__file__).parents[1] / "data" / "hta"
pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword:Warning", "ignore:invalid value encountered:RuntimeWarning"
)


def _hta_dir(tmp_path: Path, name: str) -> Path:
    shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


@pytest.mark.slow  # HTA parses the 1.6 MB trace twice, ~3 s each (once a session, shared)
def test_dlrm_v100_breakdown_and_steps_match_hta():
    analysis = hta_load_file(DATA / "dlrm_v100_rank1.json.gz")
    run = read_trace(DATA / "dlrm_v100_rank1.json.gz")
    (ours,) = temporal_breakdown(run)
    ref = hta_breakdown(analysis)[1]
    print(
        f"DLRM V100: workbench idle {ours.idle_pct:.2f}% compute {ours.compute_pct:.2f}% "
        f"non-compute {ours.non_compute_pct:.2f}% overlap {ours.comm_overlap_pct:.2f}%; HTA idle "
        f"{ref['idle_pct']:.2f}% compute {ref['compute_pct']:.2f}% non-compute "
        f"{ref['non_compute_pct']:.2f}% overlap {ref['comm_overlap_pct']:.2f}%"
    )
    assert ours.rank == 1
    assert ours.span_s * 1e6 == pytest.approx(ref["span_us"], rel=1e-6)
    assert ours.idle_pct == pytest.approx(ref["idle_pct"], abs=1.0)
    assert ours.compute_pct == pytest.approx(ref["compute_pct"], abs=1.0)
    assert ours.non_compute_pct == pytest.approx(ref["non_compute_pct"], abs=1.0)
    assert ours.comm_overlap_pct == pytest.approx(ref["comm_overlap_pct"], abs=1.0)

    # Step periods on the GPU timeline, from HTA's own assignment of kernels to steps.
    periods = hta_step_periods(analysis, rank=1)
    mine = {it.index: it.wall_s for it in run.iterations}
    print("DLRM V100 periods (ms): workbench", {i: round(mine[i] * 1e3, 2) for i in periods})
    print("DLRM V100 periods (ms): HTA      ", {i: round(t * 1e3, 2) for i, t in periods.items()})
    for index, period in periods.items():
        assert mine[index] == pytest.approx(period, abs=2e-6)
    steady = [*list(periods.values())[1:], run.iterations[-1].wall_s]
    assert run.median_iteration_s() == pytest.approx(statistics.median(steady))
    assert run.warmup_s == pytest.approx(next(iter(periods.values())))
    # The windows tile the span, never overlap: no step's work counted as another's idle.
    assert sum(it.wall_s for it in run.iterations) == pytest.approx(ours.span_s)
    assert sum(it.gap_s for it in run.iterations) == pytest.approx(ours.idle_s)
    assert any("no runtime launch event" in w for w in run.warnings)

    # HTA's default leaves the last step out (its span ends at the other steps' last activity).
    default = hta_breakdown(
        hta_load_file(DATA / "dlrm_v100_rank1.json.gz", include_last_step=False)
    )[1]
    (short,) = temporal_breakdown(run, include_last_step=False)
    print(
        f"DLRM V100 (HTA default, last step left out): workbench idle {short.idle_pct:.2f}% "
        f"compute {short.compute_pct:.2f}% non-compute {short.non_compute_pct:.2f}%; HTA idle "
        f"{default['idle_pct']:.2f}% compute {default['compute_pct']:.2f}% non-compute "
        f"{default['non_compute_pct']:.2f}%"
    )
    for key in ("idle_pct", "compute_pct", "non_compute_pct"):
        assert getattr(short, key) == pytest.approx(default[key], abs=1.0)


def test_alexnet_without_profilerstep_uses_measure_ranges_and_matches_hta_whole(tmp_path):
    directory = _hta_dir(tmp_path, "alexnet_a100.json.gz")
    run = read_trace(DATA / "alexnet_a100.json.gz")
    # The benchmark's inner [param|...|measure|forward] range is the one step; the 12.7 s of
    # warm-up and autotuning before it are not an iteration.
    assert run.steps_annotated
    assert run.repeats == 1
    assert run.iterations[0].wall_s < 0.1
    # Over the whole trace (every activity in one window) the breakdown is HTA's: HTA has no
    # ProfilerStep here, so it takes the whole trace.
    whole = dataclasses.replace(
        run, kernels=tuple(dataclasses.replace(k, iteration=0) for k in run.kernels)
    )
    assert isinstance(whole, MeasuredRun)
    (ours,) = temporal_breakdown(whole)
    ref = hta_breakdown(directory)[0]
    print(
        f"AlexNet A100 whole trace: workbench idle {ours.idle_pct:.2f}% compute "
        f"{ours.compute_pct:.2f}% non-compute {ours.non_compute_pct:.2f}%; HTA idle "
        f"{ref['idle_pct']:.2f}% compute {ref['compute_pct']:.2f}% non-compute "
        f"{ref['non_compute_pct']:.2f}%"
    )
    for key in ("idle_pct", "compute_pct", "non_compute_pct"):
        assert getattr(ours, key) == pytest.approx(ref[key], abs=1.0)


def test_dlrm_v100_kernel_time_left_in_other_is_under_5_percent():
    run = read_trace(DATA / "dlrm_v100_rank1.json.gz")
    kernels = [k for k in run.kernels if k.kind == "kernel"]
    total = sum(k.duration_s for k in kernels)
    by = {c: sum(k.duration_s for k in kernels if k.category == c) / total for c in CATEGORIES}
    print("DLRM V100 kernel time by category (%):", {c: round(100 * v, 1) for c, v in by.items()})
    assert by["other"] < 0.05
    # The TBE kernels, the bulk of DLRM's non-GEMM compute, are embedding, not other or gemm.
    assert by["embedding"] > 0.10
    assert all(
        k.category == "embedding" for k in kernels if k.name.startswith("void split_embedding")
    )
