"""Training step time: backward GEMMs, recompute, TP collectives, bubble, DP reduction, Adam."""

import pytest

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.models import TransformerConfig, training_flops_per_token
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


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"global_batch": 7}, "multiple"),
        ({"recompute": 1.5}, "recompute"),
        ({"dp_sharding": "zero9"}, "dp_sharding"),
        ({"interleave": 0}, "interleave"),
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
