"""Hugging Face ``config.json`` -> transformer graph (Llama, Mistral, GPT-2, BERT families).

Only the architecture fields are read; weights are never needed. Sliding-window attention
(Mistral) and RoPE scaling do not change the FLOP or byte counts modelled here and are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from workbench._files import read_text_bounded
from workbench._format import fmt_cut
from workbench.errors import IngestError, WorkbenchError
from workbench.ir import Graph
from workbench.models.bert import encoder_graph
from workbench.models.config import TransformerConfig
from workbench.models.transformer import decoder_graph

__all__ = ["config_from_hf", "from_hf_config"]

#: Largest config.json read, bytes (real ones are a few KiB).
MAX_CONFIG_BYTES = 16 * 2**20

_FAMILIES = {"llama": "llama", "mistral": "llama", "gpt2": "gpt2", "bert": "bert"}
_ARCHS = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "GPT2LMHeadModel": "gpt2",
    "GPT2Model": "gpt2",
    "BertModel": "bert",
    "BertForMaskedLM": "bert",
    "BertForPreTraining": "bert",
}


def _short(value: object, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters (hostile values can be huge)."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        text = f"<{type(value).__name__}>"
    return fmt_cut(" ".join(text.split()), limit)


class _Fields:
    """Typed access to a config dict; errors name the source and the key."""

    def __init__(self, data: Mapping[str, object], source: str) -> None:
        self.data, self.source = data, source

    def int(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key)
        value = default if value is None else value
        if value is None:
            raise IngestError(f"{self.source}: missing key {key!r}")
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise IngestError(
                f"{self.source}: key {key!r} must be a positive integer, got {_short(value)}"
            )
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise IngestError(
                f"{self.source}: key {key!r} must be true or false, got {_short(value)}"
            )
        return value

    def act(self, key: str, default: str) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise IngestError(f"{self.source}: key {key!r} must be a string, got {_short(value)}")
        if value in ("silu", "swish"):
            return "swiglu"
        if value.startswith("gelu"):
            return "gelu"
        if value == "relu":
            return "relu"
        raise IngestError(f"{self.source}: key {key!r} has unsupported activation {_short(value)}")


def _load(path_or_dict: str | Path | Mapping[str, object]) -> tuple[Mapping[str, object], str]:
    if isinstance(path_or_dict, Mapping):
        return path_or_dict, "config"
    path = Path(path_or_dict)
    try:
        text = read_text_bounded(path, MAX_CONFIG_BYTES, "config")
    except WorkbenchError as exc:
        raise IngestError(str(exc)) from None
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, >4300-digit integers
        raise IngestError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise IngestError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise IngestError(f"{path}: expected a JSON object at the top level")
    return data, str(path)


def _family(f: _Fields) -> str:
    archs = f.data.get("architectures") or ()
    if not isinstance(archs, list | tuple) or not all(isinstance(a, str) for a in archs):
        raise IngestError(
            f"{f.source}: key 'architectures' must be a list of names, got {_short(archs)}"
        )
    if isinstance(archs, list):
        for arch in archs:
            if isinstance(arch, str) and arch in _ARCHS:
                return _ARCHS[arch]
    model_type = f.data.get("model_type")
    if isinstance(model_type, str) and model_type in _FAMILIES:
        return _FAMILIES[model_type]
    if model_type is None and not archs:
        raise IngestError(f"{f.source}: missing key 'model_type' (or 'architectures')")
    known = ", ".join(sorted(_FAMILIES))
    raise IngestError(f"{f.source}: key 'model_type' is {_short(model_type)}; supported: {known}")


def config_from_hf(
    path_or_dict: str | Path | Mapping[str, object], name: str = ""
) -> TransformerConfig:
    """Read a Hugging Face ``config.json`` (path or parsed dict) into a :class:`TransformerConfig`.

    Raises:
        IngestError: One line naming the file and the missing or bad key.
    """
    data, source = _load(path_or_dict)
    try:
        return _config(_Fields(data, source), name)
    except IngestError:
        raise
    except WorkbenchError as exc:  # TransformerConfig's checks: name the file too
        raise IngestError(f"{source}: {exc}") from None


def _config(f: _Fields, name: str) -> TransformerConfig:
    data, source = f.data, f.source
    family = _family(f)
    name = name or str(data.get("_name_or_path") or Path(source).parent.name or family)
    if family == "llama":
        hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
        return TransformerConfig(
            name=name, hidden=hidden, layers=f.int("num_hidden_layers"), heads=heads,
            kv_heads=f.int("num_key_value_heads", heads),
            head_dim=f.int("head_dim") if data.get("head_dim") is not None else 0,
            ffn=f.int("intermediate_size"), vocab=f.int("vocab_size"),
            activation=f.act("hidden_act", "silu"),
            tied_embeddings=f.flag("tie_word_embeddings", False),
            max_seq=f.int("max_position_embeddings", 4096),
        )  # fmt: skip
    if family == "gpt2":
        d = f.int("n_embd")
        return TransformerConfig(
            name=name, hidden=d, layers=f.int("n_layer"), heads=f.int("n_head"),
            ffn=f.int("n_inner", 4 * d), vocab=f.int("vocab_size"),
            activation=f.act("activation_function", "gelu_new"), norm="layernorm",
            attn_bias=True, mlp_bias=True, tied_embeddings=f.flag("tie_word_embeddings", True),
            position="learned", max_seq=f.int("n_positions"),
        )  # fmt: skip
    return TransformerConfig(
        name=name, hidden=f.int("hidden_size"), layers=f.int("num_hidden_layers"),
        heads=f.int("num_attention_heads"), ffn=f.int("intermediate_size"),
        vocab=f.int("vocab_size"), activation=f.act("hidden_act", "gelu"), norm="layernorm",
        attn_bias=True, mlp_bias=True, position="learned",
        max_seq=f.int("max_position_embeddings"), causal=False, post_norm=True,
        type_vocab=f.int("type_vocab_size", 2), pooler=True,
    )  # fmt: skip


def from_hf_config(
    path_or_dict: str | Path | Mapping[str, object],
    phase: str = "prefill",
    batch: int = 1,
    seq: int | None = 2048,
    context: int | None = None,
    dtype: str = "bf16",
    tensor_parallel: int = 1,
) -> Graph:
    """Build a graph from a Hugging Face ``config.json``.

    Args:
        path_or_dict: Path to ``config.json`` or its parsed contents.
        phase: ``"prefill"`` or ``"decode"`` (decoders; BERT always encodes).
        batch: Sequences.
        seq: Prompt tokens (prefill, encoders).
        context: Cached tokens (decode; ``None``: ``seq``).
        dtype: Activation and weight dtype.
        tensor_parallel: Chips (decoders).

    Returns:
        The graph.

    Raises:
        IngestError: Unreadable file, missing or bad key (the message names both).

    >>> cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    ...        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}
    >>> from_hf_config(cfg, seq=8).meta_dict()["phase"]
    'prefill'
    """
    cfg = config_from_hf(path_or_dict)
    if not cfg.causal:
        return encoder_graph(cfg, batch=batch, seq=seq or 128, dtype=dtype)
    if phase == "decode" and context is None:
        context = seq
    return decoder_graph(
        cfg, phase, batch=batch, seq=seq, context=context, dtype=dtype,
        tensor_parallel=tensor_parallel,
    )  # fmt: skip
