"""One optimizer step of decoder training on one chip of a TP x PP x DP job, as mechanisms.

The busiest pipeline stage sets the pace. Per micro-batch it runs its layers' forward, backward
and rematerialised forward, and the tensor-parallel collectives of each; the pipeline adds its
bubble; the data-parallel gradient reduction and the optimizer step close the step::

    t_mb   = sum over the stage's kernels: forward + backward + recompute x forward
             + (1 - recompute) x the selective policy's kernels
             (+ TP collectives: 2 per layer forward, 2 backward, Shoeybi et al. arXiv:1909.08053
             Section 3; exposed unless overlapped with the GEMMs) (+ pipeline send/receive)
    pipe   = (m + (p - 1) / v) x t_mb         bubble (p - 1) / (v m): Narayanan et al. SC'21,
                                              arXiv:2104.04473 Section 2.2 (v = 1: 1F1B)
    dp     = gradient all-reduce (or reduce-scatter + parameter all-gather when sharded) of the
             stage's parameters; overlapped: only what a micro-batch's forward (the gathers) or
             backward (the re-gathers and the reduction) cannot hide, and at least the last
             25 MB bucket
    overlap = s / (1 + s) x every collective second hidden under compute, s the stack's
             ``overlap_slowdown``: the compute kernels running beside a collective share its
             SMs and memory and run s slower for that time
    opt    = Adam over the chip's parameters, memory-bound: 30 bytes per parameter (fp32 master
             weight, gradient, m, v read; weight, m, v and the 16-bit copy written; the states of
             Rajbhandari et al. ZeRO, arXiv:1910.02054 Section 3.1), plus global-norm gradient
             clipping, 12 bytes per parameter (each fp32 gradient read for the norm, then read
             and written scaled: torch.nn.utils.clip_grad_norm_ multiplies by the clamped
             coefficient unconditionally)
    step   = pipe + dp + overlap + opt

A stack whose training steps run below their kernels' mapped rate states (or has fitted, from a
calibration row: workbench/fidelity/fits.py) a ``compute_efficiency`` e: each compute kernel
takes 1/e of its mapped time (``TrainingPlan.compute_efficiency``).

What overlaps is the plan's, per source: Megatron-LM of 2021 runs the tensor-parallel
all-reduces, the pipeline sends and (with its "local" DDP) the gradient all-reduce serially;
MegaScale (Jiang et al. NSDI'24, arXiv:2402.15627, Table 3) measures TP, PP and DP overlap as
optimisations added on top of that Megatron-LM, and PyTorch DDP overlaps bucketed all-reduces
with the backward. Fully sharded data parallelism gathers the parameters for each forward and,
unless the job is pipelined, again for the backward (ZeRO stage 3's 3x parameter volume,
arXiv:1910.02054 Section 7.2.2; torchtitan ``apply_fsdp`` at 9dec370 reshards after the forward
except under pipeline parallelism, as Llama 3's 405B run, arXiv:2407.21783 Section 3.3.2).
Collectives between nodes: workbench/platform/_training_comm.py.

The backward pass is costed, not assumed: each forward GEMM ``Y[M,N] = X[M,K] W[K,N]`` becomes
two GEMMs mapped through the mapper, ``dX = dY W^T`` (M x N by N x K) and ``dW = X^T dY``
(K x M by M x N); fused attention's backward is 2.5x its forward FLOPs at its implementation
class's backward efficiency (workbench/cost/attention_class.py, ``backward_factor``); every
other kernel (norms, activations, residual adds, embedding gather) reads the incoming gradient
and its saved input and writes a gradient: 2x its forward time (assumption: about twice the
bytes of the forward). With sequence parallelism the norms and residual adds run on 1/t of the
tokens (Korthikanti et al. arXiv:2205.05198 Section 4.2.2) and the all-reduces become
reduce-scatter + all-gather pairs of the same bytes. The kernels are mapped with the stack's
options (attention class, launch, the fusion rules it applies).

Selective recomputation re-runs part of each layer's forward in the backward, as the stack's
policy says: ``every_other_gemm`` (torchtitan's per-op policy: every GEMM output saved except
the second, fourth, ... of a layer, fused attention saved, every other op recomputed;
torchtitan/parallelisms/parallelize_llama.py at 9dec370) or ``attention_core`` (the attention's
scores, softmax, dropout and context GEMMs: Korthikanti et al. arXiv:2205.05198 Section 5;
nothing extra for a fused kernel, which recomputes its scores anyway).
"""

