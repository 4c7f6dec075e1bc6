"""Training step time: backward GEMMs, recompute, TP collectives, bubble, DP reduction, Adam."""

import pytest

from workbench.cost.attention_class import backward_factor
from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.models import TransformerConfig, training_flops_per_token
from workbench.options import MapOptions
from workbench.platform.training import TrainingPlan, training_step

CFG = TransformerConfig(
    name="t", hidden=1024, layers=8, heads=16, kv_heads=16, head_dim=64, ffn=4096, vocab=8192,
    activation="gelu", norm="layernorm", position="rope", max_seq=1024,
)  # fmt: skip


@pytest.fixture(scope="module")
def a100():
    return load_hardware("a100-80gb")


def _step(hw, **kw):
    plan = TrainingPlan(**{"micro_batch": 2, "global_batch": 8, **kw})
    return training_step(CFG, hw, plan, seq=1024)


def test_parts_are_positive_and_add_up(a100):
    s = _step(a100, tensor_parallel=2, pipeline_parallel=2, data_parallel=2, global_batch=16)
    parts = (s.compute_s, s.tp_comm_s, s.pp_comm_s, s.bubble_s, s.dp_comm_s, s.optimizer_s)
    assert all(p > 0 for p in parts)
    assert s.step_s == pytest.approx(sum(parts))


def test_backward_costs_about_twice_the_forward(a100):
    base = _step(a100)
    remat = _step(a100, recompute=1.0)
    # NOTE: recompute adds exactly one forward; so the forward is remat - base, and the rest
    # is forward + backward, the backward two GEMMs per forward GEMM.
    fwd = remat.compute_s - base.compute_s
    bwd = base.compute_s - fwd
    assert 1.6 < bwd / fwd < 3.0


def test_bubble_follows_p_minus_1_over_v_m(a100):
    s1 = _step(a100, pipeline_parallel=4, global_batch=16)
    s2 = _step(a100, pipeline_parallel=4, global_batch=16, interleave=2)
    per_mb = s1.compute_s / 8
    assert s1.bubble_s == pytest.approx(3 * (per_mb + (s1.tp_comm_s + s1.pp_comm_s) / 8))
    assert s2.bubble_s == pytest.approx(s1.bubble_s / 2, rel=0.05)


def test_overlap_hides_communication(a100):
    plain = _step(a100, tensor_parallel=4, data_parallel=2, global_batch=16)
    hidden = _step(a100, tensor_parallel=4, data_parallel=2, global_batch=16, tp_overlap=True,
                   dp_overlap=True)  # fmt: skip
    assert plain.tp_comm_s > 0
    assert hidden.tp_comm_s < plain.tp_comm_s
    assert hidden.dp_comm_s < plain.dp_comm_s
    # NOTE: the last gradient bucket is ready only when the backward ends: never hidden.
    assert hidden.dp_comm_s > 0


def test_sharded_optimizer_is_cheaper_per_chip(a100):
    plain = _step(a100, data_parallel=4, global_batch=32)
    zero = _step(a100, data_parallel=4, global_batch=32, dp_sharding="optimizer")
    assert zero.optimizer_s == pytest.approx(plain.optimizer_s / 4)


def test_data_parallel_leaves_the_node_over_the_scale_out_network(a100):
    inside = _step(a100, tensor_parallel=2, data_parallel=4, global_batch=32)
    across = _step(a100, tensor_parallel=8, data_parallel=4, global_batch=32)
    ic = a100.interconnect.model_copy(update={"scale_out": None})
    no_nic = a100.model_copy(update={"interconnect": ic})
    nvlink = _step(no_nic, tensor_parallel=8, data_parallel=4, global_batch=32)
    assert inside.dp_comm_s > 0
    # NOTE: 25 GB/s InfiniBand per GPU against 300 GB/s of NVLink.
    assert across.dp_comm_s > 5 * nvlink.dp_comm_s


