"""Reproduce a training row: one optimizer step of its parallel configuration, with its stack.

The row's source states what was run (parallel degrees, micro-batch, recomputation, what
overlapped, FSDP or ZeRO sharding, attention fused or not, whether its stack's selective
checkpointing ran); the row's stack states how its software runs it (the mapping options: the
attention class, launch, the fusion rules it applies; its selective recomputation policy; the
compute slowdown under overlapped collectives). A row in an FP8 format runs its layers' GEMMs in
FP8 in the Transformer Engine convention: attention and the LM head in bf16, with the casts
(workbench/platform/_training_fp8.py).
:func:`workbench.platform.training.training_step` costs the step; the metric is MFU (the FLOPs
counted as the source counts them over step time x peak) or tokens/s per chip.
"""

from __future__ import annotations

from dataclasses import replace

from workbench.fidelity.reproduce import Reproduction, _class, _config, _peak
from workbench.fidelity.schema import CorpusError, ModelSetup
from workbench.hw.schema import Hardware
from workbench.hw.stack import Stack, training_figures
from workbench.models import training_flops_per_token
from workbench.options import MapOptions
from workbench.platform.training import TrainingPlan, TrainingStep, training_step

__all__ = ["training", "training_run"]


def _selective(s: ModelSetup, stack: Stack) -> str:
    """The selective recomputation policy a row ran: its stack's, where its source ran one."""
    t = s.training
    assert t is not None
    if not t.selective_recompute:
        return "none"
    if stack.selective_recompute is None:
        raise CorpusError(f"stack {stack.name!r} has no selective recomputation policy")
    return stack.selective_recompute.value


def training_run(s: ModelSetup, hw: Hardware, stack: Stack) -> tuple[TrainingPlan, TrainingStep]:
    """The plan a training row ran and its predicted step on ``hw`` under ``stack``.

    Args:
        s: A training row's setup.
        hw: Its hardware profile.
        stack: Its software stack.

    Returns:
        ``(plan, step)``.

    Raises:
        CorpusError: The row ran selective checkpointing and its stack has no such policy.
    """
    t = s.training
    assert t is not None  # NOTE: the schema requires it for kind training
    slow, eff = training_figures(stack)
    plan = TrainingPlan(
        tensor_parallel=s.tensor_parallel,
        pipeline_parallel=t.pipeline_parallel,
        data_parallel=t.data_parallel,
        micro_batch=t.micro_batch,
        global_batch=t.global_batch,
        interleave=t.interleave,
        sequence_parallel=t.sequence_parallel,
        recompute=s.recompute,
        selective=_selective(s, stack),
        tp_overlap=t.tp_overlap,
        pp_overlap=t.pp_overlap,
        dp_overlap=t.dp_overlap,
        dp_sharding=t.dp_sharding,
        grad_dtype=t.grad_dtype,
        attention=t.attention,
        overlap_slowdown=slow,
        compute_efficiency=eff,
    )
    cfg = _config(s)
    # NOTE: an FP8 training row runs its layers' GEMMs in FP8 as Transformer Engine does, with
    # activations, attention and the LM head in bf16 (workbench/platform/_training_fp8.py)
    fp8 = s.dtype.startswith("fp8")
    plan = replace(plan, fp8=fp8)
    options = stack.map_options(MapOptions())
    dtype = "bf16" if fp8 else s.dtype
    return plan, training_step(cfg, hw, plan, seq=s.seq, dtype=dtype, options=options)


def training(s: ModelSetup, hw: Hardware, stack: Stack, metric: str = "mfu") -> Reproduction:
    """A training row's metric: MFU as its source counts FLOPs, or tokens/s per chip.

    Args:
        s: A training row's setup.
        hw: Its hardware profile.
        stack: Its software stack.
        metric: ``"mfu"`` or ``"items_per_s"`` (tokens/s per chip, torchtitan's TPS/GPU).

    Returns:
        The :class:`~workbench.fidelity.reproduce.Reproduction`.
    """
    t = s.training
    assert t is not None
    plan, step = training_run(s, hw, stack)
    cfg = _config(s)
    # NOTE: like with like: a source that counts the rematerialised forward (Megatron's
    # hardware FLOPs) is compared with the same count over the predicted step.
    counted_r = s.recompute if t.flop_count == "hardware" else 0.0
    per_token = training_flops_per_token(cfg, s.seq, counted_r)
    work = t.global_batch * s.seq * per_token / plan.chips
    peak = _peak(hw, s.dtype)
    floor = step.flops / peak
    if metric == "items_per_s":  # NOTE: training tokens/s per chip (torchtitan's TPS/GPU)
        tokens = t.global_batch * s.seq / plan.chips
        predicted, bound = tokens / step.step_s, tokens / floor
    else:
        predicted, bound = work / (step.step_s * peak), work / (floor * peak)
    return Reproduction(
        predicted=predicted,
        bound=bound,
        time_s=step.step_s,
        floor_s=floor,
        bottleneck=_class(step.mappings),
    )
