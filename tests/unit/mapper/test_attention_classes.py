"""Fused-attention implementation classes (issue 10): fa2, fa3, serial, generic."""

from __future__ import annotations

import pytest

from workbench.cost.attention_class import CLASSES, attention_class, class_for_software
from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.ir import Graph
from workbench.ir.ops import Attention
from workbench.mapper import map_model
from workbench.options import MapOptions


def _rate(hw_name: str, kind: str | None, batch: int, seq: int, head_dim: int = 128) -> float:
    """Dense-convention attention rate (4 b h s^2 d / time), FLOP/s."""
    heads = 2048 // head_dim
    op = Attention(name="a", inputs=("q", "k", "v"), batch=batch, heads=heads, kv_heads=heads,
                   q_len=seq, kv_len=seq, head_dim=head_dim, causal=False)  # fmt: skip
    m = map_model(
        Graph(name="a", ops=(op,)), load_hardware(hw_name), MapOptions(attention_kernel=kind)
    )
    return 4.0 * batch * heads * seq * seq * head_dim / m.time_s


@pytest.mark.parametrize(
    ("software", "kind"),
    [
        ("FA3", "fa3"),
        ("FlashAttention-3", "fa3"),
        ("FA2", "fa2"),
        ("FA2 (ROCm CK)", "fa2"),
        ("Triton tutorial flash attention v2", "serial"),
        ("TensorRT-LLM v0.5, FP8", None),
    ],
)
def test_the_rows_software_names_the_class(software, kind):
    assert class_for_software(software) == kind


def test_an_unknown_class_is_refused():
    with pytest.raises(WorkbenchError, match="attention kernel"):
        attention_class("fa9")
    with pytest.raises(WorkbenchError, match="attention kernel"):
        MapOptions(attention_kernel="fa9")


def test_fitted_fractions_are_fractions_and_name_their_row():
    for cls in CLASSES.values():
        assert 0.0 <= cls.softmax_exposed <= 1.0
    assert "attn.fa2.a100.peak" in CLASSES["fa2"].source
    assert "attn.fa3.h100.s16k" in CLASSES["fa3"].source
    hw = load_hardware("h100-sxm")
    assert hw.software.attention_warp_mma_fraction is not None
    assert hw.software.attention_warp_mma_fraction < hw.matrix_engine.legacy_mma_fraction


def test_hopper_classes_order_as_measured():
    # pytorch/benchmark ff65cb67 (H100, 16k tokens): FA3 621 > Triton 477 > FA2 335 TFLOP/s.
    fa3, serial, fa2 = (_rate("h100-sxm", k, 1, 16384) for k in ("fa3", "serial", "fa2"))
    assert fa3 > serial > fa2


@pytest.mark.parametrize("kind", ["fa3", "serial"])
def test_short_sequences_pay_the_per_item_prologue_and_epilogue(kind):
    # Same tokens (16k), same work items (2048 query tiles); s=512 has 4 key blocks per item
    # against 128, so Q in / O out and the pipeline fill weigh ~30% (measured 0.69x for both).
    short, long = _rate("h100-sxm", kind, 32, 512), _rate("h100-sxm", kind, 1, 16384)
    assert 0.55 < short / long < 0.85


def test_fa2_on_hopper_runs_at_the_profiles_warp_mma_rate():
    hw = load_hardware("h100-sxm")
    op = Attention(name="a", inputs=("q", "k", "v"), batch=1, heads=16, kv_heads=16,
                   q_len=8192, kv_len=8192, head_dim=128, causal=False)  # fmt: skip
    g = Graph(name="a", ops=(op,))
    slower = hw.model_copy(
        update={"software": hw.software.model_copy(update={"attention_warp_mma_fraction": 0.3})}
    )
    assert map_model(g, slower).time_s > 1.2 * map_model(g, hw).time_s
    # the async classes do not use the warp-level rate
    fa3 = MapOptions(attention_kernel="fa3")
    assert map_model(g, slower, fa3).time_s == pytest.approx(map_model(g, hw, fa3).time_s)


def test_a_profile_without_a_declared_stack_keeps_the_generic_model():
    assert load_hardware("tpu-v5e").software.attention_kernel == "generic"
    assert load_hardware("a100-80gb").software.attention_kernel == "fa2"
    assert _rate("tpu-v5e", None, 1, 4096) == pytest.approx(_rate("tpu-v5e", "generic", 1, 4096))


def test_the_attention_kernel_is_compute_bound_when_softmax_holds_the_pipeline():
    hw = load_hardware("h100-sxm")
    op = Attention(name="a", inputs=("q", "k", "v"), batch=1, heads=16, kv_heads=16,
                   q_len=16384, kv_len=16384, head_dim=128, causal=False)  # fmt: skip
    m = map_model(Graph(name="a", ops=(op,)), hw, MapOptions(attention_kernel="serial"))
    assert m.kernels[0].cost.bottleneck == "compute"


def test_a_corpus_row_is_costed_as_its_software_class():
    from workbench.fidelity.reproduce import reproduce
    from workbench.fidelity.schema import load_corpus

    rows = {r.id: r for r in load_corpus().rows}
    hw = load_hardware("h100-sxm")
    triton = reproduce(rows["attn.triton.h100.s16k"], hw).predicted
    fa3 = reproduce(rows["attn.fa3.h100.s16k"], hw).predicted
    assert fa3 > 1.1 * triton


def test_an_fp16_attention_in_an_fp8_engine_is_mapped_in_fp16():
    from workbench.fidelity.reproduce import _decoder
    from workbench.fidelity.schema import load_corpus
    from workbench.hw.stack import load_stack

    row = next(r for r in load_corpus().rows if r.id == "ttft.trtllm.h100.llama7b.isl2048")
    stack = load_stack(row.stack)
    assert stack.fp8_attention_dtype.value == "fp16"
    m = _decoder(row.setup, load_hardware("h100-sxm"), stack, "prefill", 1, 2048)
    sdpa = [k for k in m.kernels if k.kernel.name.endswith("attn.sdpa")]
    gemm = [k for k in m.kernels if k.kernel.name.endswith("mlp.up_proj")]
    assert sdpa
    assert all(k.kernel.compute_dtype == "fp16" for k in sdpa)
    assert gemm
    assert all(k.kernel.compute_dtype == "fp8_e4m3" for k in gemm)
