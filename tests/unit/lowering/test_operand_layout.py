from workbench.hw import load_hardware
from workbench.lowering import lower
from workbench.models import build_graph
from workbench.options import MapOptions


def _names(ks):
    return [k.name for k in ks]


def test_fp8_pv_on_hopper_needs_a_k_major_v():
    # Hopper wgmma reads 8-bit B operands K-major only; V in P x V is N-major.
    h100 = load_hardware("h100-sxm")
    g = build_graph("gpt2", seq=256)
    no_flash = ("flash_attention",)
    folded = lower(g, h100, MapOptions(dtype="fp8_e4m3", disabled_fusion=no_flash))
    pv = next(k for k in folded if k.name == "layers.0.attn.sdpa.pv")
    assert any("K-major" in n and "layout_fold" in n for n in pv.notes)
    assert "layers.0.attn.sdpa.pv.b_to_kmajor" not in _names(folded)
    explicit = lower(
        g, h100, MapOptions(dtype="fp8_e4m3", disabled_fusion=(*no_flash, "layout_fold"))
    )
    names = _names(explicit)
    i = names.index("layers.0.attn.sdpa.pv.b_to_kmajor")
    assert names[i + 1] == "layers.0.attn.sdpa.pv"
    t = explicit[i]
    assert t.kind == "layout"
    assert t.bytes_read == t.bytes_written > 0
    # Q K^T reads K^T, which is K-major: no transpose for it.
    assert "layers.0.attn.sdpa.qk.b_to_kmajor" not in names


def test_bf16_and_other_engines_need_no_operand_transpose():
    g = build_graph("gpt2", seq=256)
    opts = MapOptions(disabled_fusion=("flash_attention", "layout_fold"))
    assert not any(
        k.name.endswith("b_to_kmajor") for k in lower(g, load_hardware("h100-sxm"), opts)
    )
    fp8 = MapOptions(dtype="fp8_e4m3", disabled_fusion=("flash_attention", "layout_fold"))
    assert not any(k.name.endswith("b_to_kmajor") for k in lower(g, load_hardware("mi300x"), fp8))


def test_fused_fp8_attention_transposes_v_in_kernel():
    ks = lower(build_graph("gpt2", seq=256), load_hardware("h100-sxm"), MapOptions(dtype="fp8"))
    sdpa = next(k for k in ks if k.name == "layers.0.attn.sdpa")
    assert any("in-kernel" in n for n in sdpa.notes)
