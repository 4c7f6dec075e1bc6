"""FP8 training as Transformer Engine runs it: which GEMMs run in FP8, and the casts they need.

Transformer Engine's ``te.Linear`` / ``LayerNormLinear`` / ``LayerNormMLP`` (the transformer
layers' projections) run all three GEMMs of a linear layer in FP8 under its default ``HYBRID``
recipe: the forward ``Y = X W`` on E4M3 operands, the data gradient ``dX = dY W^T`` and the
weight gradient ``dW = X^T dY`` with the gradient in E5M2 (NVIDIA Transformer Engine
documentation, "Using FP8 with Transformer Engine": ``Format.HYBRID``, "E4M3 during forward pass,
E5M2 during backward pass"). The attention core (``DotProductAttention``) stays in the activation
format unless FP8 attention is asked for, and the embedding and output layer are not TE modules
(Megatron-LM's ``output_layer`` is a plain ``ColumnParallelLinear``): both stay in bf16.

Every FP8 GEMM operand is produced by a cast: TE's fused ``cast_transpose`` reads the bf16
tensor once and writes the FP8 copy and its transpose (the wgrad GEMM needs the transposed
layout), computing the tensor's amax on the way for delayed scaling. Per micro-batch and per
distinct GEMM input that is one ``cast_transpose`` of the activation in the forward and one of
each output gradient in the backward; each weight is cast once per optimizer step (TE caches the
FP8 weight over micro-batches: ``is_first_microbatch``). Once per step the amax histories and
scales are updated by one fused kernel. Each cast is memory-bound: its bytes over the chip's
sustained off-chip bandwidth, plus one kernel launch.

Loop nest of one ``cast_transpose`` (``X`` of m x k elements)::

    for i, j in tiles(m, k):     # read 2 bytes, write 1 + 1 bytes per element
        q = fp8(X[i, j] * scale); out[i, j] = q; out_t[j, i] = q; amax = max(amax, |X[i, j]|)
"""

from __future__ import annotations

import math

from workbench.hw.schema import Hardware
from workbench.ir import Linear
from workbench.mapper import ModelMapping
from workbench.platform._training_parts import Part, StepKernel

__all__ = [
    "FP8_GEMMS",
    "FP8_GEMM_DTYPE",
    "amax_update",
    "fp8_casts",
    "fp8_overrides",
    "weight_casts",
]

#: Kernels whose GEMMs run in FP8 (the layers' projections and their dgrad / wgrad GEMMs).
FP8_GEMMS = "layers.*_proj*"
#: The FP8 format the GEMMs are costed in (E4M3 and E5M2 run at the same tensor-core rate).
FP8_GEMM_DTYPE = "fp8_e4m3"
#: Bytes a cast-transpose moves per element: read 2 (bf16), write 1 (FP8) + 1 (its transpose).
CAST_TRANSPOSE_BYTES = 4.0


def fp8_overrides(activation_dtype: str) -> tuple[tuple[str, str], ...]:
    """Map-option dtype overrides of an FP8 step: layer GEMMs in FP8, attention as activations."""
    return ((FP8_GEMMS, FP8_GEMM_DTYPE), ("*attn.sdpa", activation_dtype))


def _cast_s(elements: float, hw: Hardware) -> float:
    """Seconds of one cast-transpose of ``elements`` values."""
    bw = hw.offchip.sustained_bytes_per_s
    return elements * CAST_TRANSPOSE_BYTES / bw + hw.overheads.kernel_launch_s


def fp8_casts(fwd: ModelMapping, hw: Hardware) -> Part:
    """The cast kernels of one layer's FP8 GEMMs per micro-batch (weights: see the module doc).

    Args:
        fwd: The forward mapping of one layer (and the model's edges).
        hw: The chip.

    Returns:
        A :class:`Part` of the layer with the casts as forward and backward rows (weight casts
        carry ``calls`` of one per step, set by the caller).
    """
    graph = fwd.graph
    linears = [o for o in graph.ops if isinstance(o, Linear) and o.name.startswith("layers.")]
    inputs: dict[str, float] = {}
    rows: list[StepKernel] = []
    fwd_s = bwd_s = 0.0
    for op in linears:
        m = math.prod(op.tokens)
        src = op.inputs[0] if op.inputs else op.name
        inputs[src] = m * op.in_features
        t = _cast_s(m * op.out_features, hw)
        rows.append(StepKernel(name=f"{op.name}.dy_cast", phase="backward", calls=1.0, time_s=t))
        bwd_s += t
    for src, n in inputs.items():
        t = _cast_s(n, hw)
        rows.append(StepKernel(name=f"{src}.fp8_cast", phase="forward", calls=1.0, time_s=t))
        fwd_s += t
    return Part(fwd_s=fwd_s, bwd_s=bwd_s, rows=tuple(rows))


def weight_casts(fwd: ModelMapping, hw: Hardware, layers: float) -> tuple[StepKernel, ...]:
    """Each FP8 weight cast once per optimizer step, over the stage's ``layers`` layers."""
    rows = []
    for op in fwd.graph.ops:
        if isinstance(op, Linear) and op.name.startswith("layers."):
            n = op.in_features * op.out_features
            t = _cast_s(n, hw)
            rows.append(StepKernel(name=f"{op.name}.w_cast", phase="forward", calls=layers,
                                   time_s=t))  # fmt: skip
    return tuple(rows)


def amax_update(hw: Hardware) -> StepKernel:
    """The per-step fused amax-history and scale update: one launch (its bytes are tiny)."""
    t = hw.overheads.kernel_launch_s
    return StepKernel(name="fp8.amax_and_scale_update", phase="optimizer", calls=1.0, time_s=t)
