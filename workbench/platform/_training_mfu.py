"""MFU and HFU of a training step, as the field counts them, with the convention stated.

* **MFU** (model FLOPs utilisation) = model FLOPs per chip per step / (step time x peak). Model
  FLOPs per token are 3 x the forward's matrix FLOPs with attention over all ``T`` positions (no
  causal halving) and the LM head included: ``6 N + 12 L H Q T`` (Chowdhery et al., PaLM,
  arXiv:2204.02311, Appendix B; Narayanan et al. arXiv:2104.04473 equation 3 without the
  recomputed pass), :func:`workbench.models.training_flops_per_token` with ``recompute=0``.
* **HFU** (hardware FLOPs utilisation) adds the FLOPs re-run for activation recomputation: the
  full recomputation's extra forward of every layer (Megatron's fourth pass, counted as MFU
  counts the forward), and the matrix FLOPs of the kernels a selective policy re-runs (as
  Korthikanti et al. arXiv:2205.05198 count HFU under selective recomputation).
* **peak** is the dense peak of the matrix engine at the activations' format (bf16 for bf16 and
  for FP8 GEMM training: an assumption; sources differ, e.g. llm-foundry divides its FP8 rows by
  the FP8 peak, so published FP8 rows are compared in tokens/s).

A published figure is compared with the same count: PaLM-style MFU with MFU, Megatron's
hardware FLOPs with HFU (``flop_count`` of a corpus row).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.cost.utilisation import model_peak
from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.models import TransformerConfig, training_flops_per_token
from workbench.platform._training_plan import TrainingPlan, TrainingStep

__all__ = ["CONVENTION", "MODEL_FLOPS", "TrainingUtilisation", "training_utilisation"]

#: How model FLOPs per token are counted.
MODEL_FLOPS = (
    "model FLOPs per token = 6N + 12*L*H*Q*T (3 x the forward's matrix FLOPs, attention over all "
    "T positions, LM head included; PaLM arXiv:2204.02311 App. B, Megatron-LM arXiv:2104.04473 "
    "eq. 3 without recompute)"
)
#: The counting convention, stated in every output that prints MFU or HFU.
CONVENTION = (
    f"MFU = model FLOPs / (step time x peak), {MODEL_FLOPS}; HFU adds the recomputed FLOPs "
    "(full: one more forward of every layer; selective: the re-run kernels' matrix FLOPs)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingUtilisation:
    """MFU and HFU of one step, with what they were counted from.

    Attributes:
        mfu: Model FLOPs utilisation, 0..1.
        hfu: Hardware FLOPs utilisation (recompute included), >= ``mfu``.
        model_flops_per_token: FLOPs per token as MFU counts them.
        hardware_flops_per_token: FLOPs per token as HFU counts them.
        tokens_per_s_per_chip: Training tokens per second per chip.
        peak_flops_per_s: The peak both are measured against, FLOP/s.
        peak_name: Which peak that is.
        convention: :data:`CONVENTION`.
    """

    mfu: float
    hfu: float
    model_flops_per_token: float
    hardware_flops_per_token: float
    tokens_per_s_per_chip: float
    peak_flops_per_s: float
    peak_name: str
    convention: str = CONVENTION


def training_utilisation(
    cfg: TransformerConfig,
    hw: Hardware,
    plan: TrainingPlan,
    step: TrainingStep,
    *,
    seq: int,
    dtype: str = "bf16",
) -> TrainingUtilisation:
    """MFU and HFU of ``step`` (the result of ``training_step(cfg, hw, plan, seq=seq)``).

    Args:
        cfg: The decoder.
        hw: The chip.
        plan: The plan the step ran.
        step: The predicted step.
        seq: Sequence length, tokens.
        dtype: The activations' format (its matrix-engine peak is the denominator).

    Returns:
        The :class:`TrainingUtilisation`.

    Raises:
        WorkbenchError: A step of no positive, finite time.
    """
    if not 0.0 < step.step_s < float("inf"):
        raise WorkbenchError(f"training step time must be positive and finite, got {step.step_s}")
    peak, name = model_peak(hw, dtype)
    tokens = plan.global_batch * seq / plan.chips
    model = training_flops_per_token(cfg, seq, 0.0)
    hardware = training_flops_per_token(cfg, seq, plan.recompute)
    hardware += step.selective_flops / tokens
    per_s = tokens / step.step_s
    return TrainingUtilisation(
        mfu=model * per_s / peak,
        hfu=hardware * per_s / peak,
        model_flops_per_token=model,
        hardware_flops_per_token=hardware,
        tokens_per_s_per_chip=per_s,
        peak_flops_per_s=peak,
        peak_name=name,
    )