from __future__ import annotations

import math
from dataclasses import replace

from workbench.cost.attention_class import backward_factor
from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.ir import Embedding, Graph, Linear, Quantize, Softmax
from workbench.ir.dtypes import bytes_for
from workbench.ir.ops_gemm import Attention, MatMul
from workbench.mapper import ModelMapping, map_model
from workbench.models import TransformerConfig, decoder_graph
from workbench.options import MapOptions
from workbench.platform._training_comm import net_s, p2p_s
from workbench.platform._training_fp8 import amax_update, fp8_casts, fp8_overrides, weight_casts
from workbench.platform._training_graphs import backward_gemms, unfused_attention
from workbench.platform._training_mfu import CONVENTION, TrainingUtilisation, training_utilisation
from workbench.platform._training_parts import Part, StepKernel, kernel_part, step_rows
from workbench.platform._training_plan import SELECTIVE_POLICIES, TrainingPlan, TrainingStep

__all__ = [
    "ADAM_BYTES_PER_PARAM",
    "CLIP_BYTES_PER_PARAM",
    "CONVENTION",
    "DP_BUCKET_BYTES",
    "SELECTIVE_POLICIES",
    "StepKernel",
    "TrainingPlan",
    "TrainingStep",
    "TrainingUtilisation",
    "training_step",
    "training_utilisation",
]

#: Bytes an Adam step moves per parameter (mixed precision, see the module docstring).
ADAM_BYTES_PER_PARAM = 30.0
#: Bytes global-norm gradient clipping moves per parameter: the fp32 gradient read for the norm,
#: then read and written scaled (torch.nn.utils.clip_grad_norm_: foreach norm, then
#: ``_foreach_mul_`` by the clamped coefficient, which avoids a host sync by always scaling).
CLIP_BYTES_PER_PARAM = 12.0
#: Backward over forward time of a memory-bound kernel (assumption: twice the bytes).
VECTOR_BACKWARD = 2.0
#: Gradient bucket reduced after the backward ends, bytes: PyTorch DDP's bucket_cap_mb default,
#: 25 MB (pytorch/pytorch issue 118421); used for every overlapped reduction (assumption for
#: XLA's and FSDP's per-layer reductions, whose last layer is of that order).
DP_BUCKET_BYTES = 25e6


def _group(name: str) -> str:
    if name.startswith("layers."):
        return "layer"
    return "embed" if name.startswith("embed") else "head"


def _unfused(att: Attention, hw: Hardware, plan: TrainingPlan, options: MapOptions):
    """(part, its GEMMs) of an attention with its scores in memory.

    Either selective policy recomputes all of it (its batched GEMMs are not the saved ``mm``s).
    """
    sub = map_model(unfused_attention(att), hw, options)
    part, mats = Part(), []
    redo = plan.selective != "none"
    for skm in sub.kernels:
        ms = [o for o in (sub.graph.op(x) for x in skm.kernel.ops) if isinstance(o, MatMul)]
        ts = skm.cost.total_s
        mats.extend(ms)
        part = part + kernel_part(skm.kernel.name, ts, flops=float(skm.kernel.matmul_flops),
                                  bwd_s=0.0 if ms else VECTOR_BACKWARD * ts, selective=redo,
                                  gemm=bool(ms))  # fmt: skip
    return part, mats


def _embedding_backward_s(op: Embedding, hw: Hardware, plan: TrainingPlan) -> float:
    """Seconds of an embedding table's backward: a dense gradient of the table (its shard).

    The gradient is zero-filled, then every token's output gradient is added into its row.
    PyTorch's ``embedding_dense_backward`` (CUDA) sorts the ids and segment-sums the incoming
    gradient into a zero-initialised ``vocab x dim`` gradient: the table's gradient is written
    in full (the zero fill) and the touched rows read and written again; the incoming gradient
    is read once. Memory-bound, at the chip's sustained off-chip bandwidth, plus two launches;
    the gradient in the format gradients are reduced in (assumption: the parameters' own format
    where the stack keeps fp32 master weights in the optimizer only).
    """
    grad = bytes_for(1, plan.grad_dtype)
    n = math.prod(op.tokens)
    rows = min(n, op.vocab)
    moved = (
        op.vocab * op.dim * grad + n * op.dim * bytes_for(1, op.dtype) + 2 * rows * op.dim * grad
    )
    return moved / hw.offchip.sustained_bytes_per_s + 2 * hw.overheads.kernel_launch_s


