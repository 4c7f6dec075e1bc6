"""Measured runs in: synthetic traces in both formats -> run records -> triage."""

import json

import pytest

from workbench.cli import main
from workbench.evidence import read_trace
from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.review import load_record, triage
from workbench.review.join.from_trace import record_from_trace
from workbench.review.scenarios.synthetic import write_synthetic_trace

H100 = load_hardware("h100-sxm")
SLOW = MapOptions(disabled_fusion=("gemm_epilogue",))


def mapping(opts=None):
    return map_model(build_graph("gpt2", seq=256), H100, opts or MapOptions())


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    return {
        "base.json.gz": write_synthetic_trace(mapping(), d / "base.json.gz", seed=1),
        "cand.sqlite": write_synthetic_trace(mapping(SLOW), d / "cand.sqlite", fmt="nsys", seed=2),
        "once.json": write_synthetic_trace(mapping(), d / "once.json", iterations=1, seed=3),
        "cand.json": write_synthetic_trace(mapping(SLOW), d / "cand.json", seed=2),
    }


@pytest.mark.parametrize("name", ["base.json.gz", "cand.sqlite"])
def test_both_formats_become_records_with_matched_kernels(traces, name, tmp_path, capsys):
    opts = ["--no-fusion", "gemm_epilogue"] if name == "cand.sqlite" else []
    out = tmp_path / "r.json"
    argv = ["run", "--from-trace", str(traces[name]), "--model", "gpt2", "--seq", "256"]
    assert main([*argv, *opts, "--record", str(out)]) == 0
    assert "sheet kernel(s) matched" in capsys.readouterr().out
    rec = load_record(out)
    assert rec.measurement.repeats == 8
    assert rec.measurement.backend in ("trace:kineto", "trace:nsys")
    lo, hi = rec.model.time_interval_s
    assert lo <= rec.model.time_s <= hi
    assert all(k.measured_s is not None for k in rec.kernels)  # every sheet row measured
    assert all(any("matched:" in n for n in k.notes) for k in rec.kernels)
    assert 0 < rec.model.mfu <= rec.model.hfu <= 1
    assert rec.command.startswith("workbench run --from-trace")


def test_trace_without_model_records_unknowns_not_guesses(traces):
    rec = record_from_trace(read_trace(traces["base.json.gz"]))
    assert rec.tags.workload.model == "unknown"
    assert rec.tags.compiler.search == "unknown"
    assert dict(rec.tags.runtime.backend_versions)["driver"] == "unknown"
    assert {k.layer_type for k in rec.kernels} == {"unmatched"}  # listed, never dropped
    assert rec.model.mfu == 0.0


def test_measured_pair_triages_to_the_broken_fusion(traces):
    base = record_from_trace(read_trace(traces["base.json.gz"]), mapping())
    cand = record_from_trace(read_trace(traces["cand.json"]), mapping(SLOW))
    report = triage(base, cand, changed="compiler", simulate=False)
    assert report.first_failing.mechanism == "fusion_broken"
    assert report.noise > 0  # measured: intervals give a noise floor
    assert report.diff[-1].name == "(unexplained remainder)"  # idle/launch gaps land here
    assert report.decision == "roll back"


def test_single_iteration_trace_cannot_sign_off(traces):
    once = record_from_trace(read_trace(traces["once.json"]), mapping())
    assert once.model.time_interval_s == ()
    report = triage(once, once)
    assert report.decision == "cannot sign off"
    assert any("repeats for the measured" in r for r in report.reasons)


