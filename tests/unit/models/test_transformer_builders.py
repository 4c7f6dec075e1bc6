from dataclasses import replace

import pytest

from workbench.errors import WorkbenchError
from workbench.ir import AllReduce, Attention, Linear
from workbench.models import PRESETS, TransformerConfig, build_graph, decoder_graph, list_models

TINY = TransformerConfig(name="tiny", hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=100)


def test_decoder_prefill_block_ops_and_names():
    g = decoder_graph(TINY, "prefill", batch=2, seq=8)
    names = [op.name for op in g.ops]
    assert names[0] == "embed_tokens"
    block = [n.removeprefix("layers.0.") for n in names if n.startswith("layers.0.")]
    assert block == [
        "attn_norm", "attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.q_rope", "attn.k_rope",
        "attn.sdpa", "attn.o_proj", "attn_residual", "mlp_norm", "mlp.gate_proj", "mlp.up_proj",
        "mlp.act", "mlp.down_proj", "mlp_residual",
    ]  # fmt: skip
    assert names[-2:] == ["final_norm", "lm_head"]
    assert g.op("layers.0.attn.k_proj").out_features == 2 * 16  # GQA: kv_heads * head_dim
    assert g.op("layers.1.attn.q_proj").layer_type == "attention"
    assert g.op("layers.1.mlp.act").op == "swiglu"
    assert g.op("lm_head").layer_type == "embedding"
    assert g.op("lm_head").tokens == (2, 8)
    attn = g.op("layers.0.attn.sdpa")
    assert (attn.q_len, attn.kv_len, attn.causal, attn.kv_cache) == (8, 8, True, True)
    assert attn.weight_tensors() == ()  # nothing cached yet: prefill reads no cache
    assert g.meta_dict() == {
        "model": "tiny", "phase": "prefill", "batch": 2, "seq": 8, "context": None,
        "dtype": "bf16", "tensor_parallel": 1,
    }  # fmt: skip


def test_decoder_decode_reads_context_and_appends_one():
    g = decoder_graph(TINY, "decode", batch=3, context=10, kv_dtype="fp8")
    attn = g.op("layers.1.attn.sdpa")
    assert (attn.q_len, attn.kv_len) == (1, 11)
    (cache,) = attn.weight_tensors()
    assert cache.shape == (2, 3, 10, 2 * 16)
    assert cache.dtype == "fp8_e4m3"
    # output (bf16) + appended k and v of one token (fp8, 1 byte each)
    assert attn.bytes_written == 3 * 1 * 64 * 2 + 2 * 3 * 1 * 32
    assert g.op("lm_head").tokens == (3, 1)
    assert g.name == "tiny decode b3 c10"


def test_prefill_last_logits_only_slices_last_token():
    g = decoder_graph(TINY, "prefill", batch=2, seq=8, all_logits=False)
    last = g.op("last_token")
    assert last.output_shape() == (2, 1, 64)
    assert g.op("lm_head").tokens == (2, 1)
    full = decoder_graph(TINY, "prefill", batch=2, seq=8)
    assert full.matmul_flops - g.matmul_flops == 2 * 2 * 7 * 64 * 100


def test_weight_dtype_and_no_lm_head():
    g = decoder_graph(TINY, "prefill", batch=1, seq=4, weight_dtype="int4", lm_head=False)
    assert g.ops[-1].name == "layers.1.mlp_residual"
    q = g.op("layers.0.attn.q_proj")
    assert q.weight_tensors()[0].dtype == "int4"


def test_tensor_parallel_splits_and_inserts_all_reduce():
    cfg = replace(TINY, heads=8, kv_heads=2, vocab=101)
    g = decoder_graph(cfg, "prefill", batch=1, seq=4, tensor_parallel=4)
    assert g.op("layers.0.attn.sdpa").heads == 2
    assert g.op("layers.0.attn.sdpa").kv_heads == 1  # 2 KV heads over 4 chips: replicated
    assert g.op("layers.0.mlp.up_proj").out_features == 32
    assert g.op("lm_head").out_features == 26  # ceil(101 / 4): padded vocab
    ar = [op for op in g.ops if isinstance(op, AllReduce)]
    assert [op.name for op in ar[:3]] == [
        "embed_tokens.all_reduce", "layers.0.attn.all_reduce", "layers.0.mlp.all_reduce",
    ]  # fmt: skip
    assert all(op.chips == 4 and op.layer_type == "collective" for op in ar)
    assert g.consumers("layers.0.attn.all_reduce")[0].name == "layers.0.attn_residual"
    assert g.meta_dict()["tensor_parallel"] == 4