def _parts(
    fwd: ModelMapping, hw: Hardware, plan: TrainingPlan, options: MapOptions
) -> tuple[Part, Part, Part]:
    """(one layer, embedding, head) per micro-batch, from a one-layer forward mapping."""
    graph = fwd.graph
    groups: dict[str, Part] = {"layer": Part(), "embed": Part(), "head": Part()}
    gemms: dict[str, list[Linear | MatMul]] = {"layer": [], "embed": [], "head": []}
    owner: dict[str, str] = {}
    seen = 0  # GEMMs of the layer so far, in forward order
    every_other = plan.selective == "every_other_gemm"
    kind = options.attention_kernel or hw.software.attention_kernel
    for km in fwd.kernels:
        k = km.kernel
        g = _group(k.name)
        t = km.cost.total_s
        ops = [graph.op(n) for n in k.ops]
        flops, params = float(k.matmul_flops), sum(o.params for o in ops)
        mats = [o for o in ops if isinstance(o, Linear | MatMul)]
        if k.kind == "collective":
            row = StepKernel(name=f"tp.{k.name}", phase="communication", calls=1.0, time_s=t)
            part = Part(coll_s=t, flops=flops, rows=(row,))
        elif mats:
            gemms[g].extend(mats)
            owner.update({o.name: g for o in mats})
            redo = g == "layer" and every_other and any((seen + i) % 2 for i in range(len(mats)))
            seen += len(mats) if g == "layer" else 0
            part = kernel_part(k.name, t, flops=flops, selective=redo, gemm=True)
        elif att := next((o for o in ops if isinstance(o, Attention)), None):
            if plan.attention == "unfused":
                part, sub_mats = _unfused(att, hw, plan, options)
                gemms[g].extend(sub_mats)
                owner.update({o.name: g for o in sub_mats})
                part = replace(part, flops=part.flops or flops)
            else:
                part = kernel_part(k.name, t, flops=flops, bwd_s=backward_factor(kind) * t,
                                   gemm=True)  # fmt: skip
        elif emb := next((o for o in ops if isinstance(o, Embedding)), None):
            part = kernel_part(k.name, t, bwd_s=_embedding_backward_s(emb, hw, plan))
        else:
            if plan.sequence_parallel and g == "layer":
                t /= plan.tensor_parallel
            redo = every_other and g == "layer"
            part = kernel_part(k.name, t, flops=flops, bwd_s=VECTOR_BACKWARD * t, selective=redo)
        groups[g] = groups[g] + replace(part, params=params)
    all_gemms = [o for ops in gemms.values() for o in ops]
    if all_gemms:
        bwd = map_model(backward_gemms(all_gemms), hw, options)
        for km in bwd.kernels:
            g = owner[km.kernel.name.rsplit(".", 1)[0]]
            t, f = km.cost.total_s, float(km.kernel.matmul_flops)
            row = StepKernel(name=km.kernel.name, phase="backward", calls=1.0, time_s=t, flops=f)
            groups[g] = groups[g] + Part(bwd_s=t, rows=(row,))
    return groups["layer"], groups["embed"], groups["head"]


def _stage(layer: Part, embed: Part, head: Part, layers: int, p: int) -> Part:
    """The busiest pipeline stage of one micro-batch.

    Layers are split as evenly as possible (the first stages take the remainder), the embedding
    sits on the first stage and the LM head on the last.
    """
    if p == 1:
        return layer.scaled(layers) + embed + head
    base, extra = divmod(layers, p)
    first = layer.scaled(base + (extra > 0)) + embed
    last = layer.scaled(base + (extra > p - 1)) + head
    middle = layer.scaled(base + (extra > 1))
    stages = (first, last, middle) if p > 2 else (first, last)
    return max(stages, key=lambda s: s.fwd_s + s.bwd_s)


