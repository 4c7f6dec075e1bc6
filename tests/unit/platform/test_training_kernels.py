"""The training step's kernels by phase, the loss, FP8 GEMMs and their casts, MFU and HFU."""

import json
from dataclasses import replace

import pytest

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.models import TransformerConfig, training_flops_per_token
from workbench.platform.training import (
    CONVENTION,
    TrainingPlan,
    training_step,
    training_utilisation,
)
from workbench.report.training_sheet import training_sheet_json, training_sheet_text

CFG = TransformerConfig(
    name="t", hidden=1024, layers=8, heads=16, kv_heads=16, head_dim=64, ffn=4096, vocab=8192,
    activation="gelu", norm="layernorm", position="rope", max_seq=1024,
)  # fmt: skip


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


def _step(hw, **kw):
    plan = TrainingPlan(**{"micro_batch": 2, "global_batch": 8, **kw})
    return plan, training_step(CFG, hw, plan, seq=1024)


def _total(step, phase):
    return sum(k.total_s for k in step.kernels if k.phase == phase)


PLANS = (
    {},
    {"recompute": 1.0},
    {"selective": "every_other_gemm"},
    {"tensor_parallel": 2, "data_parallel": 2, "global_batch": 16},
)


@pytest.mark.parametrize("kw", PLANS)
def test_kernel_rows_add_up_to_the_step_parts(h100, kw):
    _, s = _step(h100, **kw)
    compute = _total(s, "forward") + _total(s, "backward") + _total(s, "recompute")
    assert compute == pytest.approx(s.compute_s)
    assert _total(s, "optimizer") == pytest.approx(s.optimizer_s)


def test_every_forward_gemm_has_a_dgrad_and_a_wgrad(h100):
    _, s = _step(h100)
    names = {k.name for k in s.kernels}
    for k in s.kernels:
        if k.phase == "forward" and k.flops > 0 and not k.name.endswith("sdpa"):
            assert {f"{k.name}.dgrad", f"{k.name}.wgrad"} <= names, k.name
    # NOTE: fused attention's backward is one kernel, 2.5 forwards of FLOPs
    assert "layers.0.attn.sdpa.bwd" in names


def test_the_loss_runs_over_the_vocabulary_with_its_backward(h100):
    _, s = _step(h100)
    ce = {k.phase: k for k in s.kernels if k.name.startswith("loss.cross_entropy")}
    assert set(ce) == {"forward", "backward"}
    assert ce["backward"].time_s == pytest.approx(2 * ce["forward"].time_s)


def test_recompute_rows_follow_the_plan(h100):
    _, none = _step(h100)
    _, full = _step(h100, recompute=1.0)
    _, sel = _step(h100, selective="every_other_gemm")
    assert _total(none, "recompute") == 0
    assert _total(full, "recompute") == pytest.approx(_total(full, "forward"))
    assert 0 < _total(sel, "recompute") < _total(sel, "forward")


def test_clipping_is_its_own_kernel(h100):
    _, clip = _step(h100)
    _, plain = _step(h100, clip_grad_norm=False)
    names = {k.name for k in clip.kernels} - {k.name for k in plain.kernels}
    assert names == {"optimizer.clip_grad_norm"}
    assert plain.optimizer_s < clip.optimizer_s


def test_sharded_data_parallel_lists_its_collectives(h100):
    _, s = _step(h100, data_parallel=4, dp_sharding="full", dp_overlap=True)
    comm = {k.name: k for k in s.kernels if k.phase == "communication"}
    assert set(comm) == {"dp.reduce_scatter", "dp.all_gather"}
    # NOTE: parameters gathered for each micro-batch's forward and again for its backward
    assert comm["dp.all_gather"].calls == 2


def test_fp8_runs_the_layer_gemms_in_fp8_with_their_casts(h100):
    _, bf16 = _step(h100)
    _, fp8 = _step(h100, fp8=True)
    kernels = {k.kernel.name: k.kernel for k in fp8.mappings[0].kernels}
    assert kernels["layers.0.mlp.up_proj"].dtype == "fp8_e4m3"
    assert kernels["layers.0.attn.sdpa"].dtype == "bf16"
    assert kernels["lm_head"].dtype == "bf16"
    names = {k.name for k in fp8.kernels}
    assert {"layers.0.mlp.up_proj.dy_cast", "layers.0.mlp_norm.fp8_cast"} <= names
    assert "fp8.amax_and_scale_update" in names
    up = {k.name: k.time_s for k in fp8.kernels if k.phase == "forward"}
    up16 = {k.name: k.time_s for k in bf16.kernels if k.phase == "forward"}
    assert up["layers.0.mlp.up_proj"] < up16["layers.0.mlp.up_proj"]
    assert fp8.flops == pytest.approx(bf16.flops)


def test_mfu_counts_model_flops_and_hfu_adds_the_recompute(h100):
    plan, s = _step(h100, recompute=1.0)
    u = training_utilisation(CFG, h100, plan, s, seq=1024)
    tokens = plan.global_batch * 1024 / plan.chips
    model = training_flops_per_token(CFG, 1024)
    assert u.mfu == pytest.approx(model * tokens / s.step_s / h100.peak_flops("bf16"))
    assert u.hfu == pytest.approx(u.mfu * training_flops_per_token(CFG, 1024, 1.0) / model)
    assert u.convention == CONVENTION
    assert "6N + 12*L*H*Q*T" in u.convention
    plan0, s0 = _step(h100)
    u0 = training_utilisation(CFG, h100, plan0, s0, seq=1024)
    assert u0.hfu == pytest.approx(u0.mfu)
    plan_s, s_s = _step(h100, selective="every_other_gemm")
    us = training_utilisation(CFG, h100, plan_s, s_s, seq=1024)
    assert us.mfu < us.hfu < us.mfu * training_flops_per_token(CFG, 1024, 1.0) / model


def test_a_step_without_time_has_no_utilisation(h100):
    plan, s = _step(h100)
    with pytest.raises(WorkbenchError, match="positive and finite"):
        training_utilisation(CFG, h100, plan, replace(s, compute_s=0.0, optimizer_s=0.0,
                             overlap_s=0.0, dp_comm_s=0.0), seq=1024)  # fmt: skip


def test_the_sheet_shows_every_phase_and_the_convention(h100):
    plan, s = _step(h100, recompute=1.0, data_parallel=2, global_batch=16)
    u = training_utilisation(CFG, h100, plan, s, seq=1024)
    text = training_sheet_text(s, u, "t")
    for phase in ("forward", "backward", "recompute", "optimizer", "communication"):
        assert f"\n{phase}" in text
    assert "MFU" in text
    assert "HFU" in text
    assert CONVENTION in text
    doc = json.loads(training_sheet_json(s, u, {"model": "t"}))
    assert doc["utilisation"]["convention"] == CONVENTION
    assert sum(k["total_s"] for k in doc["kernels"] if k["phase"] == "optimizer") == (
        pytest.approx(doc["step"]["optimizer_s"])
    )


def test_the_embedding_backward_writes_the_whole_table_gradient(h100):
    _, s = _step(h100)
    bwd = next(k for k in s.kernels if k.name == "embed_tokens.bwd")
    # NOTE: 8192 x 1024 fp32 zero-filled, plus the touched rows and the incoming gradient
    table = CFG.vocab * CFG.hidden * 4
    assert bwd.time_s > table / h100.offchip.sustained_bytes_per_s
