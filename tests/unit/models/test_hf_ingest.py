import json

import pytest

from workbench.errors import IngestError
from workbench.models import config_from_hf, from_hf_config

# Architecture fields copied from the published config.json files on the Hugging Face hub.
LLAMA2_7B = {  # meta-llama/Llama-2-7b-hf
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 32, "vocab_size": 32000, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False, "max_position_embeddings": 4096, "hidden_act": "silu",
}  # fmt: skip
MISTRAL_7B = {  # mistralai/Mistral-7B-v0.1
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "sliding_window": 4096,
    "max_position_embeddings": 32768, "hidden_act": "silu", "tie_word_embeddings": False,
}  # fmt: skip
GPT2 = {  # openai-community/gpt2
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_layer": 12,
    "n_head": 12, "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257,
    "activation_function": "gelu_new", "n_inner": None,
}  # fmt: skip
BERT = {  # google-bert/bert-base-uncased
    "architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768,
    "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
    "hidden_act": "gelu",
}  # fmt: skip


def test_llama_config_file_gives_published_params(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA2_7B))
    g = from_hf_config(path, phase="prefill", batch=1, seq=16)
    assert g.params == 6_738_415_616  # Llama-2-7B, 6.74B (Touvron et al. 2023, Table 1)
    d = from_hf_config(path, phase="decode", batch=2, context=100)
    assert d.op("layers.0.attn.sdpa").kv_len == 101


def test_mistral_gqa_and_head_dim_override():
    cfg = config_from_hf(MISTRAL_7B)
    assert (cfg.kv_heads, cfg.head_dim, cfg.ffn) == (8, 128, 14336)
    assert from_hf_config(MISTRAL_7B, seq=8).params == 7_241_732_096  # Mistral-7B: 7.24B
    cfg = config_from_hf({**MISTRAL_7B, "head_dim": 64})
    assert cfg.head_dim == 64


def test_gpt2_tied_learned_positions():
    cfg = config_from_hf(GPT2)
    assert (cfg.ffn, cfg.activation, cfg.norm, cfg.position) == (
        3072,
        "gelu",
        "layernorm",
        "learned",
    )
    assert cfg.tied_embeddings
    # GPT-2 small: 124,439,808 parameters (Hugging Face model card "124M"; tied LM head)
    assert from_hf_config(GPT2, seq=1024).params == 124_439_808


def test_bert_encoder():
    g = from_hf_config(BERT, seq=128)
    assert g.meta_dict()["phase"] == "encode"
    assert g.params == 109_482_240


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": None}, r"config.json: missing key 'hidden_size'"),
        ({"num_hidden_layers": "32"}, r"config.json: key 'num_hidden_layers' must be a positive"),
        ({"num_attention_heads": -1}, r"key 'num_attention_heads' must be a positive integer"),
        ({"tie_word_embeddings": "no"}, r"key 'tie_word_embeddings' must be true or false"),
        ({"hidden_act": "mish"}, r"key 'hidden_act' has unsupported activation 'mish'"),
        ({"model_type": "t5", "architectures": ["T5Model"]}, r"key 'model_type' is 't5'"),
        ({"model_type": None, "architectures": None}, r"missing key 'model_type'"),
    ],
)
def test_bad_fields_name_file_and_key(tmp_path, change, message):
    data = {k: v for k, v in {**LLAMA2_7B, **change}.items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(IngestError, match=message) as info:
        from_hf_config(path)
    assert "\n" not in str(info.value)


def test_unreadable_and_invalid_json(tmp_path):
    with pytest.raises(IngestError, match=r"missing\.json: (no such file|file not found)"):
        from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(IngestError, match=r"config\.json: not valid JSON"):
        from_hf_config(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(IngestError, match="expected a JSON object"):
        from_hf_config(bad)
