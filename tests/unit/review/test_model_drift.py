"""The model drift gate (issue 26): a counterfactual read for measured kernels says where the
model's baseline misses the measured one, and which kernel kinds it cannot speak for."""

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.triage_render import triage_document, triage_text
from workbench.review import Measurement, record_from_mapping, triage
from workbench.review.diagnosis.attribution import DRIFT_LIMIT, model_drift


def _measured(options: MapOptions, gemm_scale: float):
    m = map_model(build_graph("gpt2", "prefill", seq=128), load_hardware("h100-sxm"), options)
    measured = {
        k.kernel.name: k.cost.total_s * (gemm_scale if k.kernel.kind == "gemm" else 1.0)
        for k in m.kernels
    }
    how = Measurement(
        method="test", backend="numpy", kernels=tuple(measured), shapes=(), repeats=3, wall_s=1.0
    )
    return record_from_mapping(m, measurement=how, measured=measured)


def test_drift_names_the_kinds_the_model_misses():
    base = _measured(MapOptions(), gemm_scale=2.0)  # GEMMs measured twice as slow as predicted
    rows = {r.kind: r for r in model_drift(base)}
    assert rows["gemm"].drift == -0.5
    assert rows["gemm"].large
    others = [r for kind, r in rows.items() if kind != "gemm"]
    assert others
    assert all(abs(r.drift) < 1e-9 and not r.large for r in others)
    assert DRIFT_LIMIT == 0.25


def test_triage_prints_the_drift_beside_the_attribution():
    base = _measured(MapOptions(), gemm_scale=2.0)
    cand = _measured(MapOptions(disabled_fusion=("gemm_epilogue",)), gemm_scale=2.0)
    report = triage(base, cand, changed="compiler", simulate=False)
    text = triage_text(report)
    assert "model drift on the baseline" in text
    assert "it cannot speak for those kinds" in text
    assert "on: gemm;" in text
    doc = triage_document(report)["attribution"]
    assert any(r["kind"] == "gemm" and r["large"] for r in doc["model_drift"])


def test_predicted_runs_carry_no_drift():
    m = map_model(build_graph("gpt2", "prefill", seq=128), load_hardware("h100-sxm"))
    rec = record_from_mapping(m)
    assert model_drift(rec) == ()
    assert "model drift" not in triage_text(triage(rec, rec, simulate=False))