def test_a_group_across_nodes_uses_every_nic_its_chips_own(a100):
    """Issue 27: NCCL runs one ring per NIC, so a contiguous 16-chip group on two 8-GPU nodes
    reduces at the node's 8 NICs together (capped by NVLink); a group 8 chips apart (TP 8) owns
    one NIC a node."""
    from workbench.platform._training_comm import net_s

    nic = a100.interconnect.scale_out.bandwidth_bytes_per_s
    nic *= a100.interconnect.scale_out.sustained_fraction
    one_nic = 15 / 16 * 1e9 / nic
    contiguous = net_s(1e9, 16, a100, 1, "rs")
    strided = net_s(1e9, 16, a100, 8, "rs")
    assert strided == pytest.approx(one_nic, rel=0.05)
    assert contiguous < strided / 6


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"global_batch": 7}, "multiple"),
        ({"recompute": 1.5}, "recompute"),
        ({"dp_sharding": "zero9"}, "dp_sharding"),
        ({"interleave": 0}, "interleave"),
        ({"compute_efficiency": 0.0}, "compute_efficiency"),
        ({"compute_efficiency": 1.5}, "compute_efficiency"),
    ],
)
def test_bad_plans_are_one_line(kw, words):
    with pytest.raises(WorkbenchError, match=words):
        TrainingPlan(**{"micro_batch": 2, "global_batch": 8, **kw})


def test_too_many_stages_is_refused(a100):
    with pytest.raises(WorkbenchError, match="stages"):
        _step(a100, pipeline_parallel=16, global_batch=32)


def test_several_chips_without_links_is_refused_not_infinite():
    single = load_hardware("edge-npu")  # a single-chip part: no links
    assert _step(single).step_s > 0
    with pytest.raises(WorkbenchError, match="no chip-to-chip links"):
        _step(single, data_parallel=2)


def test_hardware_flops_count_the_recomputed_layers_not_the_head():
    model = training_flops_per_token(CFG, 1024)
    hw = training_flops_per_token(CFG, 1024, recompute=1.0)
    head = 2 * CFG.hidden * CFG.vocab
    assert hw - model == pytest.approx(model / 3 - head)
    with pytest.raises(WorkbenchError):
        training_flops_per_token(CFG, 1024, recompute=2.0)


def test_unfused_attention_writes_its_scores(a100):
    fused = _step(a100)
    unfused = _step(a100, attention="unfused")
    # NOTE: at 1024 tokens x 16 heads the scores are 2 x 16 x 1024^2 elements per layer,
    # written, read and written by softmax and dropout, read again: slower than the fused kernel.
    assert unfused.compute_s > 1.2 * fused.compute_s
    with pytest.raises(WorkbenchError, match="attention"):
        TrainingPlan(attention="flash9")


def test_fused_attention_backward_runs_at_its_class_efficiency(a100):
    # NOTE: FlashAttention-2's backward at 63% of peak against 73% forward (arXiv:2307.08691);
    # Triton's further below (FA2 1.3-1.5x faster forward, 2x backward): a slower step.
    plan = TrainingPlan(micro_batch=2, global_batch=8)
    fa2 = training_step(CFG, a100, plan, seq=1024, options=MapOptions(attention_kernel="fa2"))
    tri = training_step(CFG, a100, plan, seq=1024, options=MapOptions(attention_kernel="serial"))
    assert backward_factor("serial") > backward_factor("fa2") > backward_factor("generic") == 2.5
    assert tri.compute_s > fa2.compute_s


def test_selective_recompute_sits_between_none_and_full(a100):
    none = _step(a100)
    op = _step(a100, selective="every_other_gemm")
    full = _step(a100, recompute=1.0)
    core = _step(a100, selective="attention_core")
    assert none.compute_s < op.compute_s < full.compute_s
    # NOTE: a fused attention recomputes its scores in its own backward: nothing more to redo.
    assert core.compute_s == pytest.approx(none.compute_s)
    unfused = _step(a100, attention="unfused")
    unfused_core = _step(a100, attention="unfused", selective="attention_core")
    assert unfused_core.compute_s > unfused.compute_s
    # NOTE: every second GEMM's FLOPs are executed again.
    assert none.flops < op.flops < full.flops
    with pytest.raises(WorkbenchError, match="selective"):
        TrainingPlan(selective="some")


def test_fully_sharded_parameters_are_gathered_again_for_the_backward_unless_pipelined(a100):
    kw = {"data_parallel": 4, "global_batch": 8, "dp_sharding": "full"}
    zero1 = _step(a100, **{**kw, "dp_sharding": "optimizer"})
    fsdp = _step(a100, **kw)
    piped = _step(a100, **kw, pipeline_parallel=2)
    # NOTE: ZeRO-3 moves 3x the parameter volume (arXiv:1910.02054 Section 7.2.2): the
    # gradients reduce-scattered, the parameters gathered for the forward and again the backward.
    assert fsdp.dp_comm_s > zero1.dp_comm_s
    # NOTE: pipelined, FSDP keeps the gathered parameters: the traffic of ZeRO-1.
    piped_zero1 = _step(a100, **{**kw, "dp_sharding": "optimizer"}, pipeline_parallel=2)
    assert piped.dp_comm_s == pytest.approx(piped_zero1.dp_comm_s)


