"""One optimizer step of decoder training on one chip of a TP x PP x DP job, as mechanisms.

The busiest pipeline stage sets the pace. Per micro-batch it runs its layers' forward, backward
and rematerialised forward, and the tensor-parallel collectives of each; the pipeline adds its
bubble; the data-parallel gradient reduction and the optimizer step close the step::

    t_mb   = sum over the stage's kernels: forward + backward + recompute x forward
             (+ TP collectives: 2 per layer forward, 2 backward, Shoeybi et al. arXiv:1909.08053
             Section 3; exposed unless overlapped with the GEMMs) (+ pipeline send/receive)
    pipe   = (m + (p - 1) / v) x t_mb         bubble (p - 1) / (v m): Narayanan et al. SC'21,
                                              arXiv:2104.04473 Section 2.2 (v = 1: 1F1B)
    dp     = gradient all-reduce (or reduce-scatter + parameter all-gather when sharded) of the
             stage's parameters; overlapped: only what the last micro-batch's backward (and, for
             the all-gather, the first forward) cannot hide, and at least the last 25 MB bucket
    opt    = Adam over the chip's parameters, memory-bound: 30 bytes per parameter (fp32 master
             weight, gradient, m, v read; weight, m, v and the 16-bit copy written; the states of
             Rajbhandari et al. ZeRO, arXiv:1910.02054 Section 3.1)
    step   = pipe + dp + opt

What overlaps is the plan's, per source: Megatron-LM of 2021 runs the tensor-parallel
all-reduces, the pipeline sends and (with its "local" DDP) the gradient all-reduce serially;
MegaScale (Jiang et al. NSDI'24, arXiv:2402.15627, Table 3) measures TP, PP and DP overlap as
optimisations added on top of that Megatron-LM, and PyTorch DDP overlaps bucketed all-reduces
with the backward. A collective whose group leaves a node (``hw.interconnect.scale_out``) runs
over the node's NICs, one ring per NIC.

The backward pass is costed, not assumed: each forward GEMM ``Y[M,N] = X[M,K] W[K,N]`` becomes
two GEMMs mapped through the mapper, ``dX = dY W^T`` (M x N by N x K) and ``dW = X^T dY``
(K x M by M x N); fused attention's backward is 2.5x its forward (five block GEMMs against two:
Dao, FlashAttention-2, arXiv:2307.08691 Section 4.1 FLOP count); every other kernel (norms,
residual adds, embedding gather) reads the incoming gradient and its saved input and writes a
gradient: 2x its forward time (assumption: about twice the bytes of the forward). With sequence
parallelism the norms and residual adds run on 1/t of the tokens (Korthikanti et al.
arXiv:2205.05198 Section 4.2.2) and the all-reduces become reduce-scatter + all-gather pairs of
the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from workbench.cost.collective import all_gather_s, all_reduce_s
from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.ir import Linear
from workbench.ir.dtypes import bytes_for
from workbench.ir.ops_gemm import Attention, MatMul
from workbench.mapper import ModelMapping, map_model
from workbench.models import TransformerConfig, decoder_graph
from workbench.options import MapOptions
from workbench.platform._training_graphs import backward_gemms, unfused_attention

__all__ = [
    "ADAM_BYTES_PER_PARAM",
    "DP_BUCKET_BYTES",
    "TrainingPlan",
    "TrainingStep",
    "training_step",
]

#: Bytes an Adam step moves per parameter (mixed precision, see the module docstring).
ADAM_BYTES_PER_PARAM = 30.0
#: Fused attention backward over forward time (five block GEMMs against two, FA2 Section 4.1).
ATTENTION_BACKWARD = 2.5
#: Backward over forward time of a memory-bound kernel (assumption: twice the bytes).
VECTOR_BACKWARD = 2.0
#: Gradient bucket reduced after the backward ends, bytes: PyTorch DDP's bucket_cap_mb default,
#: 25 MB (pytorch/pytorch issue 118421); used for every overlapped reduction (assumption for
#: XLA's and FSDP's per-layer reductions, whose last layer is of that order).
DP_BUCKET_BYTES = 25e6
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
        tp_overlap: Tensor-parallel collectives overlap the GEMMs (hidden up to GEMM time).
        pp_overlap: Pipeline sends and receives are asynchronous (hidden).
        dp_overlap: Gradient reduction overlaps the last micro-batch's backward.
        dp_sharding: "none" (all-reduce), "optimizer" (ZeRO-1: reduce-scatter + all-gather,
            optimizer states sharded) or "full" (FSDP: parameters sharded as well).
        grad_dtype: Format the gradients are reduced in.
        attention: "fused" (FlashAttention-style kernel) or "unfused" (scores materialised:
            QK^T batched GEMM, scale-mask-softmax, dropout, PV batched GEMM, as Megatron-LM
            ran it in 2021, arXiv:2104.04473 Section 4.2).
    """

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    interleave: int = 1
    sequence_parallel: bool = False
    recompute: float = 0.0
    tp_overlap: bool = False
    pp_overlap: bool = False
    dp_overlap: bool = False
    dp_sharding: str = "none"
    grad_dtype: str = "fp32"
    attention: str = "fused"

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
        optimizer_s: The optimizer step.
        flops: Matrix FLOPs the chip executes per step (recompute included).
        mappings: Forward mappings of one micro-batch (one layer and the model's edges).
    """

    compute_s: float
    tp_comm_s: float
    pp_comm_s: float
    bubble_s: float
    dp_comm_s: float
    optimizer_s: float
    flops: float
    mappings: tuple[ModelMapping, ...] = field(default=())

    @property
    def step_s(self) -> float:
        """Time of one optimizer step, seconds."""
        return (
            self.compute_s
            + self.tp_comm_s
            + self.pp_comm_s
            + self.bubble_s
            + self.dp_comm_s
            + self.optimizer_s
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Part:
    """Per micro-batch times of a group of kernels (one layer, or the embedding or head)."""

    fwd_s: float = 0.0
    bwd_s: float = 0.0
    gemm_fwd_s: float = 0.0
    coll_s: float = 0.0  # forward collectives (backward has as many)
    flops: float = 0.0  # forward matrix FLOPs
    params: int = 0

    def __add__(self, o: _Part) -> _Part:
        return _Part(
            fwd_s=self.fwd_s + o.fwd_s,
            bwd_s=self.bwd_s + o.bwd_s,
            gemm_fwd_s=self.gemm_fwd_s + o.gemm_fwd_s,
            coll_s=self.coll_s + o.coll_s,
            flops=self.flops + o.flops,
            params=self.params + o.params,
        )

    def scaled(self, n: float) -> _Part:
        return _Part(
            fwd_s=self.fwd_s * n,
            bwd_s=self.bwd_s * n,
            gemm_fwd_s=self.gemm_fwd_s * n,
            coll_s=self.coll_s * n,
            flops=self.flops * n,
            params=round(self.params * n),
        )


def _parts(fwd: ModelMapping, hw: Hardware, plan: TrainingPlan) -> tuple[_Part, _Part, _Part]:
    """(one layer, embedding, head) per micro-batch, from a one-layer forward mapping."""
    graph = fwd.graph
    groups: dict[str, _Part] = {"layer": _Part(), "embed": _Part(), "head": _Part()}
    gemms: dict[str, list[Linear | MatMul]] = {"layer": [], "embed": [], "head": []}
    owner: dict[str, str] = {}
    for km in fwd.kernels:
        k = km.kernel
        g = (
            "layer"
            if k.name.startswith("layers.")
            else "embed"
            if k.name.startswith("embed")
            else "head"
        )
        t = km.cost.total_s
        ops = [graph.op(n) for n in k.ops]
        part = _Part(flops=float(k.matmul_flops), params=sum(o.params for o in ops))
        if k.kind == "collective":
            part = replace(part, coll_s=t)
        elif any(isinstance(o, Linear | MatMul) for o in ops):
            mats = [o for o in ops if isinstance(o, Linear | MatMul)]
            gemms[g].extend(mats)
            owner.update({o.name: g for o in mats})
            part = replace(part, fwd_s=t, gemm_fwd_s=t)
        elif att := next((o for o in ops if isinstance(o, Attention)), None):
            if plan.attention == "unfused":
                part = replace(part, params=0)
                sub = map_model(unfused_attention(att), hw, MapOptions())
                for skm in sub.kernels:
                    sops = [sub.graph.op(x) for x in skm.kernel.ops]
                    mats = [o for o in sops if isinstance(o, MatMul)]
                    ts = skm.cost.total_s
                    gemms[g].extend(mats)
                    owner.update({o.name: g for o in mats})
                    extra = (
                        _Part(fwd_s=ts, gemm_fwd_s=ts)
                        if mats
                        else _Part(fwd_s=ts, bwd_s=VECTOR_BACKWARD * ts)
                    )
                    part = part + extra
            else:
                part = replace(part, fwd_s=t, bwd_s=ATTENTION_BACKWARD * t, gemm_fwd_s=t)
        else:
            if plan.sequence_parallel and g == "layer":
                t /= plan.tensor_parallel
            part = replace(part, fwd_s=t, bwd_s=VECTOR_BACKWARD * t)
        groups[g] = groups[g] + part
    all_gemms = [o for ops in gemms.values() for o in ops]
    if all_gemms:
        bwd = map_model(backward_gemms(all_gemms), hw, MapOptions())
        for km in bwd.kernels:
            g = owner[km.kernel.name.rsplit(".", 1)[0]]
            groups[g] = groups[g] + _Part(bwd_s=km.cost.total_s)
    return groups["layer"], groups["embed"], groups["head"]


def _stage(layer: _Part, embed: _Part, head: _Part, layers: int, p: int) -> _Part:
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


def _spans_nodes(hw: Hardware, stride: int, group: int) -> bool:
    """Whether a group of ``group`` chips, ``stride`` chips apart, leaves one node."""
    so = hw.interconnect.scale_out
    return so is not None and stride * group > so.chips_per_node


def _net_s(nbytes: float, chips: int, hw: Hardware, stride: int, kind: str) -> float:
    """All-reduce (``"ar"``) or reduce-scatter/all-gather (``"rs"``) of ``nbytes`` per chip."""
    if chips <= 1 or nbytes <= 0:
        return 0.0
    so = hw.interconnect.scale_out
    if so is not None and _spans_nodes(hw, stride, chips):
        # NOTE: one NCCL ring per NIC; each chip's share of the node's NICs carries its ring.
        bw = so.bandwidth_bytes_per_s * so.sustained_fraction
        f = 2.0 if kind == "ar" else 1.0
        return f * (chips - 1) / chips * nbytes / bw + f * (chips - 1) * so.latency_s
    if kind == "ar":
        return all_reduce_s(nbytes, chips, hw)[0]
    return all_gather_s(nbytes, chips, hw)


def _p2p_s(nbytes: float, hw: Hardware, plan: TrainingPlan) -> float:
    """One pipeline send (or receive) of ``nbytes`` to the next stage, seconds."""
    ic = hw.interconnect
    if _spans_nodes(hw, plan.tensor_parallel, 2):
        so = ic.scale_out
        assert so is not None  # NOTE: _spans_nodes checked it
        return nbytes / (so.bandwidth_bytes_per_s * so.sustained_fraction) + so.latency_s
    bw = ic.link_bandwidth_bytes_per_s * ic.sustained_fraction * max(ic.links, 1)
    return nbytes / bw + ic.latency_s if bw > 0 else float("inf")


def training_step(
    cfg: TransformerConfig, hw: Hardware, plan: TrainingPlan, *, seq: int, dtype: str = "bf16"
) -> TrainingStep:
    """Predict one optimizer step of training ``cfg`` under ``plan`` on ``hw``.

    Args:
        cfg: The decoder.
        hw: One chip's profile (its links, and its scale-out network when it has one).
        plan: Parallel configuration and schedule.
        seq: Training sequence length, tokens.
        dtype: Activation and weight format of the matrix work.

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
    one = replace(cfg, layers=1)
    g = decoder_graph(one, "prefill", batch=plan.micro_batch, seq=seq, dtype=dtype,
                      tensor_parallel=plan.tensor_parallel)  # fmt: skip
    fwd = map_model(g, hw, MapOptions())
    layer, embed, head = _parts(fwd, hw, plan)
    p, v, m, r = plan.pipeline_parallel, plan.interleave, plan.micro_batches, plan.recompute
    st = _stage(layer, embed, head, cfg.layers, p)
    compute = st.fwd_s * (1.0 + r) + st.bwd_s
    coll = st.coll_s * (2.0 + r)
    if plan.tp_overlap:
        coll = max(0.0, coll - st.gemm_fwd_s * (3.0 + r))
    act = plan.micro_batch * seq * cfg.hidden * bytes_for(1, dtype) / plan.tensor_parallel
    p2p = 0.0 if p == 1 or plan.pp_overlap else 2 * v * _p2p_s(act, hw, plan)
    t_mb = compute + coll + p2p
    stride = plan.tensor_parallel * p
    grads = st.params * bytes_for(1, plan.grad_dtype)
    weights = st.params * bytes_for(1, dtype)
    d = plan.data_parallel
    if plan.dp_sharding == "none":
        rs, ag = _net_s(grads, d, hw, stride, "ar"), 0.0
    else:
        rs, ag = _net_s(grads, d, hw, stride, "rs"), _net_s(weights, d, hw, stride, "rs")
    if plan.dp_overlap:
        # NOTE: buckets reduce while the last micro-batch's backward runs; the last bucket
        # is ready only when it ends, so its reduction is always exposed.
        kind = "ar" if plan.dp_sharding == "none" else "rs"
        last = _net_s(min(grads, DP_BUCKET_BYTES), d, hw, stride, kind)
        rs, ag = max(last, rs - st.bwd_s), max(0.0, ag - st.fwd_s)
    shard = d if plan.dp_sharding != "none" else 1
    opt = st.params / shard * ADAM_BYTES_PER_PARAM / hw.offchip.sustained_bytes_per_s
    return TrainingStep(
        compute_s=m * compute,
        tp_comm_s=m * coll,
        pp_comm_s=m * p2p,
        bubble_s=(p - 1) / v * t_mb,
        dp_comm_s=rs + ag,
        optimizer_s=opt,
        flops=m * st.flops * (3.0 + r),
        mappings=(fwd,),
    )
