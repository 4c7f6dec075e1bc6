"""Encoder (BERT) graphs: bidirectional attention, post-norm blocks, pooler.

Embeddings (word + learned position + token type, summed, then LayerNorm) feed ``layers``
post-norm blocks with biased projections and a GELU MLP; the pooler is a dense layer with tanh on
the first (``[CLS]``) token.
"""

from __future__ import annotations

from dataclasses import replace

from workbench.errors import WorkbenchError
from workbench.ir import Graph, Slice
from workbench.models._blocks import Stack, block_ops, shard
from workbench.models.config import TransformerConfig
from workbench.models.transformer import _check_positive, _embed

__all__ = ["encoder_graph"]


def encoder_graph(
    cfg: TransformerConfig, batch: int = 1, seq: int = 128, dtype: str = "bf16"
) -> Graph:
    """Build the forward graph of an encoder such as BERT.

    Args:
        cfg: Architecture (``causal`` is ignored: attention is bidirectional, no KV cache).
        batch: Sequences.
        seq: Tokens per sequence (at most ``cfg.max_seq`` with learned positions).
        dtype: Activation and weight dtype.

    Returns:
        The graph; ``graph.meta`` holds model, phase (``"encode"``), batch, seq and dtype.

    >>> from workbench.models.presets import PRESETS
    >>> encoder_graph(PRESETS["bert-base"], batch=1, seq=128).params
    109482240
    """
    cfg = replace(cfg, causal=False)
    _check_positive(cfg, "batch", batch)
    _check_positive(cfg, "seq", seq)
    if cfg.position == "learned" and seq > cfg.max_seq:
        raise WorkbenchError(
            f"model {cfg.name!r}: seq={seq} exceeds its {cfg.max_seq} learned positions"
        )
    sh = shard(cfg, 1)
    st = Stack(dtype=dtype, ops=[])
    tokens = (batch, seq)
    shape = (batch, seq, cfg.hidden)
    x = _embed(st, cfg, sh, tokens)
    x = st.norm(cfg.norm, "embed_norm", x, shape)
    attn = {"q_len": seq, "kv_len": seq, "causal": False, "kv_cache": False}
    for i in range(cfg.layers):
        x = block_ops(st, cfg, sh, i, x, tokens, attn)
    if cfg.pooler:
        cls = st.add(
            Slice(name="pooler.cls", inputs=(x,), shape=shape, axis=1, start=0, stop=1, dtype=dtype)
        )
        d = cfg.hidden
        y = st.linear("pooler.dense", cls, (batch, 1), d, d, bias=True, layer_type="mlp")
        st.ew("pooler.act", "tanh", (y,), (batch, 1, d), "mlp")
    meta = (
        ("model", cfg.name),
        ("phase", "encode"),
        ("batch", batch),
        ("seq", seq),
        ("context", None),
        ("dtype", dtype),
        ("tensor_parallel", 1),
    )
    return Graph(name=f"{cfg.name} encode b{batch} s{seq}", ops=tuple(st.ops), meta=meta)
