"""``workbench trace`` on real public traces (HTA's test data, tests/data/hta/README.md): the
expected-vs-measured table from the trace's own shapes, and the A100 -> V100 DLRM measured pair
checked against HTA's step periods (issue 17)."""

from __future__ import annotations

import functools
import statistics
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.evidence import read_trace
from workbench.evidence.operators import read_operators
from workbench.hw import load_hardware
from workbench.review.expected import expect
from workbench.review.pairs import pair_document

DATA = Path(__file__).parents[1] / "data" / "hta"
V100, A100, ALEXNET = "dlrm_v100_rank1.json.gz", "dlrm_a100.json.gz", "alexnet_a100.json.gz"
pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword:Warning", "ignore:invalid value encountered:RuntimeWarning"
)


@functools.cache  # the module's tests only query the runs (frozen): each file is read once
def _read(name):
    return read_trace(DATA / name), read_operators(DATA / name)


def test_dlrm_v100_kernels_beside_what_a_v100_should_do():
    run, ops = _read(V100)
    assert ops.shapes_recorded
    report = expect(run, ops, load_hardware("v100-sxm2"))
    print(
        f"DLRM V100: {len(report.rows)} modelled kernels, {report.measured_s * 1e3:.2f} ms "
        f"measured vs {report.expected_s * 1e3:.2f} ms expected per step, "
        f"coverage {report.coverage:.1%}"
    )
    assert report.rows
    assert 0 < report.coverage < 1  # TBE, torch.compile graphs and NCCL have no expectation
    sgemm = [r for r in report.rows if "sgemm" in r.name]
    assert sgemm
    assert all(r.format == "fp32" for r in sgemm)  # Volta has no TF32: sgemm on the CUDA cores
    assert all(r.expected_s > 0 and r.measured_s > 0 for r in report.rows)
    assert report.rows[0].lost_s == max(r.lost_s for r in report.rows)
    steady = len(run.steady_iterations)
    linked = sum(r.measured_s for r in report.rows) * steady
    kernels = {
        k.name for k in run.kernels if k.iteration in {i.index for i in run.steady_iterations}
    }
    assert {r.name for r in report.rows} <= kernels
    assert linked > 0


@pytest.mark.slow  # reads the 1.7 MB A100 trace twice (kernels, operators), ~3 s
def test_dlrm_a100_tensor_op_gemms_are_expected_in_tf32():
    run, ops = _read(A100)
    report = expect(run, ops, load_hardware("a100-80gb"))
    tensorop = [r for r in report.rows if "tensorop" in r.name]
    assert tensorop
    assert all(r.format == "tf32" for r in tensorop)


def test_alexnet_without_shapes_says_so(capsys):
    assert main(["trace", str(DATA / ALEXNET)]) == 0
    out = capsys.readouterr().out
    assert "expected vs measured: not available (the trace recorded no shapes" in out
    assert "no step markers" not in out  # its [param|...|measure|...] range is the step


@pytest.mark.slow  # the whole command on the 1.6 MB trace, ~3 s
def test_cli_on_the_v100_trace_leads_with_the_table(capsys):
    assert main(["trace", str(DATA / V100)]) == 0
    lines = capsys.readouterr().out.splitlines()
    print("\n".join(lines[:40]))
    assert lines[0] == f"trace {DATA / V100} on Tesla V100-SXM2-16GB"
    assert lines[1].startswith("these 5 kernels lose ")
    assert "the v100-sxm2 profile says it should do" in lines[1]
    assert any(line.startswith("iterations: 6 steps, median 122 ms") for line in lines)


@pytest.mark.slow  # HTA parses two 1.7 MB traces, ~3 s each (the V100 one shared a session)
def test_dlrm_a100_to_v100_step_change_is_htas():
    from hta_oracle import hta_last_step_s, hta_load_file, hta_step_periods

    def hta_steady_median(name, rank):
        analysis = hta_load_file(DATA / name)
        periods = list(hta_step_periods(analysis, rank).values())
        # steady state: the first (warm-up) step left out, the last step's window kept
        return statistics.median([*periods[1:], hta_last_step_s(analysis, rank)])

    ref = hta_steady_median(V100, 1) / hta_steady_median(A100, 3) - 1
    a, ops_a = _read(A100)
    b, ops_b = _read(V100)
    doc = pair_document(a, ops_a, b, ops_b)
    print(f"DLRM A100 -> V100 step time: workbench {doc['step']['relative']:+.2%}, HTA {ref:+.2%}")
    assert doc["step"]["relative"] == pytest.approx(ref, abs=1e-6)
    assert 0.5 < doc["step"]["relative"] < 0.7  # the issue: "about +60%", not +111%
    shift = doc["step"]["shift"]
    assert shift["method"] == "paired"
    assert shift["pairs"] == 5
    notes = " ".join(doc["differences"])
    for what in ("device differs", "world_size differs: 8 vs 2", "rank differs: 3 vs 1"):
        assert what in notes
    cats = {r["category"] for r in doc["by_category"]}
    assert {"gemm", "embedding", "collective"} <= cats
