"""An expected time beside every measured kernel: the trace's graph mapped on its hardware."""

from __future__ import annotations

import pytest
from shaped_trace import ADD, MM, SGEMM, TENSOROP, write_shaped_trace

from workbench.errors import GraphError
from workbench.evidence import read_trace
from workbench.evidence.operators import read_operators
from workbench.hw import load_hardware
from workbench.ir import Elementwise, Graph, MatMul
from workbench.mapper import map_model
from workbench.review.join.expected import EAGER, IMPOSSIBLE, IMPOSSIBLE_RATIO, expect, what_if

ADD_CALL = ("aten::add", [[4096, 4096], [4096, 4096], []], ["float", "float", "Scalar"])


def _alone(op, hw):
    """The device time the mapper gives ``op`` mapped alone on ``hw``, s."""
    return sum(k.cost.exec_s for k in map_model(Graph(name="one", ops=(op,)), hw, EAGER).kernels)


def _read(path):
    return read_trace(path), read_operators(path)


def test_each_kernel_beside_its_expected_time_sorted_by_time_lost(tmp_path):
    path = write_shaped_trace(
        tmp_path / "t.json", [(*MM, [(TENSOROP, 4e-3)]), (*ADD_CALL, [(ADD, 1e-3)])], steps=4
    )
    run, ops = _read(path)
    hw = load_hardware("a100-80gb")
    report = expect(run, ops, hw)
    mm = MatMul(name="x", inputs=("a", "b"), dtype="tf32", m=4096, n=4096, k=4096)
    add = Elementwise(name="y", inputs=("a", "b"), dtype="fp32", op="add", shape=(4096, 4096))
    want = {TENSOROP: _alone(mm, hw), ADD: _alone(add, hw)}
    measured = {TENSOROP: 4e-3, ADD: 1e-3}
    assert {r.name for r in report.rows} == set(want)
    for r in report.rows:
        assert r.calls == 1  # per steady iteration (3 of them, the warm-up left out)
        assert r.measured_s == pytest.approx(measured[r.name])
        assert r.expected_s == pytest.approx(want[r.name])
        assert r.efficiency == pytest.approx(want[r.name] / measured[r.name])
        assert r.lost_s == pytest.approx(max(measured[r.name] - want[r.name], 0.0))
    gemm = next(r for r in report.rows if r.name == TENSOROP)
    assert gemm.format == "tf32"  # a tensorop kernel: TF32 on the tensor cores
    assert gemm.bottleneck == "compute"
    assert gemm.operator == "aten::mm(4096x4096:float, 4096x4096:float)"
    assert [r.lost_s for r in report.rows] == sorted((r.lost_s for r in report.rows), reverse=True)
    assert report.coverage == pytest.approx(1.0)
    assert report.expected_s == pytest.approx(sum(want.values()))


def test_an_sgemm_kernel_is_expected_on_the_cuda_cores(tmp_path):
    path = write_shaped_trace(tmp_path / "t.json", [(*MM, [(SGEMM, 20e-3)])], steps=3)
    run, ops = _read(path)
    hw = load_hardware("v100-sxm2")
    (row,) = expect(run, ops, hw).rows
    assert row.format == "fp32"
    flops = 2 * 4096**3
    # fp32 SIMT: no faster than the CUDA cores' 15.7 TFLOP/s (the V100 datasheet's figure)
    assert row.expected_s >= flops / hw.vector_unit.peak_flops_per_s["fp32"]
    assert row.expected_s == pytest.approx(
        _alone(MatMul(name="x", inputs=("a", "b"), dtype="fp32", m=4096, n=4096, k=4096), hw)
    )


def test_an_operator_with_two_kernels_shares_its_expected_time_by_measured_share(tmp_path):
    reduce = "void splitKreduce_kernel<float, float, float>(cublasSplitKParams<float>)"
    path = write_shaped_trace(tmp_path / "t.json", [(*MM, [(TENSOROP, 3e-3), (reduce, 1e-3)])])
    run, ops = _read(path)
    hw = load_hardware("a100-80gb")
    rows = {r.name: r for r in expect(run, ops, hw).rows}
    total = _alone(MatMul(name="x", inputs=("a", "b"), dtype="tf32", m=4096, n=4096, k=4096), hw)
    assert rows[TENSOROP].expected_s + rows[reduce].expected_s == pytest.approx(total)
    assert rows[TENSOROP].expected_s == pytest.approx(3 * rows[reduce].expected_s)