def _dp(
    st: Part, hw: Hardware, plan: TrainingPlan, dtype: str
) -> tuple[float, float, tuple[StepKernel, ...]]:
    """(exposed, hidden) seconds of the data-parallel collectives of one step, and their rows."""
    d, p, m = plan.data_parallel, plan.pipeline_parallel, plan.micro_batches
    stride = plan.tensor_parallel * p
    grads = st.params * bytes_for(1, plan.grad_dtype)
    if plan.dp_sharding == "none":
        rs, ag, kind = net_s(grads, d, hw, stride, "ar"), 0.0, "ar"
    else:
        rs, kind = net_s(grads, d, hw, stride, "rs"), "rs"
        ag = net_s(st.params * bytes_for(1, dtype), d, hw, stride, "rs")
    # NOTE: fully sharded parameters are gathered for each micro-batch's forward and backward
    # unless the job is pipelined (then kept from the first forward to the last backward).
    regather = plan.dp_sharding == "full" and p == 1
    n_fwd, n_bwd = (m, m) if regather else (1, 0)
    total = rs + ag * (n_fwd + n_bwd)
    red = "dp.all_reduce" if kind == "ar" else "dp.reduce_scatter"
    rows: tuple[StepKernel, ...] = ()
    if rs > 0:
        rows = (StepKernel(name=red, phase="communication", calls=1.0, time_s=rs),)
    if ag > 0:
        gather = StepKernel(name="dp.all_gather", phase="communication", calls=n_fwd + n_bwd,
                            time_s=ag)  # fmt: skip
        rows += (gather,)
    if not plan.dp_overlap:
        return total, 0.0, rows
    # NOTE: each gather hides under its micro-batch's forward (backward); the reduction under
    # the last backward, whose last bucket is ready only when it ends: never hidden.
    last = net_s(min(grads, DP_BUCKET_BYTES), d, hw, stride, kind)
    exposed = n_fwd * max(0.0, ag - st.fwd_s) + max(0.0, n_bwd - 1) * max(0.0, ag - st.bwd_s)
    exposed += max(last, rs + ag * min(n_bwd, 1) - st.bwd_s)
    exposed = min(exposed, total)
    return exposed, total - exposed, rows


def _optimizer(params: float, hw: Hardware, plan: TrainingPlan) -> tuple[StepKernel, ...]:
    """The optimizer step's memory-bound kernels over ``params`` parameters of this chip."""
    bw = hw.offchip.sustained_bytes_per_s
    adam = StepKernel(name="optimizer.adamw", phase="optimizer", calls=1.0,
                      time_s=params * ADAM_BYTES_PER_PARAM / bw)  # fmt: skip
    clip = StepKernel(name="optimizer.clip_grad_norm", phase="optimizer", calls=1.0,
                      time_s=params * CLIP_BYTES_PER_PARAM / bw)  # fmt: skip
    rows = (clip, adam) if plan.clip_grad_norm else (adam,)
    return (*rows, amax_update(hw)) if plan.fp8 else rows


def _with_loss(g: Graph) -> Graph:
    """The forward graph with the loss after the LM head: logits cast to fp32, cross-entropy.

    Both training stacks the corpus cites upcast the logits before the loss: torchtitan
    (train.py @9dec370, ``cross_entropy(pred.flatten(0, 1).float(), labels)``) and
    Megatron-LM (``vocab_parallel_cross_entropy(output.float(), labels)`` unless
    ``--fp16-lm-cross-entropy``). The cross-entropy is a log-softmax over the vocabulary (this
    chip's vocab-parallel share): a row reduction read and written in fp32; its backward
    (softmax minus the one-hot) reads and writes about twice that (``VECTOR_BACKWARD``).
    Whether the cast fuses into the head's epilogue or the softmax is the stack's fusion rules.
    """
    head = g.op("lm_head")
    shape = head.output_shape()
    up = Quantize(name="loss.upcast", inputs=("lm_head",), shape=shape, to="fp32",
                  dtype=head.dtype, layer_type="embedding")  # fmt: skip
    ce = Softmax(name="loss.cross_entropy", inputs=("loss.upcast",), shape=shape, dtype="fp32",
                 layer_type="embedding")  # fmt: skip
    return replace(g, ops=(*g.ops, up, ce))


