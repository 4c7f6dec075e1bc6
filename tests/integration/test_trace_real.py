"""``workbench trace`` on real public traces (HTA's test data, tests/data/hta/README.md): the
expected-vs-measured table from the trace's own shapes, and the A100 -> V100 DLRM measured pair
checked against HTA's step periods, copies by direction against Kineto's own per-copy rates
(issue 17)."""

from __future__ import annotations

import functools
import gzip
import json
import statistics
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.evidence import read_trace
from workbench.evidence.copies import copies_by_direction, copy_direction
from workbench.evidence.operators import read_operators
from workbench.hw import load_hardware
from workbench.review.join.expected import expect
from workbench.review.join.pairs import pair_document

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
    assert 0.3 < report.coverage < 1  # TBE and torch.compile graphs have no expectation
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


@pytest.mark.parametrize(("name", "profile"), [(V100, "v100-sxm2"), (A100, "a100-80gb")])
def test_dlrm_collectives_are_expected_from_their_nccl_annotations(name, profile, capsys):
    # record_param_comms holds no sizes in these traces; the nccl:all_to_all / nccl:all_reduce
    # ranges inside it do, and distributedInfo gives the world size.
    run, ops = _read(name)
    report = expect(run, ops, load_hardware(profile))
    comm = [r for r in report.rows if r.category == "collective"]
    assert {r.operator.split("(")[0] for r in comm} == {"nccl:all_to_all", "nccl:all_reduce"}
    assert all(r.bottleneck == "interconnect" for r in comm)
    assert dict(report.unmodelled_s).get("collective", 0.0) == 0.0
    world = int(run.tag("world_size"))
    a2a = next(
        op for op in report.trace_graph.graph.ops if op.kind == "AllToAll" and op.chips == world
    )
    assert a2a.link_bytes == pytest.approx((world - 1) / world * a2a.output_tensor().nbytes)
    assert main(["trace", str(DATA / name)]) == 0
    out = capsys.readouterr().out
    assert "note: a collective kernel's measured time includes waiting" in out


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


def _kineto_copy_rates(name):
    """Correlation id -> (duration us, Kineto's own "memory bandwidth (GB/s)") of each copy."""
    doc = json.loads(gzip.decompress((DATA / name).read_bytes()))
    return {
        e["args"]["correlation"]: (e["dur"], e["args"]["memory bandwidth (GB/s)"])
        for e in doc["traceEvents"]
        if e.get("cat") in ("gpu_memcpy", "gpu_memset")
    }


@pytest.mark.parametrize("name", [V100, A100])
def test_copy_bandwidth_per_direction_is_kinetos_own_rate_weighted_by_duration(name):
    run, _ = _read(name)
    rates = _kineto_copy_rates(name)
    steady = {it.index for it in run.steady_iterations}
    weighted: dict[str, list[float]] = {}
    for k in run.kernels:
        if k.kind in ("memcpy", "memset") and k.iteration in steady:
            dur, gbps = rates[k.correlation]
            acc = weighted.setdefault(copy_direction(k.name, k.kind), [0.0, 0.0, 0.0])
            acc[0] += dur * gbps
            acc[1] += dur
            acc[2] += 1
    ours = {c.direction: c for c in copies_by_direction(run)}
    print(name, {d: f"{c.bandwidth_bytes_per_s / 1e9:.4g} GB/s" for d, c in ours.items()})
    assert set(ours) == set(weighted) >= {"HtoD", "DtoH", "DtoD", "memset"}
    checked = set()
    for direction, (num, den, calls) in weighted.items():
        mean_us = den / calls
        if mean_us < 20:
            continue  # Kineto writes whole microseconds: a 2 us copy's rate is only good to ~50 %
        # NOTE: Kineto's own rate divides by the exact duration, ours by the written one: they
        # agree to the rounding, one microsecond in the mean copy's duration.
        tolerance = max(1e-3, 1.0 / mean_us)
        got = ours[direction].bandwidth_bytes_per_s
        assert got == pytest.approx(num / den * 1e9, rel=tolerance), direction
        checked.add(direction)
    assert checked >= {"HtoD", "DtoD"}


def test_cli_json_reports_copies_and_the_share_left_unclassified(capsys):
    assert main(["trace", str(DATA / V100), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    directions = {c["direction"]: c for c in doc["memory_copies"]}
    # the V100 step's 768 device-to-device copies per iteration (the A100 run has 3)
    assert directions["DtoD"]["calls_per_iteration"] == 768
    assert 0 < doc["classification"]["other_share"] < 0.05  # issue 17's goal, as the tool says
    assert all(k["name"] for k in doc["classification"]["other_kernels"])
    assert main(["trace", str(DATA / V100)]) == 0
    out = capsys.readouterr().out
    assert "memory copies by direction (steady state, per iteration)" in out
    assert "no rule matched ('other'): 2.2% of kernel time" in out
