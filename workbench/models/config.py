"""The one description of a transformer: :class:`TransformerConfig`."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import WorkbenchError

__all__ = [
    "ACTIVATIONS",
    "LIMITS",
    "MAX_SYSTEM_CHIPS",
    "NORMS",
    "POSITIONS",
    "TransformerConfig",
    "chips_problem",
]

#: Largest tensor-parallel group accepted: the largest published system of one accelerator type,
#: 16,384 H100s (Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Section 3.3.1) [V].
MAX_SYSTEM_CHIPS = 16_384

ACTIVATIONS = ("swiglu", "gelu", "relu")
NORMS = ("rmsnorm", "layernorm")
POSITIONS = ("rope", "learned", "none")

#: Upper bounds on a transformer's sizes: far above any published model (the largest dense
#: models have ~100-200 layers, widths ~2**14-2**15, vocabularies ~2**18, contexts ~2**20), low
#: enough that building the graph cannot exhaust memory (``layers: 1000000`` would make ~10
#: million ops) and that a size product cannot overflow 64-bit arithmetic.
LIMITS = {
    "hidden": 2**20,
    "layers": 2_000,
    "heads": 2**16,
    "kv_heads": 2**16,
    "head_dim": 2**16,
    "ffn": 2**22,
    "vocab": 2**24,
    "max_seq": 2**26,
}


def _show(value: object) -> str:
    """A size for a message: huge integers as a power of two (their digits could fill pages)."""
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"about 2**{abs(value).bit_length()}"
    return repr(value)[:40]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransformerConfig:
    """Architecture of a decoder-only or encoder transformer.

    Attributes:
        name: Model name (e.g. ``"llama2-7b"``).
        hidden: Model width d (elements).
        layers: Number of blocks L.
        heads: Query heads H.
        kv_heads: Key/value heads (``0``: same as ``heads``; fewer is GQA, 1 is MQA).
        head_dim: Width of one head Q (``0``: ``hidden // heads``).
        ffn: MLP intermediate width (per branch for SwiGLU).
        vocab: Vocabulary size.
        activation: ``"swiglu"`` (gate and up projections), ``"gelu"`` or ``"relu"``.
        norm: ``"rmsnorm"`` or ``"layernorm"``.
        attn_bias: Biases on the q/k/v/o projections.
        mlp_bias: Biases on the MLP projections.
        tied_embeddings: The LM head reuses the token embedding table.
        position: ``"rope"``, ``"learned"`` (a ``max_seq x hidden`` table) or ``"none"``.
        max_seq: Longest sequence (tokens) the model supports.
        causal: Causal self-attention (decoders) or bidirectional (encoders).
        post_norm: Norm after each residual add (BERT) instead of before each sub-block.
        type_vocab: Token-type (segment) embedding rows; 0 for none (BERT uses 2).
        pooler: Add BERT's pooler (dense + tanh on the first token).
    """

    name: str
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    kv_heads: int = 0
    head_dim: int = 0
    activation: str = "swiglu"
    norm: str = "rmsnorm"
    attn_bias: bool = False
    mlp_bias: bool = False
    tied_embeddings: bool = False
    position: str = "rope"
    max_seq: int = 4096
    causal: bool = True
    post_norm: bool = False
    type_vocab: int = 0
    pooler: bool = False

    def __post_init__(self) -> None:
        if not self.kv_heads:
            object.__setattr__(self, "kv_heads", self.heads)
        if not self.head_dim and isinstance(self.heads, int) and self.heads > 0:
            if isinstance(self.hidden, int) and self.hidden % self.heads:
                raise WorkbenchError(
                    f"model {self.name!r}: heads={self.heads} does not divide "
                    f"hidden={self.hidden} (give head_dim explicitly if that is intended)"
                )
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        sizes = ("hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab", "max_seq")
        for key in sizes:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise WorkbenchError(f"model {self.name!r}: {key} must be > 0, got {_show(value)}")
            if value > LIMITS[key]:
                raise WorkbenchError(
                    f"model {self.name!r}: {key}={_show(value)} is above the supported "
                    f"{LIMITS[key]:,}"
                )
        tv = self.type_vocab
        if not isinstance(tv, int) or isinstance(tv, bool) or not 0 <= tv <= 2**16:
            raise WorkbenchError(
                f"model {self.name!r}: type_vocab must be 0..65536, got {_show(tv)}"
            )
        if self.heads % self.kv_heads:
            raise WorkbenchError(
                f"model {self.name!r}: heads={self.heads} must be a multiple of "
                f"kv_heads={self.kv_heads}"
            )
        for key, allowed in (
            ("activation", ACTIVATIONS),
            ("norm", NORMS),
            ("position", POSITIONS),
        ):
            if getattr(self, key) not in allowed:
                raise WorkbenchError(
                    f"model {self.name!r}: {key} must be one of {', '.join(allowed)}, "
                    f"got {getattr(self, key)!r}"
                )


def chips_problem(chips: int, name: str, heads: int | None) -> str | None:
    """Why ``chips`` tensor-parallel chips cannot run model ``name``, or None when they can.

    Megatron-style tensor parallelism splits attention by heads, so more chips than heads would
    leave chips without a head; beyond the largest published system nothing can be checked.

    Args:
        chips: Chips the model is spread over.
        name: Model name, for the phrase.
        heads: The model's query heads, or None when unknown (then only the system bound holds).

    Returns:
        One phrase (no trailing period), or None.

    >>> chips_problem(64, "llama2-7b", 32)
    'llama2-7b has 32 attention heads; tensor parallelism splits by heads, so at most 32 chips'
    >>> chips_problem(8, "llama2-7b", 32) is None
    True
    """
    if chips < 1:
        return f"{chips} chips: a run needs at least one chip"
    if heads is not None and chips > max(heads, 1):
        return (
            f"{name} has {heads} attention heads; tensor parallelism splits by heads, "
            f"so at most {heads} chips"
        )
    if chips > MAX_SYSTEM_CHIPS:
        return f"above the largest published system ({MAX_SYSTEM_CHIPS:,} chips)"
    return None
