"""MeasuredRun: statistics over repeats and the to_dict/from_dict round trip."""

from __future__ import annotations

import json

import pytest

from workbench.evidence import (
    IterationStats,
    MeasuredKernel,
    MeasuredRun,
    TraceError,
    read_trace,
    write_kineto_trace,
)


def _run(walls, kernels=()):
    its = tuple(
        IterationStats(index=i, wall_s=w, kernel_s=w * 0.8, gap_s=w * 0.2, copy_s=0.0)
        for i, w in enumerate(walls)
    )
    return MeasuredRun(source="x.json", format="kineto", tags=(("device", "unknown"),),
                       kernels=tuple(kernels), iterations=its)  # fmt: skip


def test_median_and_distribution_free_interval():
    # The first iteration is warm-up: reported apart, left out of the statistics.
    walls = [1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.85, 1.0, 1.02, 0.98]
    run = _run([7.5, *walls])
    assert run.warmup_s == 7.5
    assert len(run.steady_iterations) == len(walls)
    assert run.median_iteration_s() == pytest.approx(1.0)
    lo, hi = run.interval95_s()
    # n=10: ranks 2 and 9 (P(B<=1) = 11/1024 <= 0.025 < P(B<=2) = 56/1024).
    ordered = sorted(walls)
    assert (lo, hi) == (ordered[1], ordered[8])
    assert run.interval_coverage() == pytest.approx(1 - 2 * 11 / 1024)
    assert run.interval_coverage() >= 0.95


def test_small_samples_give_min_max_and_say_their_coverage():
    run = _run([9.0, 1.0, 2.0, 3.0])
    assert run.interval95_s() == (1.0, 3.0)
    assert run.interval_coverage() == pytest.approx(0.75)


def test_one_repeat_has_no_interval():
    with pytest.raises(TraceError, match="at least 2 steady-state repeats"):
        _run([1.0]).interval95_s()
    with pytest.raises(TraceError, match="at least 2 steady-state repeats"):
        _run([5.0, 1.0]).interval95_s()
    one = _run([1.0])
    assert one.warmup_s is None
    assert one.median_iteration_s() == 1.0


def test_fewer_than_3_steady_steps_say_what_the_interval_rests_on():
    # Issue 26: the interval of 2 steady steps is their min-max, a 50% interval, not 95%.
    two = _run([9.0, 1.0, 2.0])
    assert two.interval_note() == (
        "the 95% interval rests on 2 steps: wide (it is their min-max, covering the median with "
        "probability 50%, not 95%; profile at least 7 steps: 1 warm-up and 6 steady)"
    )
    assert _run([5.0, 1.0]).interval_note().startswith("the 95% interval rests on 1 step: none")
    assert _run([9.0, 1.0, 2.0, 3.0]).interval_note() is None


def test_the_window_rule_is_stated():
    run = _run([9.0, 1.0, 2.0])
    assert run.window_rule.startswith("a step runs on the GPU from its first kernel")
    assert "the last step ends where its own GPU work ends" in run.window_rule
    unmarked = MeasuredRun(source="x.json", format="kineto", tags=(), kernels=(),
                           iterations=run.iterations[:1], steps_annotated=False)  # fmt: skip
    assert unmarked.window_rule.startswith("no step markers")
    assert unmarked.interval_note() is None


def test_round_trip_through_json(tmp_path, kernels):
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    data = json.loads(json.dumps(run.to_dict()))
    assert MeasuredRun.from_dict(data) == run


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(kind="other"), "kind"),
        (lambda d: d.update(schema_version=99), "schema_version"),
        (lambda d: d.update(format="perfetto"), "format"),
        (lambda d: d["kernels"][0].update(category="magic"), r"kernels\[0\].*category"),
        (lambda d: d["kernels"][0].update(duration_s=-1.0), r"kernels\[0\].*duration_s"),
        (lambda d: d["kernels"][0].update(grid=[1, 2]), r"kernels\[0\].*grid"),
        (lambda d: d["iterations"][0].update(wall_s=float("nan")), r"iterations\[0\].*wall_s"),
        (lambda d: d.update(iterations=[]), "iterations"),
        (lambda d: d["tags"].append(["x"]), r"tags\[\d+\]"),
        (lambda d: d.pop("source"), "source"),
    ],
)
def test_malformed_dicts_are_refused_with_the_field_named(tmp_path, kernels, edit, message):
    data = read_trace(write_kineto_trace(tmp_path / "t.json", kernels)).to_dict()
    edit(data)
    with pytest.raises(TraceError, match=message) as info:
        MeasuredRun.from_dict(data)
    assert "\n" not in str(info.value)


def test_time_by_category_covers_every_category_and_counts_per_iteration(tmp_path, kernels):
    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    by = run.time_by_category()
    assert set(by) >= {"gemm", "attention", "elementwise", "collective", "copy", "other"}
    assert by["gemm"] == pytest.approx(1e-3)
    assert by["attention"] == pytest.approx(2e-3)
    assert by["copy"] == pytest.approx(2e-4)


def test_kernel_end_is_start_plus_duration():
    k = MeasuredKernel(name="k", category="other", rule="r", start_s=1.0, duration_s=0.5)
    assert k.end_s == 1.5


def test_time_by_name_is_per_iteration_and_largest_first(tmp_path, kernels):
    from workbench.evidence import time_by_name

    run = read_trace(write_kineto_trace(tmp_path / "t.json", kernels))
    by = time_by_name(run)
    assert list(by.values()) == sorted(by.values(), reverse=True)
    assert next(iter(by)).startswith("void flash_fwd_kernel")
    assert by["Memcpy DtoH"] == pytest.approx(2e-4)
    assert sum(by.values()) == pytest.approx(sum(run.time_by_category().values()))
