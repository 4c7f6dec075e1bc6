"""Triage of two traces no mapping sheet describes: the headline comes from the per-category and
per-operator roll-up (issue 18), each category judged against its own step-to-step noise; the
records carrying it still load when older and round-trip (issue 17)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from shaped_trace import ADD, MM, SGEMM, TENSOROP, write_shaped_trace

from workbench.cli import main
from workbench.evidence import read_trace
from workbench.evidence.operators import read_operators
from workbench.report.triage_render import triage_text
from workbench.review import record_from_trace, triage
from workbench.review.join.categories import category_steps
from workbench.review.records.store import load_record, record_to_dict, save_record

ADD_CALL = ("aten::add", [[4096, 4096], [4096, 4096], []], ["float", "float", "Scalar"])
VARIED = [0.0, 6e-3, 1e-3, 9e-3, 2e-3, 7e-3]  # idle per step, s: the steps vary by ~9 ms
V100 = "Tesla V100-SXM2-16GB"


def _trace(tmp_path, name, gemm, gemm_s, *, device="NVIDIA A100-SXM4-80GB", idle=VARIED):
    calls = [(*MM, [(gemm, gemm_s)]), (*ADD_CALL, [(ADD, 1e-3)])]
    return write_shaped_trace(tmp_path / name, calls, steps=6, extra_per_step_s=idle, device=device)


def _record(path, *, operators=True):
    ops = read_operators(path) if operators else None
    return record_from_trace(read_trace(path), operators=ops)


def test_a_cross_generation_pair_heads_with_the_category_that_moved(tmp_path):
    # The same aten::mm ran a tensor-op kernel on one GPU and volta_sgemm (20 ms) on the other:
    # no kernel name is shared, and the step periods vary by ~9 ms with the idle between steps.
    a = _record(_trace(tmp_path, "a.json", TENSOROP, 4e-3))
    b = _record(_trace(tmp_path, "b.json", SGEMM, 20e-3, device=V100))
    r = triage(a, b, changed="hardware", simulate=False)
    ff = r.first_failing
    assert ff is not None
    assert ff.mechanism == "hardware_rate"
    assert ff.kernel == "gemm kernels"
    assert ff.share == pytest.approx(16e-3 / (b.model.time_s - a.model.time_s), rel=1e-3)
    assert "gemm kernel time per step 4 ms -> 20 ms, +16 ms" in ff.evidence
    assert "most under aten::mm (+16 ms per step with the warm-up one, both runs)" in ff.evidence
    assert "95% interval +16 ms to +16 ms per step" in ff.evidence
    assert [m.kernel for m in r.mechanisms] == ["gemm kernels"]  # elementwise did not move
    assert r.owner is not None
    assert r.owner.role == "platform owner"
    assert "hardware_rate at gemm kernels" in triage_text(r)


def test_without_a_hardware_change_a_slower_category_is_a_measured_slowdown(tmp_path):
    a = _record(_trace(tmp_path, "a.json", TENSOROP, 4e-3))
    b = _record(_trace(tmp_path, "b.json", TENSOROP, 20e-3))
    ff = triage(a, b, simulate=False).first_failing
    assert ff is not None
    assert (ff.mechanism, ff.kernel) == ("measured_slowdown", "gemm kernels")


def test_idle_alone_never_anchors_a_category(tmp_path):
    # +30 ms of idle per step, the kernels unchanged: no category moved, none is blamed
    a = _record(_trace(tmp_path, "a.json", TENSOROP, 4e-3))
    slower = [v + 30e-3 for v in VARIED]
    b = _record(_trace(tmp_path, "b.json", TENSOROP, 4e-3, idle=slower))
    r = triage(a, b, simulate=False)
    assert r.mechanisms == ()
    assert r.first_failing is not None
    assert r.first_failing.mechanism == "unmapped_measurement"


def test_a_category_inside_its_own_noise_is_not_material(tmp_path):
    a = _record(_trace(tmp_path, "a.json", TENSOROP, 4e-3))
    b = _record(_trace(tmp_path, "b.json", SGEMM, 20e-3, device=V100))
    assert a.measurement is not None
    assert b.measurement is not None
    # elementwise jitters by 8 ms from step to step in the baseline, a steady 6 ms in the
    # candidate: +1.8 ms on average (over 5% of the regression) but inside its noise
    noisy = dict(a.measurement.category_steps_s) | {"elementwise": (1e-3, 9e-3, 1e-3, 9e-3, 1e-3)}
    steady = dict(b.measurement.category_steps_s) | {"elementwise": (6e-3,) * 5}
    a2 = dataclasses.replace(
        a, measurement=dataclasses.replace(a.measurement, category_steps_s=tuple(noisy.items()))
    )
    b2 = dataclasses.replace(
        b, measurement=dataclasses.replace(b.measurement, category_steps_s=tuple(steady.items()))
    )
    r = triage(a2, b2, changed="hardware", simulate=False)
    assert [m.kernel for m in r.mechanisms] == ["gemm kernels"]
    steady["elementwise"] = (12e-3,) * 5  # beyond the noise now: +7.8 ms
    b3 = dataclasses.replace(
        b, measurement=dataclasses.replace(b.measurement, category_steps_s=tuple(steady.items()))
    )
    r = triage(a2, b3, changed="hardware", simulate=False)
    assert [m.kernel for m in r.mechanisms] == ["gemm kernels", "elementwise kernels"]


def test_without_operators_the_anchor_is_the_kernel(tmp_path):
    a = _record(_trace(tmp_path, "a.json", TENSOROP, 4e-3), operators=False)
    b = _record(_trace(tmp_path, "b.json", SGEMM, 20e-3, device=V100), operators=False)
    assert all(k.ops == () for k in b.kernels)
    ff = triage(a, b, changed="hardware", simulate=False).first_failing
    assert ff is not None
    assert (
        "most under kernel volta_sgemm_128x64_nn (+20 ms per step with the warm-up one, "
        "candidate only)" in ff.evidence
    )


def test_category_steps_are_per_steady_step(tmp_path):
    run = read_trace(_trace(tmp_path, "a.json", TENSOROP, 4e-3))
    steps = dict(category_steps(run))
    assert set(steps) == {"gemm", "elementwise"}
    assert steps["gemm"] == pytest.approx((4e-3,) * 5)  # the warm-up step left out
    assert steps["elementwise"] == pytest.approx((1e-3,) * 5)


def test_the_record_round_trips_and_an_older_one_without_the_field_loads(tmp_path):
    rec = _record(_trace(tmp_path, "a.json", TENSOROP, 4e-3))
    assert rec.measurement is not None
    assert rec.measurement.category_steps_s
    assert {k.ops for k in rec.kernels} == {("aten::mm",), ("aten::add",)}
    path = save_record(rec, tmp_path / "a.rec.json")
    assert load_record(path) == rec
    # a record written before category_steps_s existed: the key absent, the lock over the rest
    from workbench.review.records.store import _lock

    data = record_to_dict(rec)
    del data["measurement"]["category_steps_s"]
    body = {k: v for k, v in data.items() if k != "lock"}
    data["lock"] = _lock(body)
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load_record(tmp_path / "old.json")
    assert old.measurement is not None
    assert old.measurement.category_steps_s == ()
    # ... and triage still reads it (the kernel rows' times, floored at the step noise)
    b = _record(_trace(tmp_path, "b.json", SGEMM, 20e-3, device=V100))
    ff = triage(old, b, changed="hardware", simulate=False).first_failing
    assert ff is not None
    assert ff.kernel == "gemm kernels"


def test_cli_run_from_trace_then_triage_heads_with_the_roll_up(tmp_path, capsys):
    a = _trace(tmp_path, "a.json", TENSOROP, 4e-3)
    b = _trace(tmp_path, "b.json", SGEMM, 20e-3, device=V100)
    for trace, rec in ((a, "a.rec.json"), (b, "b.rec.json")):
        assert main(["run", "--from-trace", str(trace), "--record", str(tmp_path / rec)]) == 0
    capsys.readouterr()
    main(["triage", str(tmp_path / "a.rec.json"), str(tmp_path / "b.rec.json"),
          "--changed", "hardware"])  # fmt: skip
    out = capsys.readouterr().out
    assert "first failing mechanism: hardware_rate at gemm kernels" in out
    assert "most under aten::mm" in out
    assert "unmapped_measurement" not in out
