"""Decoder-only transformer graphs (Llama, Mistral, GPT) for prefill and decode.

Per block (pre-norm)::

    h = norm(x); q, k, v = h @ Wq, h @ Wk, h @ Wv; q, k = rope(q), rope(k)
    a = attention(q, k, v, cache); x = x + all_reduce(a @ Wo)
    h = norm(x); x = x + all_reduce(down(act(gate(h), up(h))))

Prefill ``(batch, seq)`` runs attention with ``q_len = kv_len = seq`` and writes the KV cache;
decode ``(batch, context)`` runs one new token per sequence: ``q_len = 1``,
``kv_len = context + 1``, reading ``context`` cached tokens and appending one.
"""

from __future__ import annotations

from workbench.errors import WorkbenchError
from workbench.ir import Embedding, Graph, Slice
from workbench.models._blocks import Shard, Stack, block_ops, shard
from workbench.models.config import TransformerConfig

__all__ = ["decoder_graph"]

PHASES = ("prefill", "decode")


def decoder_graph(
    cfg: TransformerConfig,
    phase: str = "prefill",
    batch: int = 1,
    seq: int | None = None,
    context: int | None = None,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    tensor_parallel: int = 1,
    lm_head: bool = True,
    all_logits: bool = True,
) -> Graph:
    """Build the operator graph of one forward step of a decoder-only transformer (one chip).

    Args:
        cfg: Architecture.
        phase: ``"prefill"`` (needs ``seq``) or ``"decode"`` (needs ``context``).
        batch: Sequences processed together.
        seq: Prompt length in tokens (prefill).
        context: Tokens already in the KV cache (decode); one new token is appended.
        dtype: Activation dtype.
        weight_dtype: Weight storage dtype (``None``: ``dtype``), e.g. ``"int4"``.
        kv_dtype: KV-cache storage dtype (``None``: ``dtype``).
        tensor_parallel: Chips N; heads, KV heads (at least 1 per chip), ffn and vocab are
            split N ways and an AllReduce follows each o_proj and down_proj.
        lm_head: Include the final norm and the LM head.
        all_logits: In prefill, compute logits for every token (``True``) or only the last.

    Returns:
        The graph of one chip's share of the step; ``graph.meta`` holds model, phase, batch,
        seq, context, dtype and tensor_parallel.

    >>> from workbench.models.presets import PRESETS
    >>> g = decoder_graph(PRESETS["llama2-7b"], "decode", batch=1, context=100)
    >>> g.op("layers.0.attn.sdpa").kv_len
    101
    """
    q_len, kv_len = _lengths(cfg, phase, batch, seq, context)
    sh = shard(cfg, tensor_parallel)
    st = Stack(dtype=dtype, weight_dtype=weight_dtype, ops=[])
    tokens = (batch, q_len)
    x = _embed(st, cfg, sh, tokens)
    attn = {
        "q_len": q_len,
        "kv_len": kv_len,
        "causal": cfg.causal,
        "kv_cache": True,
        "kv_dtype": kv_dtype,
    }
    for i in range(cfg.layers):
        x = block_ops(st, cfg, sh, i, x, tokens, attn)
    if lm_head:
        _head(st, cfg, sh, x, tokens, all_logits or phase == "decode")
    label = f"s{seq}" if phase == "prefill" else f"c{context}"
    meta: tuple[tuple[str, object], ...] = (
        ("model", cfg.name),
        ("phase", phase),
        ("batch", batch),
        ("seq", seq if phase == "prefill" else None),
        ("context", context if phase == "decode" else None),
        ("dtype", dtype),
        ("tensor_parallel", tensor_parallel),
    )
    if sh.padding:
        meta = (*meta, ("tensor_parallel_padding", sh.padding))
    return Graph(name=f"{cfg.name} {phase} b{batch} {label}", ops=tuple(st.ops), meta=meta)


def _lengths(
    cfg: TransformerConfig, phase: str, batch: int, seq: int | None, context: int | None
) -> tuple[int, int]:
    """Return ``(q_len, kv_len)`` for the phase, checking the sizes."""
    if phase not in PHASES:
        raise WorkbenchError(f"model {cfg.name!r}: phase must be prefill or decode, got {phase!r}")
    _check_positive(cfg, "batch", batch)
    if phase == "prefill":
        _check_positive(cfg, "seq", seq)
        q_len = kv_len = int(seq)  # type: ignore[arg-type]
    else:
        _check_positive(cfg, "context", context)
        q_len, kv_len = 1, int(context) + 1  # type: ignore[arg-type]
    if cfg.position == "learned" and kv_len > cfg.max_seq:
        raise WorkbenchError(
            f"model {cfg.name!r}: {kv_len} tokens exceed its {cfg.max_seq} learned positions"
        )
    return q_len, kv_len


def _check_positive(cfg: TransformerConfig, key: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise WorkbenchError(f"model {cfg.name!r}: {key} must be a positive integer, got {value!r}")


def _embed(st: Stack, cfg: TransformerConfig, sh: Shard, tokens: tuple[int, int]) -> str:
    """Token (vocab-parallel), learned-position and token-type embeddings, summed."""
    shape = (*tokens, cfg.hidden)
    x = st.add(
        Embedding(
            name="embed_tokens", tokens=tokens, vocab=sh.vocab, dim=cfg.hidden, dtype=st.dtype
        )
    )
    x = st.all_reduce("embed_tokens.all_reduce", x, shape, sh.chips)
    extra = []
    if cfg.position == "learned":
        extra.append(("embed_positions", cfg.max_seq))
    if cfg.type_vocab:
        extra.append(("embed_token_types", cfg.type_vocab))
    for name, rows in extra:
        e = st.add(Embedding(name=name, tokens=tokens, vocab=rows, dim=cfg.hidden, dtype=st.dtype))
        x = st.ew(f"{name}.add", "add", (x, e), shape, "embedding")
    return x


def _head(
    st: Stack, cfg: TransformerConfig, sh: Shard, x: str, tokens: tuple[int, int], every: bool
) -> str:
    """Final norm and LM head (logits for every token or, via a Slice, the last one)."""
    x = st.norm(cfg.norm, "final_norm", x, (*tokens, cfg.hidden))
    if not every and tokens[1] > 1:
        x = st.add(
            Slice(
                name="last_token",
                inputs=(x,),
                shape=(*tokens, cfg.hidden),
                axis=1,
                start=tokens[1] - 1,
                stop=tokens[1],
                dtype=st.dtype,
            )
        )
        tokens = (tokens[0], 1)
    return st.linear(
        "lm_head",
        x,
        tokens,
        cfg.hidden,
        sh.vocab,
        layer_type="embedding",
        tied_weight=cfg.tied_embeddings,
    )