def training_step(
    cfg: TransformerConfig,
    hw: Hardware,
    plan: TrainingPlan,
    *,
    seq: int,
    dtype: str = "bf16",
    options: MapOptions | None = None,
) -> TrainingStep:
    """Predict one optimizer step of training ``cfg`` under ``plan`` on ``hw``.

    Args:
        cfg: The decoder.
        hw: One chip's profile (its links, and its scale-out network when it has one).
        plan: Parallel configuration and schedule.
        seq: Training sequence length, tokens.
        dtype: Activation and weight format of the matrix work.
        options: The software stack's mapping options (attention class, launch, fusion);
            None: the mapper's defaults.

    Returns:
        The :class:`TrainingStep` of the busiest chip.

    Raises:
        WorkbenchError: A plan the model cannot be split by, or several chips without links
            (their collectives would take forever: never a time).
    """
    ic = hw.interconnect
    if plan.chips > 1 and (ic.links <= 0 or ic.link_bandwidth_bytes_per_s <= 0):
        raise WorkbenchError(
            f"training plan: {plan.chips} chips, but {hw.name} has no chip-to-chip links"
        )
    if plan.pipeline_parallel > cfg.layers:
        raise WorkbenchError(
            f"training plan: {cfg.layers} layers cannot fill {plan.pipeline_parallel} stages"
        )
    opts = options or MapOptions()
    if plan.fp8:
        opts = replace(opts, dtype_overrides=opts.dtype_overrides + fp8_overrides(dtype))
    one = replace(cfg, layers=1)
    g = decoder_graph(one, "prefill", batch=plan.micro_batch, seq=seq, dtype=dtype,
                      tensor_parallel=plan.tensor_parallel)  # fmt: skip
    fwd = map_model(_with_loss(g), hw, opts)
    layer, embed, head = _parts(fwd, hw, plan, opts)
    if plan.fp8:
        layer = layer + fp8_casts(fwd, hw)
    if plan.compute_efficiency < 1.0:  # NOTE: the stack's fitted step efficiency
        slow_by = 1.0 / plan.compute_efficiency
        layer, embed, head = (x.slowed(slow_by) for x in (layer, embed, head))
    p, v, m, r = plan.pipeline_parallel, plan.interleave, plan.micro_batches, plan.recompute
    st = _stage(layer, embed, head, cfg.layers, p)
    compute = st.fwd_s * (1.0 + r) + st.bwd_s + (1.0 - r) * st.sel_s
    coll = st.coll_s * (2.0 + r)
    hidden = 0.0
    if plan.tp_overlap:
        exposed = max(0.0, coll - st.gemm_fwd_s * (3.0 + r))
        coll, hidden = exposed, coll - exposed
    act = plan.micro_batch * seq * cfg.hidden * bytes_for(1, dtype) / plan.tensor_parallel
    send = 0.0 if p == 1 else p2p_s(act, hw, plan.tensor_parallel)
    p2p = 2 * v * send
    if plan.pp_overlap:
        p2p, hidden = 0.0, hidden + p2p
    slow = plan.overlap_slowdown / (1.0 + plan.overlap_slowdown)
    t_mb = compute + coll + p2p + slow * hidden
    dp, dp_hidden, dp_rows = _dp(st, hw, plan, dtype)
    shard = plan.data_parallel if plan.dp_sharding != "none" else 1
    opt_rows = _optimizer(st.params / shard, hw, plan)
    w_rows = weight_casts(fwd, hw, math.ceil(cfg.layers / p)) if plan.fp8 else ()
    pp_rows = (StepKernel(name="pp.send_recv", phase="communication", calls=2.0 * v * m,
                          time_s=send),) if send > 0 else ()  # fmt: skip
    return TrainingStep(
        compute_s=m * compute + sum(k.total_s for k in w_rows),
        tp_comm_s=m * coll,
        pp_comm_s=m * p2p,
        bubble_s=(p - 1) / v * t_mb,
        dp_comm_s=dp,
        overlap_s=slow * (m * hidden + dp_hidden),
        optimizer_s=sum(k.total_s for k in opt_rows),
        flops=m * (st.flops * (3.0 + r) + (1.0 - r) * st.sel_flops),
        selective_flops=m * (1.0 - r) * st.sel_flops,
        mappings=(fwd,),
        kernels=step_rows(st, m, r) + w_rows + pp_rows + dp_rows + opt_rows,
    )