def test_hidden_collectives_slow_the_compute_beside_them(a100):
    kw = {"tensor_parallel": 4, "data_parallel": 2, "global_batch": 16, "tp_overlap": True,
          "dp_overlap": True}  # fmt: skip
    free = _step(a100, **kw)
    slowed = _step(a100, **kw, overlap_slowdown=0.189)
    serial = _step(a100, tensor_parallel=4, data_parallel=2, global_batch=16)
    assert free.overlap_s == 0.0
    assert slowed.overlap_s > 0
    assert slowed.step_s > free.step_s
    # NOTE: s / (1 + s) of the hidden time at most: overlap still beats running serially.
    hidden = (serial.tp_comm_s - free.tp_comm_s) + (serial.dp_comm_s - free.dp_comm_s)
    assert slowed.overlap_s <= 0.189 / 1.189 * hidden * 1.0001
    assert slowed.step_s < serial.step_s + slowed.overlap_s
    with pytest.raises(WorkbenchError, match="overlap_slowdown"):
        TrainingPlan(overlap_slowdown=2.0)


def test_the_optimizer_step_includes_gradient_clipping(a100, monkeypatch):
    import workbench.platform.training as tr

    s = _step(a100)
    monkeypatch.setattr(tr, "CLIP_BYTES_PER_PARAM", 0.0)
    # NOTE: Adam's 30 B per parameter, and 12 B more for global-norm clipping.
    assert s.optimizer_s == pytest.approx(_step(a100).optimizer_s * 42.0 / 30.0)


def test_the_stack_s_fusion_rules_reach_the_training_kernels(a100):
    fused = _step(a100)
    unfused = training_step(CFG, a100, TrainingPlan(micro_batch=2, global_batch=8), seq=1024,
                            options=MapOptions(disabled_fusion=("gemm_epilogue",)))  # fmt: skip
    # NOTE: the GeLU and the residual adds become kernels of their own, forward and backward.
    assert unfused.compute_s > fused.compute_s


def test_a_stack_s_step_efficiency_slows_the_compute_kernels_only(a100):
    """Issue 27: a fitted ``compute_efficiency`` e makes every forward, backward and recompute
    kernel 1/e longer; collectives and the optimizer keep their time."""
    kw = {"tensor_parallel": 2, "data_parallel": 4, "global_batch": 32, "recompute": 1.0}
    base = _step(a100, **kw)
    slow = _step(a100, **kw, compute_efficiency=0.5)
    assert slow.compute_s == pytest.approx(2 * base.compute_s)
    assert slow.optimizer_s == pytest.approx(base.optimizer_s)
    assert slow.flops == pytest.approx(base.flops)
    rows = {(k.name, k.phase): k for k in base.kernels}
    for k in slow.kernels:
        want = rows[(k.name, k.phase)].time_s
        factor = 1.0 if k.phase in ("communication", "optimizer") else 2.0
        assert k.time_s == pytest.approx(factor * want), k.name


def test_eager_pytorch_runs_each_operator_as_its_own_kernel_and_fa_s_trainer_fuses_them():
    """Issue 27: an eager PyTorch step (MPT, IBM's LLaMA) prices the activation and residual adds
    as kernels of their own, forward and backward; FlashAttention's trainer, with its fused
    GEMM + GELU and dropout-add-LayerNorm, runs the same layer without them."""
    from workbench.fidelity import load_corpus
    from workbench.fidelity._reproduce_training import training_run
    from workbench.hw.stack import load_stack

    row = next(r for r in load_corpus().rows if r.id == "train.flashattn-readme.a100.gpt3-1.3b")
    hw = load_hardware(row.hardware)
    steps = {
        name: training_run(row.setup, hw, load_stack(name))[1]
        for name in ("pytorch-eager", "flash-attention-trainer")
    }
    names = {n: {k.name.split(".", 2)[-1] for k in s.kernels} for n, s in steps.items()}
    extra = names["pytorch-eager"] - names["flash-attention-trainer"]
    assert any("act" in n for n in extra), extra
    assert any("residual" in n for n in extra), extra
    assert not names["flash-attention-trainer"] - names["pytorch-eager"]
    assert steps["pytorch-eager"].step_s > steps["flash-attention-trainer"].step_s