def test_bad_trace_one_line_exit_2_nothing_written(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    out = tmp_path / "r.json"
    assert main(["run", "--from-trace", str(bad), "--record", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "bad.json" in err
    assert not out.exists()
    assert not list(tmp_path.glob(".r.json*"))


def test_trace_record_round_trips(traces, tmp_path):
    from workbench.review import save_record

    rec = record_from_trace(read_trace(traces["cand.sqlite"]), mapping(SLOW))
    path = save_record(rec, tmp_path / "r.json")
    assert load_record(path) == rec
    assert json.loads(path.read_text())["measurement"]["repeats"] == 8


def test_traces_from_different_profilers_are_not_comparable(traces):
    base = record_from_trace(read_trace(traces["base.json.gz"]), mapping())
    cand = record_from_trace(read_trace(traces["cand.sqlite"]), mapping(SLOW))
    report = triage(base, cand, changed="compiler", simulate=False)
    assert report.decision == "refused"
    assert any(m.startswith("runtime.backend") for m in report.mismatched_tags)


def test_traces_without_their_model_are_not_blamed_on_the_model(traces):
    base = record_from_trace(read_trace(traces["base.json.gz"]))
    cand = record_from_trace(read_trace(traces["cand.json"]))
    report = triage(base, cand, simulate=False)
    # no mapping sheet: the headline is the roll-up by category (issue 18), never a model's gap;
    # the epilogue no longer fused runs as its own elementwise kernels
    assert report.first_failing.mechanism == "measured_slowdown"
    assert report.first_failing.kernel == "elementwise kernels"
    assert report.owner.role == "runtime systems engineer"
    assert report.headline()["baseline"]["mfu"] is None  # unknown, never shown as 0 %
    assert not any(c.metric == "mfu" and c.status != "n/a" for c in report.checks)


def test_trace_faster_than_the_profile_allows_is_refused(tmp_path):
    from workbench.evidence import TraceError

    run = read_trace(write_synthetic_trace(mapping(), tmp_path / "fast.json", seed=1))
    peaks = {k: v / 1000 for k, v in H100.matrix_engine.peak_flops_per_s.items()}
    engine = H100.matrix_engine.model_copy(update={"peak_flops_per_s": peaks})
    slow = map_model(
        build_graph("gpt2", seq=256), H100.model_copy(update={"matrix_engine": engine})
    )
    with pytest.raises(TraceError, match="faster than the profile's peak"):
        record_from_trace(run, slow)


def test_measured_slowdown_with_the_same_mapping_is_runtime_not_a_prediction_gap(tmp_path):
    # The candidate ran barriers per layer, but both traces are read with the same mapping: the
    # sheet cannot see the mechanism, the measured kernels can.
    # NOTE: a short prompt (32 tokens), so twelve barriers are a clear share of the step (~8%,
    # past the 5% roll-back line) whatever the kernels' own times.
    short = map_model(build_graph("gpt2", seq=32), H100)
    slow = write_synthetic_trace(
        map_model(build_graph("gpt2", seq=32), H100, MapOptions(barrier_per_layer=True)),
        tmp_path / "slow.json",
        seed=2,
    )
    base_trace = write_synthetic_trace(short, tmp_path / "base.json", seed=1)
    base = record_from_trace(read_trace(base_trace), short)
    cand = record_from_trace(read_trace(slow), short)
    report = triage(base, cand, changed="runtime", simulate=False)
    assert report.headline()["time_change"] > 0.05
    assert report.first_failing.mechanism == "measured_slowdown"
    assert report.owner.role == "runtime systems engineer"
    assert report.decision == "roll back"


def test_measured_slowdown_moves_the_simulated_tail(tmp_path):
    # Both traces are read with the same mapping; only the measured step time differs. The SLA
    # simulation must step at the measured level, so the candidate's p95 is higher.
    slow = map_model(build_graph("gpt2", seq=256), H100, MapOptions(barrier_per_layer=True))
    base = record_from_trace(
        read_trace(write_synthetic_trace(mapping(), tmp_path / "b.json", seed=1)), mapping()
    )
    cand = record_from_trace(
        read_trace(write_synthetic_trace(slow, tmp_path / "c.json", seed=2)), mapping()
    )
    report = triage(base, cand, changed="runtime")
    assert report.sla is not None
    assert report.sla.candidate["p95_s"] > report.sla.baseline["p95_s"]


def test_a_long_demangled_name_is_shortened_in_the_triage_table(tmp_path, capsys):
    # issue 17: a 2,000-character TBE kernel name broke the diff table of a measured pair
    from workbench.evidence import MeasuredKernel, write_kineto_trace

    accessor = "at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, int>"
    long = (
        "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel<float, float>("
        + ", ".join([accessor] * 28)
        + ")"
    )
    assert len(long) > 2000
    records = []
    for label, ms in (("a", 1.0), ("b", 3.0)):
        kernels = [
            MeasuredKernel(name=long, category="embedding", rule="", start_s=0.01 * i,
                           duration_s=ms * 1e-3, device=0, stream=7, iteration=i)
            for i in range(4)
        ]  # fmt: skip
        trace = write_kineto_trace(tmp_path / f"{label}.json", kernels)
        records.append(tmp_path / f"{label}-run.json")
        assert main(["run", "--from-trace", str(trace), "--record", str(records[-1])]) == 0
    capsys.readouterr()
    main(["triage", *map(str, records)])
    out = capsys.readouterr().out
    family = [line for line in out.splitlines() if line.lstrip().startswith("family ")]
    assert family
    assert all(len(line) < 200 for line in family), family
    assert "split_embedding_backward_codegen_rowwise_adagrad_unweighted_k..." in family[0]
    main(["triage", *map(str, records), "--format", "json"])
    assert long in capsys.readouterr().out  # the full name stays in the JSON


def _pair(tmp_path, gemm_ms, copy_ms):
    """Records of two Kineto traces, 6 steps each: one GEMM and one host-to-device copy a step."""
    from workbench.evidence import MeasuredKernel, write_kineto_trace

    records = []
    for label, (g, c) in (("a", (gemm_ms[0], copy_ms[0])), ("b", (gemm_ms[1], copy_ms[1]))):
        kernels, t0 = [], 0.0
        for i in range(6):  # NOTE: back to back, so the step period is the work's
            kernels += [
                MeasuredKernel(name="Memcpy HtoD (Pageable -> Device)", category="copy",
                               rule="activity:memcpy", start_s=t0, duration_s=c * 1e-3, device=0,
                               stream=7, iteration=i, kind="memcpy", bytes=4 << 20),
                MeasuredKernel(name="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                               category="gemm", rule="name~gemm", start_s=t0 + c * 1e-3 + 1e-5,
                               duration_s=g * 1e-3, device=0, stream=7, iteration=i),
            ]  # fmt: skip
            t0 += (c + g) * 1e-3 + 2e-5
        trace = write_kineto_trace(tmp_path / f"{label}.json", kernels)
        records.append(tmp_path / f"{label}-run.json")
        assert main(["run", "--from-trace", str(trace), "--record", str(records[-1])]) == 0
    return [load_record(p) for p in records]


def test_a_host_to_device_copy_is_headlined_as_a_copy_never_as_compute(tmp_path):
    # issue 18: a host-to-device memcpy once headed a measured regression as "(compute) = 119%"
    base, cand = _pair(tmp_path, gemm_ms=(4.0, 4.2), copy_ms=(1.0, 3.0))
    report = triage(base, cand, simulate=False)
    first = report.first_failing
    assert first.kernel == "copy kernels"
    assert 0.5 < first.share <= 1.0
    assert "compute" not in str(first.mechanism)


def test_a_copy_that_grew_less_than_the_gemms_does_not_lead_the_headline(tmp_path):
    base, cand = _pair(tmp_path, gemm_ms=(4.0, 6.0), copy_ms=(1.0, 1.2))
    report = triage(base, cand, simulate=False)
    assert report.first_failing.kernel == "gemm kernels"
    assert report.first_failing.share <= 1.0
