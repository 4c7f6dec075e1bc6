"""Published model figures, each with its source, recomputed from the graphs the zoo builds."""

from dataclasses import replace

import pytest

from workbench.ir import Attention, Conv2d, Embedding, Linear
from workbench.models import (
    PRESETS,
    TransformerConfig,
    build_graph,
    decoder_graph,
    encoder_graph,
    resnet50_graph,
)


# --- parameter counts ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "params"),
    [
        # Touvron et al. 2023 (arXiv:2307.09288) "7B"; exact count of meta-llama/Llama-2-7b-hf
        ("llama2-7b", 6_738_415_616),
        # same paper "13B"; exact count of meta-llama/Llama-2-13b-hf
        ("llama2-13b", 13_015_864_320),
        # same paper "70B" (GQA, 8 KV heads); exact count of meta-llama/Llama-2-70b-hf
        ("llama2-70b", 68_976_648_192),
        # Meta Llama 3 model card "8B"; exact count of meta-llama/Meta-Llama-3-8B: 8,030,261,248
        ("llama3-8b", 8_030_261_248),
        # Jiang et al. 2023 (arXiv:2310.06825) "7.3B"; exact count of mistralai/Mistral-7B-v0.1
        ("mistral-7b", 7_241_732_096),
        # Devlin et al. 2018 "110M"; exact count of bert-base-uncased BertModel (with pooler)
        ("bert-base", 109_482_240),
        # Devlin et al. 2018 "340M"; exact count of bert-large-uncased BertModel
        ("bert-large", 335_141_888),
        # torchvision resnet50 docs: num_params 25,557,032 (conv + fc + BatchNorm gamma/beta)
        ("resnet50", 25_557_032),
    ],
)
def test_exact_parameter_counts(model, params):
    assert build_graph(model, seq=128).params == params


def test_gpt3_175b_params_within_1_percent():
    # Brown et al. 2020 (arXiv:2005.14165) Table 2.1: 175.0B; Table D.1 uses N = 174.6B
    params = build_graph("gpt3-175b", seq=2048).params
    assert params == pytest.approx(175e9, rel=0.01)
    assert params == pytest.approx(174.6e9, rel=0.001)


def test_bert_base_about_110m():
    # Devlin et al. 2018 (arXiv:1810.04805) section 3: BERT-BASE total parameters = 110M
    assert build_graph("bert-base", seq=128).params == pytest.approx(110e6, rel=0.01)


def test_resnet50_conv_fc_params_without_bn():
    # torchvision count 25,557,032 minus BatchNorm gamma/beta (2 x 26,560) = 25,503,912
    g = resnet50_graph()
    assert sum(op.params for op in g.ops if isinstance(op, Conv2d | Linear)) == 25_503_912


# --- ResNet-50 MACs --------------------------------------------------------------------------
def test_resnet50_macs_224():
    # torchvision resnet50 docs: "GFLOPS 4.09" (multiply-accumulates); exact conv+fc sum
    # 4,089,184,256 (v1.5, stride on the 3x3)
    g = resnet50_graph(batch=1, image=224)
    convs = [op for op in g.ops if isinstance(op, Conv2d)]
    macs = sum(op.macs for op in convs) + g.op("fc").matmul_flops // 2
    assert macs == 4_089_184_256
    assert g.matmul_flops == 2 * 4_089_184_256
    # per stage (recount of the torchvision layer table)
    stages = {"stem": 0, "layer1": 0, "layer2": 0, "layer3": 0, "layer4": 0}
    for op in convs:
        stages[op.name.split(".")[0]] += op.macs
    assert stages == {
        "stem": 118_013_952, "layer1": 667_942_912, "layer2": 1_027_604_480,
        "layer3": 1_464_336_384, "layer4": 809_238_528,
    }  # fmt: skip


