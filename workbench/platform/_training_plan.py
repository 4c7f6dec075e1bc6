"""The plan of a training job (parallel degrees, schedule, recomputation, overlap) and its step.

See :mod:`workbench.platform.training` for how a step is costed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.errors import WorkbenchError
from workbench.mapper import ModelMapping
from workbench.platform._training_parts import StepKernel

__all__ = ["SELECTIVE_POLICIES", "TrainingPlan", "TrainingStep"]

#: Selective recomputation policies (see the module docstring).
SELECTIVE_POLICIES = ("none", "every_other_gemm", "attention_core")
_SHARDING = ("none", "optimizer", "full")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingPlan:
    """How a training job is parallelised and scheduled.

    Attributes:
        tensor_parallel, pipeline_parallel, data_parallel: Degrees t, p, d (chips = t p d).
        micro_batch: Sequences per micro-batch per replica.
        global_batch: Sequences per optimizer step over all replicas.
        interleave: Model chunks per pipeline chip v (1: non-interleaved 1F1B).
        sequence_parallel: Norms and dropout split over the tensor-parallel chips.
        recompute: Forward fraction re-run in the backward (1: full rematerialisation).
        selective: Selective recomputation policy on the layers not fully recomputed
            (:data:`SELECTIVE_POLICIES`).
        tp_overlap: Tensor-parallel collectives overlap the GEMMs (hidden up to GEMM time).
        pp_overlap: Pipeline sends and receives are asynchronous (hidden).
        dp_overlap: Gradient reduction overlaps the last micro-batch's backward.
        dp_sharding: "none" (all-reduce), "optimizer" (ZeRO-1: reduce-scatter + all-gather,
            optimizer states sharded) or "full" (FSDP: parameters sharded as well).
        grad_dtype: Format the gradients are reduced in.
        attention: "fused" (FlashAttention-style kernel) or "unfused" (scores materialised:
            QK^T batched GEMM, scale-mask-softmax, dropout, PV batched GEMM, as Megatron-LM
            ran it in 2021, arXiv:2104.04473 Section 4.2).
        overlap_slowdown: Fractional slowdown of compute kernels while an overlapped collective
            runs beside them (the stack's figure; 0: overlap is free).
        clip_grad_norm: The optimizer step clips the gradients' global norm first.
        compute_efficiency: Fraction of its kernels' mapped rate the stack's training step
            sustains (the stack's fitted figure, 1: the kernels as mapped); every forward,
            backward and recomputed kernel of the layers, embedding, head and loss takes
            ``1 / compute_efficiency`` of its mapped time; collectives and the optimizer keep
            theirs.
        fp8: The transformer layers' GEMMs run in FP8 as Transformer Engine runs them (forward,
            dgrad and wgrad; attention and the LM head stay in the activation format), with the
            cast-transpose kernels that feed them (see :mod:`workbench.platform._training_fp8`).
    """

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    interleave: int = 1
    sequence_parallel: bool = False
    recompute: float = 0.0
    selective: str = "none"
    tp_overlap: bool = False
    pp_overlap: bool = False
    dp_overlap: bool = False
    dp_sharding: str = "none"
    grad_dtype: str = "fp32"
    attention: str = "fused"
    overlap_slowdown: float = 0.0
    clip_grad_norm: bool = True
    compute_efficiency: float = 1.0
    fp8: bool = False

    def __post_init__(self) -> None:
        sizes = {
            "tensor_parallel": self.tensor_parallel,
            "pipeline_parallel": self.pipeline_parallel,
            "data_parallel": self.data_parallel,
            "micro_batch": self.micro_batch,
            "global_batch": self.global_batch,
            "interleave": self.interleave,
        }
        for name, v in sizes.items():
            if v < 1:
                raise WorkbenchError(f"training plan: {name} must be >= 1, got {v}")
        if not 0.0 <= self.recompute <= 1.0:
            raise WorkbenchError(f"training plan: recompute must be in 0..1, got {self.recompute}")
        if not 0.0 <= self.overlap_slowdown <= 1.0:
            raise WorkbenchError(
                f"training plan: overlap_slowdown must be in 0..1, got {self.overlap_slowdown}"
            )
        if not 0.0 < self.compute_efficiency <= 1.0:
            got = self.compute_efficiency
            raise WorkbenchError(f"training plan: compute_efficiency must be in (0, 1], got {got}")
        if self.selective not in SELECTIVE_POLICIES:
            raise WorkbenchError(f"training plan: selective must be one of {SELECTIVE_POLICIES}")
        if self.attention not in ("fused", "unfused"):
            raise WorkbenchError("training plan: attention must be 'fused' or 'unfused'")
        if self.dp_sharding not in _SHARDING:
            raise WorkbenchError(f"training plan: dp_sharding must be one of {_SHARDING}")
        if self.global_batch % (self.data_parallel * self.micro_batch):
            raise WorkbenchError(
                f"training plan: global_batch {self.global_batch} is not a multiple of "
                f"data_parallel x micro_batch = {self.data_parallel * self.micro_batch}"
            )

    @property
    def chips(self) -> int:
        """Chips in the job."""
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel

    @property
    def micro_batches(self) -> int:
        """Micro-batches m each replica runs per step."""
        return self.global_batch // (self.data_parallel * self.micro_batch)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TrainingStep:
    """One optimizer step on the busiest chip, seconds per part.

    Attributes:
        compute_s: Kernels of m micro-batches (forward, backward, recompute), no communication.
        tp_comm_s: Exposed tensor-parallel collectives over the step.
        pp_comm_s: Exposed pipeline sends and receives over the step.
        bubble_s: Pipeline fill and drain, (p - 1) / v micro-batch times.
        dp_comm_s: Exposed data-parallel gradient (and parameter) collectives.
        overlap_s: Compute slowed by the collectives hidden under it (the stack's slowdown).
        optimizer_s: The optimizer step and gradient clipping.
        flops: Matrix FLOPs the chip executes per step (recompute included).
        selective_flops: Of those, the matrix FLOPs the selective recomputation policy re-runs.
        mappings: Forward mappings of one micro-batch (one layer and the model's edges).
        kernels: Every kernel of the step on this chip with its calls and time per call:
            forward, backward, recompute, optimizer and communication (the collectives at
            their full time; the exposed part is ``tp_comm_s``, ``pp_comm_s``, ``dp_comm_s``).
    """

    compute_s: float
    tp_comm_s: float
    pp_comm_s: float
    bubble_s: float
    dp_comm_s: float
    optimizer_s: float
    flops: float
    overlap_s: float = 0.0
    selective_flops: float = 0.0
    mappings: tuple[ModelMapping, ...] = field(default=())
    kernels: tuple[StepKernel, ...] = field(default=())

    @property
    def step_s(self) -> float:
        """Time of one optimizer step, seconds."""
        return (
            self.compute_s
            + self.tp_comm_s
            + self.pp_comm_s
            + self.bubble_s
            + self.dp_comm_s
            + self.overlap_s
            + self.optimizer_s
        )
