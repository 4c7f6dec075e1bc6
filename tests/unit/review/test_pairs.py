"""Measured pairs: aligned by operator and category, compared step by step (issue 17)."""

from __future__ import annotations

import json

import pytest
from shaped_trace import ADD, MM, SGEMM, TENSOROP, write_shaped_trace

from workbench.cli import main
from workbench.evidence import read_trace
from workbench.evidence.operators import read_operators
from workbench.report.trace_text import pair_text
from workbench.review.join.pairs import pair_document

ADD_CALL = ("aten::add", [[4096, 4096], [4096, 4096], []], ["float", "float", "Scalar"])
VARIED = [0.0, 6e-3, 1e-3, 9e-3, 2e-3, 7e-3]  # idle per step, s: the steps vary by ~9 ms


def _pair(tmp_path, calls_a, calls_b, **kw_b):
    a = write_shaped_trace(tmp_path / "a.json", calls_a, steps=6, extra_per_step_s=VARIED)
    b = write_shaped_trace(tmp_path / "b.json", calls_b, steps=6, extra_per_step_s=VARIED, **kw_b)
    ra, rb = read_trace(a), read_trace(b)
    return pair_document(ra, read_operators(a), rb, read_operators(b)), ra, rb


def test_kernels_are_aligned_by_operator_not_by_name(tmp_path):
    # The same aten::mm ran volta_sgemm on one GPU and a tensor-op kernel on the other.
    doc, _, _ = _pair(tmp_path, [(*MM, [(SGEMM, 20e-3)])], [(*MM, [(TENSOROP, 4e-3)])])
    (row,) = doc["by_operator"]
    assert row["operator"] == "aten::mm"
    assert row["category"] == "gemm"
    assert row["shapes"] == "same"
    assert row["baseline_s"] == pytest.approx(20e-3)
    assert row["candidate_s"] == pytest.approx(4e-3)
    assert row["delta_s"] == pytest.approx(-16e-3)


def test_a_deterministic_regression_on_every_step_is_beyond_the_noise(tmp_path):
    base = [(*MM, [(TENSOROP, 4e-3)]), (*ADD_CALL, [(ADD, 1e-3)])]
    slow = [(*MM, [(TENSOROP, 4e-3)]), (*ADD_CALL, [(ADD, 3.75e-3)])]  # +2.75 ms per step
    doc, ra, rb = _pair(tmp_path, base, slow)
    shift = doc["step"]["shift"]
    assert shift["method"] == "paired"
    assert shift["pairs"] == len(ra.steady_iterations) == 5
    assert shift["estimate_s"] == pytest.approx(2.75e-3, abs=2e-6)
    assert shift["positive"] == 5
    assert shift["beyond_noise"]
    # per-step differences of the steady steps, as the reader measured them
    d = [
        b.wall_s - a.wall_s for a, b in zip(ra.steady_iterations, rb.steady_iterations, strict=True)
    ]
    assert shift["estimate_s"] == pytest.approx(sum(d) / len(d))
    text = pair_text(doc)
    assert "paired over 5 steps: +2.75 ms per step" in text
    assert "beyond the noise" in text
    cats = {r["category"]: r for r in doc["by_category"]}
    assert cats["elementwise"]["candidate_s"] - cats["elementwise"]["baseline_s"] == pytest.approx(
        2.75e-3
    )


def test_the_roll_up_by_category_is_always_printed_and_differences_said(tmp_path):
    calls = [(*MM, [(TENSOROP, 4e-3)])]
    other = [
        ("aten::mm", [[2048, 4096], [4096, 4096]], ["c10::Half", "c10::Half"], [(SGEMM, 2e-3)])
    ]
    doc, _, _ = _pair(
        tmp_path, calls, other, device="Tesla V100-SXM2-16GB",
        metadata={"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2}},
    )  # fmt: skip
    text = pair_text(doc)
    assert "kernel time by category, per iteration (baseline -> candidate)" in text
    assert "gemm" in text
    notes = " ".join(doc["differences"])
    assert "device differs: NVIDIA A100-SXM4-80GB vs Tesla V100-SXM2-16GB" in notes
    assert "world_size differs: unknown vs 2" in notes
    assert "data types differ" in notes
    assert "shapes differ" in notes
    assert doc["by_operator"][0]["shapes"] == "differ"


def test_cli_against(capsys, tmp_path):
    a = write_shaped_trace(tmp_path / "a.json", [(*MM, [(SGEMM, 20e-3)])], steps=4)
    b = write_shaped_trace(tmp_path / "b.json", [(*MM, [(TENSOROP, 4e-3)])], steps=4)
    assert main(["trace", str(a), "--against", str(b)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"measured pair: {a} -> {b}")
    assert "step time (steady-state medians):" in out
    assert main(["trace", str(a), "--against", str(b), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["step"]["relative"] < -0.5


def test_with_module_hierarchies_on_both_sides_operators_are_named_in_their_module(tmp_path):
    calls = [(*MM, [(SGEMM, 2e-3)])]
    a = write_shaped_trace(tmp_path / "a.json", calls, module="model.mlp.0")
    b = write_shaped_trace(tmp_path / "b.json", calls, module="model.mlp.0")
    doc = pair_document(read_trace(a), read_operators(a), read_trace(b), read_operators(b))
    assert [r["operator"] for r in doc["by_operator"]] == ["model.mlp.0 / aten::mm"]
    c = write_shaped_trace(tmp_path / "c.json", calls)  # no modules recorded: names alone
    doc = pair_document(read_trace(a), read_operators(a), read_trace(c), read_operators(c))
    assert [r["operator"] for r in doc["by_operator"]] == ["aten::mm"]