# --- training FLOPs per token: PaLM (Chowdhery et al. 2022, arXiv:2204.02311) Appendix B ------
# model FLOPs per token = 6N + 12*L*H*Q*T. 6N = 3 x (2N forward matmul FLOPs); 12LHQT = 3 x the
# 4LHQT forward attention FLOPs (QK^T and PV) *without* causal halving. So we build the graph
# with causal=False and take 3 x forward matmul FLOPs per token. N here is every weight a token
# multiplies by: all parameters except lookup-only tables (untied token embeddings, positions);
# PaLM's own N counts its shared input/output embedding once, which is the same rule.
PALM_540B = TransformerConfig(  # PaLM paper Table 1: 118 layers, d 18432, 48 heads of 256, MQA
    name="palm-540b", hidden=18432, layers=118, heads=48, kv_heads=1, head_dim=256,
    ffn=73728, vocab=256000, tied_embeddings=True, max_seq=2048,
)  # fmt: skip


def _palm_check(cfg: TransformerConfig, seq: int) -> tuple[float, float]:
    g = decoder_graph(replace(cfg, causal=False), "prefill", batch=1, seq=seq)
    lookup = sum(
        op.params
        for op in g.ops
        if isinstance(op, Embedding) and not (op.name == "embed_tokens" and cfg.tied_embeddings)
    )
    n = g.params - lookup
    palm = 6 * n + 12 * cfg.layers * cfg.heads * cfg.head_dim * seq
    return 3 * g.matmul_flops / seq, palm


@pytest.mark.parametrize("model", ["llama2-7b", "llama3-8b", "gpt3-175b"])
def test_training_flops_per_token_match_palm_formula(model):
    ours, palm = _palm_check(PRESETS[model], 2048)
    assert ours == pytest.approx(palm, rel=0.01)


def test_palm_540b_flops_per_token():
    # PaLM: N = 540.35e9, L=118, H=48, Q=256, T=2048 -> 3.2777e12 FLOP/token (our re-derivation
    # of Appendix B, which gives MFU 46.2% with Table 3's throughput)
    ours, palm = _palm_check(PALM_540B, 2048)
    assert ours == pytest.approx(palm, rel=0.01)
    assert ours == pytest.approx(6 * 540.35e9 + 12 * 118 * 48 * 256 * 2048, rel=0.01)


def test_bert_base_forward_flops_per_sequence():
    # TinyBERT (Jiao et al. 2019, arXiv:1909.10351) Table 1: BERT-BASE 22.5B FLOPs per
    # 128-token input; exact weight-matmul + attention count 22,347,251,712 (no pooler)
    g = encoder_graph(PRESETS["bert-base"], batch=1, seq=128)
    flops = g.matmul_flops - g.op("pooler.dense").matmul_flops
    assert flops == 22_347_251_712
    assert flops == pytest.approx(22.5e9, rel=0.01)


# --- KV cache --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "per_token"),
    # 2 (K and V) x layers x kv_heads x head_dim x 2 bytes (bf16): Llama-2-7B 32 KV heads,
    # Llama-3-8B 8 KV heads (GQA); HF config.json of each model
    [("llama2-7b", 524_288), ("llama3-8b", 131_072)],
)
def test_kv_cache_bytes_per_token_from_decode_graph(model, per_token):
    batch, context = 2, 1000
    g = build_graph(model, phase="decode", batch=batch, context=context, dtype="bf16")
    attns = [op for op in g.ops if isinstance(op, Attention)]
    cache = sum(t.nbytes for op in attns for t in op.weight_tensors())
    assert cache == per_token * batch * context
    appended = sum(op.bytes_written - op.output_tensor().nbytes for op in attns)
    assert appended == per_token * batch  # one new token per sequence


def test_palm_540b_mfu_from_its_published_throughput():
    # PaLM Table 3 / section 4: 238.3K tokens/s on 6144 TPU v4 chips (275 TFLOP/s bf16 each,
    # Cloud TPU v4 docs) is 46.2% MFU with self-attention FLOPs counted.
    from workbench.models import training_flops_per_token, training_mfu

    per_token = training_flops_per_token(PALM_540B, 2048)
    assert per_token == pytest.approx(3.2777e12, rel=0.01)  # computed_refs.json 'palm'
    assert training_mfu(per_token, 238.3e3, 6144, 275e12) == pytest.approx(0.462, abs=0.005)