def test_tensor_parallel_pads_uneven_heads_and_says_so():
    # 4 heads over 3 chips: each chip holds 2 (one padded, zero work that still costs time).
    g = decoder_graph(TINY, "prefill", seq=4, tensor_parallel=3)
    assert g.op("layers.0.attn.sdpa").heads == 2
    assert "heads 4 -> 6 (2 per chip)" in g.meta_dict()["tensor_parallel_padding"]
    assert "tensor_parallel_padding" not in decoder_graph(TINY, "prefill", seq=4).meta_dict()


def test_gelu_mlp_learned_positions_tied_head():
    cfg = replace(
        TINY, kv_heads=4, activation="gelu", norm="layernorm", position="learned", max_seq=16,
        tied_embeddings=True, attn_bias=True, mlp_bias=True,
    )  # fmt: skip
    g = decoder_graph(cfg, "prefill", batch=1, seq=8)
    assert g.op("embed_positions").vocab == 16
    assert g.op("layers.0.mlp.act").op == "gelu"
    assert "layers.0.mlp.gate_proj" not in {op.name for op in g.ops}
    assert "layers.0.attn.q_rope" not in {op.name for op in g.ops}
    assert g.op("lm_head").params == 0  # tied to embed_tokens
    with pytest.raises(WorkbenchError, match="17 tokens exceed its 16 learned positions"):
        decoder_graph(cfg, "decode", context=16)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"phase": "train", "seq": 4}, "phase must be prefill or decode"),
        ({"phase": "prefill"}, "seq must be a positive integer"),
        ({"phase": "decode"}, "context must be a positive integer"),
        ({"phase": "prefill", "seq": 4, "batch": 0}, "batch must be a positive integer"),
    ],
)
def test_decoder_bad_sizes(kwargs, message):
    with pytest.raises(WorkbenchError, match=message):
        decoder_graph(TINY, **kwargs)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("hidden", 0, "hidden must be > 0"),
        ("kv_heads", 3, "heads=4 must be a multiple of kv_heads=3"),
        ("activation", "tanh", "activation must be one of swiglu, gelu, relu"),
        ("norm", "batchnorm", "norm must be one of"),
        ("position", "alibi", "position must be one of"),
    ],
)
def test_config_validation(field, value, message):
    with pytest.raises(WorkbenchError, match=message):
        replace(TINY, **{field: value})


def test_build_graph_unknown_model_lists_known():
    with pytest.raises(WorkbenchError, match=r"unknown model 'llama9'.*llama2-7b.*resnet50"):
        build_graph("llama9")


def test_list_models_covers_presets():
    names = list_models()
    for name in ("llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "mistral-7b", "gpt3-175b",
                 "bert-base", "bert-large", "resnet50", "mlp"):  # fmt: skip
        assert name in names


def test_build_graph_decode_defaults_context_to_seq():
    g = build_graph("llama2-7b", phase="decode", seq=64)
    assert g.op("layers.0.attn.sdpa").kv_len == 65
    assert isinstance(g.op("layers.0.attn.sdpa"), Attention)


def test_build_graph_encoder_and_resnet_and_mlp():
    assert build_graph("bert-base", seq=32).meta_dict()["phase"] == "encode"
    assert build_graph("resnet50", batch=2).meta_dict()["batch"] == 2
    g = build_graph("mlp", batch=8)
    assert isinstance(g.op("fc0"), Linear)


def test_presets_are_published_shapes():
    p = PRESETS
    assert (p["llama2-70b"].hidden, p["llama2-70b"].kv_heads, p["llama2-70b"].ffn) == (
        8192,
        8,
        28672,
    )
    assert (p["llama3-8b"].vocab, p["llama3-8b"].kv_heads) == (128256, 8)
    assert (p["mistral-7b"].ffn, p["mistral-7b"].kv_heads) == (14336, 8)
    assert (p["gpt3-175b"].head_dim, p["gpt3-175b"].max_seq) == (128, 2048)
    assert (p["bert-large"].hidden, p["bert-large"].layers, p["bert-large"].heads) == (1024, 24, 16)