def test_kernels_without_an_operator_model_are_counted_apart(tmp_path):
    tbe = "void split_embedding_codegen_forward_unweighted_kernel<float>(int)"
    calls = [
        (*MM, [(TENSOROP, 4e-3)]),
        ("fbgemm::split_embedding_codegen_lookup_function", [[0], [480000]], ["float"] * 2,
         [(tbe, 2e-3)]),
    ]  # fmt: skip
    run, ops = _read(write_shaped_trace(tmp_path / "t.json", calls))
    report = expect(run, ops, load_hardware("a100-80gb"))
    assert dict(report.unmodelled_s) == pytest.approx({"embedding": 2e-3})
    assert report.coverage == pytest.approx(4 / 6)
    assert dict(report.skipped) == {
        "not modelled: fbgemm::split_embedding_codegen_lookup_function": 4
    }


def test_no_shapes_no_expectation(tmp_path):
    path = write_shaped_trace(tmp_path / "t.json", [(*MM, [(TENSOROP, 4e-3)])], shapes=False)
    run, ops = _read(path)
    with pytest.raises(GraphError, match="no shapes recorded"):
        expect(run, ops, load_hardware("a100-80gb"))


def test_what_if_remaps_the_same_calls_on_another_profile(tmp_path):
    path = write_shaped_trace(tmp_path / "t.json", [(*MM, [(TENSOROP, 4e-3)])], steps=4)
    run, ops = _read(path)
    report = expect(run, ops, load_hardware("a100-80gb"))
    h100 = load_hardware("h100-sxm")
    w = what_if(report, run, ops, h100)
    mm = MatMul(name="x", inputs=("a", "b"), dtype="tf32", m=4096, n=4096, k=4096)
    assert w.hardware == "h100-sxm"
    assert w.expected_s == pytest.approx(_alone(mm, h100))
    assert w.expected_s < report.expected_s  # compute-bound TF32 GEMM: H100 is faster


def test_a_kernel_far_faster_than_its_shapes_allow_is_left_out_as_corrupt(tmp_path):
    # 8192^3 fp32 on CUDA cores cannot run in 10 us on an A100 (~70 ms expected): the shapes are
    # not the kernel's work, so no 7,000x "efficiency" is printed; the honest add stays.
    huge = ("aten::mm", [[8192, 8192], [8192, 8192]], ["float", "float"])
    path = write_shaped_trace(
        tmp_path / "t.json", [(*huge, [(SGEMM, 10e-6)]), (*ADD_CALL, [(ADD, 1e-3)])], steps=3
    )
    run, ops = _read(path)
    hw = load_hardware("a100-80gb")
    report = expect(run, ops, hw)
    assert [r.name for r in report.rows] == [ADD]
    assert dict(report.skipped)[IMPOSSIBLE] == 1
    assert dict(report.unmodelled_s)["gemm"] == pytest.approx(10e-6)
    assert report.dropped == {"aten::mm(8192x8192:float, 8192x8192:float)"}
    other = what_if(report, run, ops, load_hardware("h100-sxm"))
    assert [sig for sig, _ in other.by_operator] == [r.operator for r in report.rows]


def test_a_kernel_a_few_times_faster_than_expected_is_kept(tmp_path):
    # Below the 10x line a fast kernel is a model error to show, not a corrupt record.
    path = write_shaped_trace(tmp_path / "t.json", [(*ADD_CALL, [(ADD, 1e-3)])], steps=3)
    run, ops = _read(path)
    hw = load_hardware("a100-80gb")
    expected = expect(run, ops, hw).rows[0].expected_s
    fast = write_shaped_trace(
        tmp_path / "f.json", [(*ADD_CALL, [(ADD, expected / (IMPOSSIBLE_RATIO * 0.9))])], steps=3
    )
    (row,) = expect(*_read(fast), hw).rows
    assert row.efficiency == pytest.approx(IMPOSSIBLE_RATIO * 0.9, rel=1e-6)


def test_the_signatures_mapped_are_bounded_the_costliest_kept(tmp_path, monkeypatch):
    from workbench.review.join import expected as mod

    monkeypatch.setattr(mod, "MAX_SIGNATURES", 3)
    calls = [
        ("aten::mm", [[64 + i, 128], [128, 256]], ["float", "float"], [(SGEMM, (i + 1) * 1e-5)])
        for i in range(8)
    ]
    run, ops = _read(write_shaped_trace(tmp_path / "t.json", calls, steps=3))
    report = expect(run, ops, load_hardware("a100-80gb"))
    assert len(report.trace_graph.graph.ops) == 3
    kept = {op.m for op in report.trace_graph.graph.ops}
    assert kept == {64 + 5, 64 + 6, 64 + 7}  # the three with the most kernel time
    assert dict(report.skipped)[mod.BEYOND_BOUND] == 5 * 3  # five signatures, three steps
