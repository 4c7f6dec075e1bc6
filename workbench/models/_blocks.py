"""Shared pieces of the transformer builders: a small op accumulator and one block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.ir import (
    AllReduce,
    Attention,
    Elementwise,
    LayerNorm,
    Linear,
    Op,
    RMSNorm,
)
from workbench.models.config import TransformerConfig, chips_problem

__all__ = ["Shard", "Stack", "block_ops", "shard"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shard:
    """Per-chip sizes under tensor parallelism (Megatron-style column/row splits).

    Attributes:
        chips: Tensor-parallel degree N.
        heads, kv_heads: Heads held by one chip (KV heads replicated when fewer than N).
        ffn: MLP width per chip.
        vocab: Vocabulary rows per chip (padded up to a multiple of N, as Megatron does).
        padding: What was padded to split evenly (heads, KV heads or ffn not divisible by N:
            each chip holds the rounded-up share, the last chip's extra rows are zeros that
            cost time), or "" when everything divides.
    """

    chips: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    padding: str = ""


def shard(cfg: TransformerConfig, chips: int) -> Shard:
    """Split ``cfg`` over ``chips`` devices, padding what does not divide evenly (and saying so).

    Heads, KV heads (when there are at least N) and the MLP width are split N ways; a size not
    divisible by N is padded up (each chip holds the rounded-up share; the padded rows are zeros
    that still cost time, and the busiest chip bounds the step), recorded in ``padding``.

    >>> from workbench.models.presets import PRESETS
    >>> for part in shard(PRESETS["llama2-7b"], 3).padding.split(", "):
    ...     print(part)
    heads 32 -> 33 (11 per chip)
    kv_heads 32 -> 33 (11 per chip)
    ffn 11008 -> 11010 (3670 per chip)
    """
    if not isinstance(chips, int) or chips <= 0:
        raise WorkbenchError(f"model {cfg.name!r}: tensor_parallel must be >= 1, got {chips!r}")
    problem = chips_problem(chips, cfg.name, cfg.heads)
    if problem:  # NOTE: more chips than heads leaves chips idle; see chips_problem
        raise WorkbenchError(f"model {cfg.name!r}: tensor_parallel {chips}: {problem}")
    padded = []
    split = {}
    for key in ("heads", "kv_heads", "ffn"):
        size = getattr(cfg, key)
        if key == "kv_heads" and size < chips:
            split[key] = 1  # replicated: each chip keeps one KV head
            continue
        per = -(-size // chips)
        split[key] = per
        if per * chips != size:
            padded.append(f"{key} {size} -> {per * chips} ({per} per chip)")
    return Shard(
        chips=chips,
        heads=split["heads"],
        kv_heads=split["kv_heads"],
        ffn=split["ffn"],
        vocab=-(-cfg.vocab // chips),
        padding=", ".join(padded),
    )


@dataclass(slots=True, kw_only=True)
class Stack:
    """Accumulates ops for one graph; every helper returns the name of the op it added.

    Attributes:
        dtype: Activation dtype.
        weight_dtype: Weight storage dtype (``None``: the activation dtype).
        ops: Ops added so far, in execution order.
    """

    dtype: str
    weight_dtype: str | None = None
    ops: list[Op]

    def add(self, op: Op) -> str:
        """Append ``op`` and return its (output tensor) name."""
        self.ops.append(op)
        return op.name

    def linear(
        self, name: str, x: str, tokens: tuple[int, ...], k: int, n: int, **kw: object
    ) -> str:
        """Add a :class:`~workbench.ir.Linear` reading ``x`` (K=``k``, N=``n``)."""
        return self.add(
            Linear(
                name=name,
                inputs=(x,),
                tokens=tokens,
                in_features=k,
                out_features=n,
                dtype=self.dtype,
                weight_dtype=self.weight_dtype,
                **kw,  # type: ignore[arg-type]
            )
        )

    def norm(self, kind: str, name: str, x: str, shape: tuple[int, ...]) -> str:
        """Add an RMSNorm or LayerNorm over the last dimension of ``shape``."""
        cls = RMSNorm if kind == "rmsnorm" else LayerNorm
        return self.add(cls(name=name, inputs=(x,), shape=shape, dtype=self.dtype))

    def ew(self, name: str, kind: str, xs: tuple[str, ...], shape: tuple[int, ...], lt: str) -> str:
        """Add an :class:`~workbench.ir.Elementwise` of ``kind`` with layer type ``lt``."""
        return self.add(
            Elementwise(name=name, inputs=xs, op=kind, shape=shape, dtype=self.dtype, layer_type=lt)
        )

    def all_reduce(self, name: str, x: str, shape: tuple[int, ...], chips: int) -> str:
        """Add an AllReduce over ``chips`` (or nothing when ``chips`` is 1)."""
        if chips == 1:
            return x
        return self.add(
            AllReduce(name=name, inputs=(x,), shape=shape, chips=chips, dtype=self.dtype)
        )


def block_ops(
    st: Stack,
    cfg: TransformerConfig,
    sh: Shard,
    i: int,
    x: str,
    tokens: tuple[int, int],
    attn: Mapping[str, object],
) -> str:
    """Add transformer block ``i`` reading ``x``; return the name of its output.

    Args:
        st: The accumulator.
        cfg: Architecture.
        sh: Per-chip sizes.
        i: Block index (names are ``layers.{i}.*``).
        x: Input activation name, shape ``(*tokens, hidden)``.
        tokens: ``(batch, q_len)``.
        attn: Keyword arguments of the :class:`~workbench.ir.Attention` op (lengths, cache).
    """
    p, d, hd = f"layers.{i}", cfg.hidden, cfg.head_dim
    shape = (*tokens, d)
    qw, kvw = sh.heads * hd, sh.kv_heads * hd
    h = x if cfg.post_norm else st.norm(cfg.norm, f"{p}.attn_norm", x, shape)
    lin = {"layer_type": "attention", "bias": cfg.attn_bias}
    q = st.linear(f"{p}.attn.q_proj", h, tokens, d, qw, **lin)
    k = st.linear(f"{p}.attn.k_proj", h, tokens, d, kvw, **lin)
    v = st.linear(f"{p}.attn.v_proj", h, tokens, d, kvw, **lin)
    if cfg.position == "rope":
        q = st.ew(f"{p}.attn.q_rope", "rope", (q,), (*tokens, qw), "attention")
        k = st.ew(f"{p}.attn.k_rope", "rope", (k,), (*tokens, kvw), "attention")
    a = st.add(
        Attention(
            name=f"{p}.attn.sdpa",
            inputs=(q, k, v),
            batch=tokens[0],
            heads=sh.heads,
            kv_heads=sh.kv_heads,
            head_dim=hd,
            dtype=st.dtype,
            **attn,  # type: ignore[arg-type]
        )
    )
    o = st.linear(f"{p}.attn.o_proj", a, tokens, qw, d, **lin)
    o = st.all_reduce(f"{p}.attn.all_reduce", o, shape, sh.chips)
    x = st.ew(f"{p}.attn_residual", "add", (x, o), shape, "elementwise")
    if cfg.post_norm:
        x = h = st.norm(cfg.norm, f"{p}.attn_norm", x, shape)
    else:
        h = st.norm(cfg.norm, f"{p}.mlp_norm", x, shape)
    o = _mlp(st, cfg, sh, f"{p}.mlp", h, tokens)
    o = st.all_reduce(f"{p}.mlp.all_reduce", o, shape, sh.chips)
    x = st.ew(f"{p}.mlp_residual", "add", (x, o), shape, "elementwise")
    if cfg.post_norm:
        x = st.norm(cfg.norm, f"{p}.mlp_norm", x, shape)
    return x


def _mlp(
    st: Stack, cfg: TransformerConfig, sh: Shard, p: str, h: str, tokens: tuple[int, int]
) -> str:
    d, f = cfg.hidden, sh.ffn
    lin = {"layer_type": "mlp", "bias": cfg.mlp_bias}
    if cfg.activation == "swiglu":
        gate = st.linear(f"{p}.gate_proj", h, tokens, d, f, **lin)
        up = st.linear(f"{p}.up_proj", h, tokens, d, f, **lin)
        act = st.ew(f"{p}.act", "swiglu", (gate, up), (*tokens, f), "mlp")
    else:
        up = st.linear(f"{p}.up_proj", h, tokens, d, f, **lin)
        act = st.ew(f"{p}.act", cfg.activation, (up,), (*tokens, f), "mlp")
    return st.linear(f"{p}.down_proj", act, tokens, f, d, **lin)
