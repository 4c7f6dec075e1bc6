"""Published model configurations and :func:`build_graph`, the one entry point by name.

Sources of the configurations:

* Llama-2 7B/13B/70B: Hugging Face ``meta-llama/Llama-2-{7b,13b,70b}-hf`` config.json;
  Touvron et al. 2023, arXiv:2307.09288, Table 1 (70B uses GQA with 8 KV heads).
* Llama-3-8B: ``meta-llama/Meta-Llama-3-8B`` config.json (vocab 128,256; 8 KV heads).
* Mistral-7B: ``mistralai/Mistral-7B-v0.1`` config.json; Jiang et al. 2023, arXiv:2310.06825.
  Sliding-window attention (4,096) is not modelled: attention spans the whole context.
* GPT-3 175B: Brown et al. 2020, arXiv:2005.14165, Table 2.1 (96 layers, d 12,288, 96 heads of
  128, context 2,048); GPT-2 BPE vocab 50,257, GELU, LayerNorm, biases, tied embeddings.
* BERT base/large: Devlin et al. 2018, arXiv:1810.04805, and ``bert-base-uncased`` config.json
  (vocab 30,522, 512 positions, 2 token types).
"""

from __future__ import annotations

from workbench.errors import WorkbenchError
from workbench.ir import Graph
from workbench.models.bert import encoder_graph
from workbench.models.config import TransformerConfig
from workbench.models.mlp import mlp_graph
from workbench.models.resnet import resnet50_graph
from workbench.models.transformer import decoder_graph

__all__ = ["PRESETS", "build_graph", "graph_for_config", "list_models"]


def _llama(name: str, d: int, layers: int, heads: int, kv: int, ffn: int, vocab: int, seq: int):
    return TransformerConfig(
        name=name, hidden=d, layers=layers, heads=heads, kv_heads=kv, ffn=ffn, vocab=vocab,
        max_seq=seq,
    )  # fmt: skip


def _gpt(name: str, d: int, layers: int, heads: int, vocab: int, seq: int) -> TransformerConfig:
    return TransformerConfig(
        name=name, hidden=d, layers=layers, heads=heads, ffn=4 * d, vocab=vocab,
        activation="gelu", norm="layernorm", attn_bias=True, mlp_bias=True,
        tied_embeddings=True, position="learned", max_seq=seq,
    )  # fmt: skip


def _bert(name: str, d: int, layers: int, heads: int) -> TransformerConfig:
    return TransformerConfig(
        name=name, hidden=d, layers=layers, heads=heads, ffn=4 * d, vocab=30522,
        activation="gelu", norm="layernorm", attn_bias=True, mlp_bias=True, position="learned",
        max_seq=512, causal=False, post_norm=True, type_vocab=2, pooler=True,
    )  # fmt: skip


#: Transformer presets by name (ResNet-50 and the MLP are built by their own functions).
PRESETS: dict[str, TransformerConfig] = {
    c.name: c
    for c in (
        _llama("llama2-7b", 4096, 32, 32, 32, 11008, 32000, 4096),
        _llama("llama2-13b", 5120, 40, 40, 40, 13824, 32000, 4096),
        _llama("llama2-70b", 8192, 80, 64, 8, 28672, 32000, 4096),
        _llama("llama3-8b", 4096, 32, 32, 8, 14336, 128256, 8192),
        _llama("mistral-7b", 4096, 32, 32, 8, 14336, 32000, 32768),
        _gpt("gpt3-175b", 12288, 96, 96, 50257, 2048),
        _gpt("gpt2", 768, 12, 12, 50257, 1024),
        _bert("bert-base", 768, 12, 12),
        _bert("bert-large", 1024, 24, 16),
    )
}
_OTHER = ("resnet50", "mlp")


def list_models() -> tuple[str, ...]:
    """Names :func:`build_graph` accepts."""
    return (*PRESETS, *_OTHER)


def build_graph(
    model: str,
    phase: str = "prefill",
    batch: int = 1,
    seq: int = 2048,
    context: int | None = None,
    dtype: str = "bf16",
    tensor_parallel: int = 1,
) -> Graph:
    """Build a preset's graph by name.

    Args:
        model: A name from :func:`list_models`.
        phase: ``"prefill"`` or ``"decode"`` for decoders; ignored by encoders, ResNet and MLP.
        batch: Sequences (or images, or rows).
        seq: Prompt tokens (prefill and encoders; BERT is capped at its 512 positions).
        context: Cached tokens for decode (``None``: ``seq``).
        dtype: Activation and weight dtype.
        tensor_parallel: Chips for decoders (see :func:`decoder_graph`).

    Returns:
        The graph.

    Raises:
        WorkbenchError: Unknown model (the message lists the known ones) or bad sizes.

    >>> build_graph("llama2-7b", batch=1, seq=16).params
    6738415616
    """
    if model == "resnet50":
        return resnet50_graph(batch=batch, dtype=dtype)
    if model == "mlp":
        return mlp_graph(batch=batch, dtype=dtype)
    cfg = PRESETS.get(model)
    if cfg is None:
        raise WorkbenchError(f"unknown model {model!r} (known: {', '.join(list_models())})")
    return graph_for_config(cfg, phase, batch, seq, context, dtype, tensor_parallel)


def graph_for_config(
    cfg: TransformerConfig,
    phase: str = "prefill",
    batch: int = 1,
    seq: int = 2048,
    context: int | None = None,
    dtype: str = "bf16",
    tensor_parallel: int = 1,
) -> Graph:
    """The graph of a transformer config: an encoder's forward, or a decoder's prefill/decode.

    Args are those of :func:`build_graph` (``phase`` and ``tensor_parallel`` apply to decoders).
    """
    if not cfg.causal:
        return encoder_graph(cfg, batch=batch, seq=seq, dtype=dtype)
    if phase == "decode" and context is None:
        context = seq
    return decoder_graph(
        cfg, phase, batch=batch, seq=seq, context=context, dtype=dtype,
        tensor_parallel=tensor_parallel,
    )  # fmt: skip
