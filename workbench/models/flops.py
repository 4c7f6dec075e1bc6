"""Model FLOPs for training, and training MFU, as the PaLM paper defines them.

PaLM (Chowdhery et al. 2022, arXiv:2204.02311, appendix B): training model FLOPs per token are
``6N + 12 L H Q T``: 3 x the forward multiply-adds of every weight (2N) plus 3 x the attention
score and value products without causal halving (4 L H Q T), rematerialisation excluded. MFU is
observed tokens/s x those FLOPs / (chips x peak FLOP/s).
"""

from __future__ import annotations

from dataclasses import replace

from workbench.errors import WorkbenchError
from workbench.models.config import TransformerConfig
from workbench.models.transformer import decoder_graph

__all__ = ["training_flops_per_token", "training_mfu"]


def training_flops_per_token(cfg: TransformerConfig, seq: int, recompute: float = 0.0) -> float:
    """Training model FLOPs per token of a decoder at sequence length ``seq`` (PaLM convention).

    Computed from the graph: 3 x the forward multiply-add FLOPs per token of a non-causal prefill
    (every matmul a token takes part in, attention over all ``seq`` positions). With
    ``recompute`` > 0 the count is *hardware* FLOPs: the rematerialised fraction of every
    transformer layer's forward is added (the LM head is not recomputed), as Megatron-LM counts
    them (Narayanan et al. SC'21, arXiv:2104.04473, equation 3: 96 B s l h^2 (1 + s/6h) for four
    layer passes, 6 B s h V for three logit passes).

    Args:
        cfg: The decoder's configuration.
        seq: Training sequence length T, tokens.
        recompute: Forward fraction of the layers re-run in the backward, 0..1.

    Returns:
        FLOPs per token (multiply-add = 2).
    """
    if seq <= 0:
        raise WorkbenchError(f"seq must be positive, got {seq}")
    if not 0.0 <= recompute <= 1.0:
        raise WorkbenchError(f"recompute must be in 0..1, got {recompute}")
    graph = decoder_graph(replace(cfg, causal=False), "prefill", batch=1, seq=seq)
    head = sum(op.matmul_flops for op in graph.ops if op.name == "lm_head")
    return (3.0 * graph.matmul_flops + recompute * (graph.matmul_flops - head)) / seq


def training_mfu(
    flops_per_token: float, tokens_per_s: float, chips: int, peak_flops_per_s: float
) -> float:
    """Model FLOPs utilisation of a training run, 0..1.

    Args:
        flops_per_token: Training model FLOPs per token (:func:`training_flops_per_token`).
        tokens_per_s: Observed training throughput, tokens/s.
        chips: Accelerators used.
        peak_flops_per_s: Dense peak of one chip at the training format, FLOP/s.

    Returns:
        MFU.

    >>> round(training_mfu(3.2777e12, 238.3e3, 6144, 275e12), 4)  # PaLM 540B, Table 3
    0.4623
    """
    if chips <= 0 or peak_flops_per_s <= 0:
        raise WorkbenchError("chips and peak_flops_per_s must be positive")
    return tokens_per_s * flops_per_token / (chips * peak_flops_per_s)
