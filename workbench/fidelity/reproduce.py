"""Reproduce one published row through the real mapper, and its independent roofline floor.

Each setup is rebuilt as an IR graph (one ``Linear`` for a GEMM, one ``Attention`` for a kernel
benchmark, a preset or published decoder for whole models, ResNet-50 for CNN rows) and mapped
with :func:`workbench.map_model`. The step time is turned into the row's metric:

* GEMM: ``2 m n k / time`` (FLOP/s); when the benchmark writes C wider than its operands
  (``out_dtype``, e.g. cuBLASLt FP8 writing fp16), the conversion is a ``Quantize`` to that
  format, fused into the GEMM's epilogue, so C is stored (and floored) at its real width.
* stream (a STREAM copy): bytes read + written / time (B/s).
* Attention: the source's FLOP count (``4 b h s^2 d``, halved for causal when the source does)
  over time (FLOP/s); a forward+backward row counts 3.5 forwards of FLOPs (the backward is 2.5,
  as the source counts it) and costs the forward plus the class's backward, 2.5 forwards at the
  class's backward efficiency (``backward_factor``, as in training). The row's stack names the
  implementation class that is costed (FA3, FA2 or CK, Triton:
  workbench/cost/attention_class.py), whatever the profile ships.
* Every row is mapped with its stack's figures (``stacks/<row.stack>.yaml``,
  :meth:`workbench.hw.stack.Stack.map_options`): step overhead, GQA K/V sharing, attention
  class, CUDA-graph launch, and the attention format under FP8 GEMMs; a run that takes a request
  in (prefill, generate, serving) pays the stack's ``request_overhead_s`` once.
* decode: one step's time (s per token), or ``batch / step time`` when the row is in tokens/s;
  prefill: the prefill's time (time to first token). A prefill's LM head runs on every prompt
  position, or on each sequence's last one where the stack says so (``prefill_logits: last``:
  the serving runtimes gather the last hidden state before the head).
* generate: prefill + ``(output_len - 1)`` decode steps at the mean context (s); every step pays
  the software stack's host time outside its kernels (the stack's ``step_overhead_s``, else the
  profile's ``overheads.step_s``).
* serving (static batch): ``batch x output_len / (prefill + (output_len - 1) x decode step at the
  mean context)`` (output tokens/s per replica; divided by the tensor-parallel chips when the row
  is per chip).
* training: one optimizer step of the row's parallel configuration on its busiest chip
  (:func:`workbench.platform.training.training_step`: forward, backward as dgrad + wgrad GEMMs,
  recompute, tensor-parallel collectives, pipeline bubble and sends, data-parallel gradient
  reduction, optimizer), its kernels mapped with the row's stack (attention class, launch,
  fusion rules, the attention format under FP8 GEMMs) and the stack's training figures (its
  selective recomputation policy where the row's source ran it, the compute slowdown under
  overlapped collectives: workbench/fidelity/_reproduce_training.py); MFU = counted FLOPs per
  chip / (step time x peak), counted as the source counts them (PaLM model FLOPs, or Megatron
  hardware FLOPs with the recomputed forward); a row in tokens/s/chip gets global batch x seq /
  chips / step time.
* cnn: ResNet-50's forward at the row's batch plus the stack's host time per run (its
  ``step_overhead_s``, else the profile's ``overheads.step_s``: a forward pass is a step);
  ``batch / time`` (images/s), or the time itself for a row in ms.
* collective, encoder, ratio: workbench/fidelity/reproduce_kinds.py.

The **floor** is computed without the cost model: ``max(FLOPs / matrix peak, compulsory bytes /
off-chip bandwidth)`` with datasheet figures, where compulsory bytes are the operands and result
(GEMM, attention) or every weight and KV-cache tensor read once (models). A prediction faster
than its floor is a modelling error.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.cost.attention_class import BACKWARD_FLOPS, backward_factor
from workbench.cost.model import Bottleneck
from workbench.fidelity.schema import (
    AttentionSetup,
    CorpusError,
    GemmSetup,
    ModelSetup,
    PublishedRow,
    StreamSetup,
)
from workbench.hw.schema import Hardware
from workbench.hw.stack import (
    Stack,
    decode_hardware,
    load_stack,
    patched_stacks,
    prefill_all_logits,
    with_step_overhead,
)
from workbench.ir import Attention, Elementwise, Graph, Linear
from workbench.ir.dtypes import bytes_for
from workbench.ir.ops_vector import Quantize
from workbench.mapper import ModelMapping, host_step_s, map_model
from workbench.models import PRESETS, TransformerConfig, decoder_graph, resnet50_graph
from workbench.models.footprint import graph_footprint
from workbench.options import MapOptions

__all__ = ["Reproduction", "fit_request_overhead", "fit_step_overhead", "reproduce"]

_CLASSES = {"sync": "overhead", "capacity": "bandwidth"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Reproduction:
    """The workbench's figure for one row.

    Attributes:
        predicted: The row's metric as predicted, SI units (s, FLOP/s, items/s, fraction).
        bound: The same metric at the roofline floor (the best any machine could do).
        time_s: Predicted time of the reproduced work, seconds.
        floor_s: Roofline floor of that work, seconds.
        bottleneck: Predicted class (compute, bandwidth, overhead, interconnect): the class of
            the kernels holding most of the time.
        memory_fits: LLM rows: whether one chip's weights plus the KV cache of every sequence
            of the batch at its final context fit in its off-chip memory (False: the runtime
            cannot have held the whole static batch; it ran fewer sequences at once, paged or
            evicted, which the reproduction does not model). None for other rows.
    """

    predicted: float
    bound: float
    time_s: float
    floor_s: float
    bottleneck: str
    memory_fits: bool | None = None

    @classmethod
    def rate(cls, work: float, time_s: float, floor_s: float, bottleneck: str) -> Reproduction:
        """A rate row: ``work`` (FLOP, bytes...) per second in ``time_s`` and at the floor."""
        return cls(
            predicted=work / time_s,
            bound=work / floor_s,
            time_s=time_s,
            floor_s=floor_s,
            bottleneck=bottleneck,
        )


def _class(
    mappings: tuple[ModelMapping, ...], repeats: tuple[int, ...] = (), host_s: float = 0.0
) -> str:
    """The bottleneck class holding most of the time over the mappings (each run ``repeats``).

    Every kernel's time counts under its class, and a serving step's host time outside its
    kernels (``step_overhead_s``, or ``host_s`` paid beside the mappings) under ``overhead``.
    """
    time: dict[str, float] = {"overhead": host_s} if host_s else {}
    for i, m in enumerate(mappings):
        n = repeats[i] if i < len(repeats) else 1
        for k in m.kernels:
            cls = Bottleneck.parse(k.cost.bottleneck).kind
            cls = _CLASSES.get(cls, cls)
            time[cls] = time.get(cls, 0.0) + k.cost.total_s * n
        if m.step_overhead_s:
            time["overhead"] = time.get("overhead", 0.0) + m.step_overhead_s * n
    return max(time, key=lambda c: time[c]) if time else "compute"


def _peak(hw: Hardware, dtype: str) -> float:
    return hw.peak_flops(dtype) or hw.vector_flops(dtype)


def _graph_floor(graph: Graph, hw: Hardware, dtype: str) -> float:
    """max(matmul FLOPs / peak, every weight and cache tensor once / off-chip bandwidth), s."""
    nbytes = sum(t.nbytes for op in graph.ops for t in op.weight_tensors())
    return max(graph.matmul_flops / _peak(hw, dtype), nbytes / hw.offchip.bandwidth_bytes_per_s)


def _gemm(s: GemmSetup, hw: Hardware, stack: Stack) -> Reproduction:
    op = Linear(
        name="gemm", inputs=("x",), tokens=(s.m,), in_features=s.k, out_features=s.n, dtype=s.dtype
    )
    ops: tuple[Linear | Quantize, ...] = (op,)
    out = s.out_dtype or s.dtype
    if out != s.dtype:
        # NOTE: the library converts the fp32 accumulators to C's format in the epilogue (e.g.
        # superbench cublaslt_gemm.cu runs FP8 as <fp8e4m3, fp8e4m3, fp16>): the conversion
        # fuses into the GEMM, which then stores C at out's width.
        ops = (op, Quantize(name="c", inputs=("gemm",), shape=(s.m, s.n), to=out, dtype=s.dtype))
    m = map_model(Graph(name="gemm", ops=ops), hw, stack.map_options())
    flops = 2.0 * s.m * s.n * s.k
    nbytes = bytes_for(s.m * s.k + s.k * s.n, s.dtype) + bytes_for(s.m * s.n, out)
    floor = max(flops / _peak(hw, s.dtype), nbytes / hw.offchip.bandwidth_bytes_per_s)
    return Reproduction.rate(flops, m.time_s, floor, _class((m,)))


def _attention(s: AttentionSetup, hw: Hardware, stack: Stack) -> Reproduction:
    op = Attention(
        name="attn",
        inputs=("q", "k", "v"),
        batch=s.batch,
        heads=s.heads,
        kv_heads=s.kv_heads,
        q_len=s.seq,
        kv_len=s.seq,
        head_dim=s.head_dim,
        causal=s.causal,
        dtype=s.dtype,
    )
    options = stack.map_options()
    m = map_model(Graph(name="attn", ops=(op,)), hw, options)
    both = s.passes == "forward_backward"
    passes = 1.0 + BACKWARD_FLOPS if both else 1.0
    counted = 4.0 * s.batch * s.heads * s.seq * s.seq * s.head_dim * passes
    if s.causal and s.flop_convention == "causal_half":
        counted /= 2
    q_o = 2 * s.batch * s.seq * s.heads * s.head_dim
    k_v = 2 * s.batch * s.seq * s.kv_heads * s.head_dim
    # NOTE: the backward also reads dO and writes dQ, dK, dV: as many bytes again as q, k, v, o.
    nbytes = bytes_for(q_o + k_v, s.dtype) * (2 if passes > 1 else 1)
    floor = max(
        op.matmul_flops * passes / _peak(hw, s.dtype), nbytes / hw.offchip.bandwidth_bytes_per_s
    )
    kind = options.attention_kernel or hw.software.attention_kernel
    time = m.time_s * (1.0 + backward_factor(kind) if both else 1.0)
    return Reproduction.rate(counted, time, floor, _class((m,)))


def _stream(s: StreamSetup, hw: Hardware, stack: Stack) -> Reproduction:
    op = Elementwise(name="copy", inputs=("a",), op="identity", shape=(s.elements,), dtype=s.dtype)
    m = map_model(Graph(name="stream", ops=(op,)), hw, stack.map_options())
    moved = float(op.bytes_read + op.bytes_written)
    floor = moved / hw.offchip.bandwidth_bytes_per_s
    return Reproduction.rate(moved, m.time_s, floor, _class((m,)))


def _config(s: ModelSetup) -> TransformerConfig:
    """The preset, or the published architecture built as a decoder.

    A published architecture gets RoPE positions and RMSNorm (SwiGLU) or LayerNorm (GELU/ReLU);
    those choices change FLOPs and bytes by well under 1%.
    """
    if s.model is not None:
        cfg = PRESETS.get(s.model)
        if cfg is None:
            raise CorpusError(f"unknown model preset {s.model!r}")
        return cfg
    a = s.arch
    assert a is not None  # NOTE: the schema guarantees exactly one of model/arch
    return TransformerConfig(
        name=a.name,
        hidden=a.hidden,
        layers=a.layers,
        heads=a.heads,
        kv_heads=a.kv_heads,
        head_dim=a.head_dim,
        ffn=a.ffn,
        vocab=a.vocab,
        activation=a.activation,
        norm="rmsnorm" if a.activation == "swiglu" else "layernorm",
        position="rope",
        max_seq=a.max_seq,
    )


def _decoder(
    s: ModelSetup, hw: Hardware, stack: Stack, phase: str, batch: int, context: int
) -> ModelMapping:
    cfg = _config(s)
    g = decoder_graph(
        cfg,
        phase,
        batch=batch,
        seq=s.seq if phase == "prefill" else None,
        context=context if phase == "decode" else None,
        dtype=s.dtype,
        weight_dtype=s.weight_dtype,
        tensor_parallel=s.tensor_parallel,
        all_logits=prefill_all_logits(stack),
    )
    # NOTE: tensor-parallel all-reduces run after their GEMM, not overlapped with it
    # (MapOptions.overlap_collectives stays off): the measured decode stacks issue them serially,
    # e.g. TensorRT-LLM's RowLinear of the 2023 releases runs matmul, then allreduce(x, tp_group)
    # (NVIDIA/TensorRT-LLM tensorrt_llm/layers/linear.py); GEMM+all-reduce fusion came later.
    # NOTE: a stack whose context (prefill) attention runs wider than its FP8 GEMMs
    # (fp8_attention_dtype) maps it as a dtype override of the prefill's attention kernels only;
    # decode attention reads the FP8 K/V cache as stored.
    wide = stack.fp8_attention_dtype.value
    fp8 = s.dtype.startswith("fp8") and phase == "prefill"
    over = (("*attn.sdpa", wide),) if wide and fp8 else ()
    chip = decode_hardware(stack, hw) if phase == "decode" else hw
    return map_model(g, chip, stack.map_options(MapOptions(dtype_overrides=over)))


def _memory_fits(s: ModelSetup, hw: Hardware) -> bool:
    """One chip's weights + KV cache of the whole batch at ``seq + output_len`` vs its memory.

    Activations are left out: serving runtimes chunk the prefill, so the weights and the cache
    are what must stay resident.
    """
    g = decoder_graph(
        _config(s),
        "decode",
        batch=s.batch,
        context=s.seq + s.output_len,
        dtype=s.dtype,
        weight_dtype=s.weight_dtype,
        tensor_parallel=s.tensor_parallel,
    )
    fp = graph_footprint(g, hw, s.weight_dtype)
    return fp.weights_bytes + fp.kv_bytes <= fp.capacity_bytes


def _cnn(s: ModelSetup, hw: Hardware, stack: Stack, metric: str) -> Reproduction:
    """ResNet-50 forward at the row's batch: its kernels plus the stack's per-run host time."""
    g = resnet50_graph(batch=s.batch, dtype=s.dtype)
    options = stack.map_options()
    m = map_model(g, hw, options)
    host = host_step_s(hw, options)  # NOTE: a forward pass is a step
    time = m.time_s + host
    floor = _graph_floor(g, hw, s.dtype)
    timed = metric == "time"  # NOTE: a row in ms is the latency of one batch
    return Reproduction(
        predicted=time if timed else s.batch / time,
        bound=floor if timed else s.batch / floor,
        time_s=time,
        floor_s=floor,
        bottleneck=_class((m,), host_s=host),
    )


def _model(s: ModelSetup, hw: Hardware, stack: Stack, metric: str, per_chip: bool) -> Reproduction:
    if s.kind == "cnn":
        return _cnn(s, hw, stack, metric)
    if s.kind == "training":
        from workbench.fidelity._reproduce_training import training  # NOTE: imports this module

        return training(s, hw, stack, metric)
    chips = s.tensor_parallel if per_chip else 1
    parts: list[tuple[ModelMapping, int]] = []
    if s.kind in ("prefill", "generate", "serving"):
        parts.append((_decoder(s, hw, stack, "prefill", s.batch, s.seq), 1))
    steps = {"decode": 1, "prefill": 0}.get(s.kind, max(s.output_len - 1, 0))
    if steps:
        context = s.seq + (s.output_len // 2 if s.kind != "decode" else 0)
        parts.append((_decoder(s, hw, stack, "decode", s.batch, context), steps))
    # NOTE: a request's host time outside its steps is paid once by every run that takes a
    # request in (prefill, generate, serving), not by a lone decode step.
    request = (stack.request_overhead_s.value or 0.0) if s.kind != "decode" else 0.0
    time = sum(m.time_s * n for m, n in parts) + request
    floor = sum(_graph_floor(m.graph, hw, s.dtype) * n for m, n in parts)
    if s.kind == "serving":
        made = s.batch * s.output_len / chips
        predicted, bound = made / time, made / floor
    elif metric == "items_per_s":  # decode reported as tokens/s: batch / step time
        predicted, bound = s.batch / chips / time, s.batch / chips / floor
    else:
        predicted, bound = time, floor
    return Reproduction(
        predicted=predicted,
        bound=bound,
        time_s=time,
        floor_s=floor,
        bottleneck=_class(tuple(m for m, _ in parts), tuple(n for _, n in parts)),
        memory_fits=_memory_fits(s, hw),
    )


def reproduce(row: PublishedRow, hw: Hardware) -> Reproduction:
    """Predict ``row``'s metric on ``hw`` through the mapper (see the module docstring).

    Args:
        row: A corpus row.
        hw: Its hardware profile.

    Returns:
        The :class:`Reproduction`.
    """
    s = row.setup
    stack = load_stack(row.stack)
    if isinstance(s, GemmSetup):
        return _gemm(s, hw, stack)
    if isinstance(s, AttentionSetup):
        return _attention(s, hw, stack)
    if isinstance(s, StreamSetup):
        return _stream(s, hw, stack)
    if isinstance(s, ModelSetup):
        return _model(s, hw, stack, row.metric, row.unit.endswith("/chip"))
    from workbench.fidelity.reproduce_kinds import reproduce_kind  # NOTE: it imports this module

    return reproduce_kind(row, hw)


def fit_step_overhead(row: PublishedRow, hw: Hardware) -> float:
    """The software stack's host time per step that makes a latency row its measured one.

    ``(measured - predicted time without a step overhead) / steps``: a generate row's steps are
    the prefill plus the ``output_len - 1`` decode steps, a CNN row's one forward pass. How a
    stack's ``step_overhead_s`` is fitted to one calibration row (workbench/fidelity/fits.py;
    the stack file names the row).

    Args:
        row: A ``generate`` or ``cnn`` row measured as a time (a batch's latency).
        hw: Its hardware profile.

    Returns:
        Seconds per step (>= 0).

    Raises:
        CorpusError: The row is not such a latency, or its kernels alone are slower than the
            measurement (nothing is left to fit).
    """
    s = row.setup
    steps = 0
    if isinstance(s, ModelSetup):
        steps = {"generate": s.output_len, "cnn": 1}.get(s.kind, 0)
    if not isinstance(s, ModelSetup) or not steps or row.metric != "time":
        raise CorpusError(
            f"row {row.id!r}: a step overhead is fitted to a generate latency or a cnn batch's"
            " latency"
        )
    with patched_stacks({row.stack: with_step_overhead(load_stack(row.stack), 0.0)}):
        left = row.measured_si - reproduce(row, hw).time_s
    if left < 0:
        raise CorpusError(f"row {row.id!r}: its kernels alone exceed the measured latency")
    return left / steps


def fit_request_overhead(row: PublishedRow, hw: Hardware) -> float:
    """The stack's host time per request that makes a prefill, generate or serving row measured.

    ``measured time - predicted time without a request overhead`` (a time row: TTFT or an
    end-to-end latency), the stack's step overhead in force: how a stack's
    ``request_overhead_s`` marked ``fitted: true`` is solved (workbench/fidelity/fits.py).

    Args:
        row: A prefill or generate row measured as a time.
        hw: Its hardware profile.

    Returns:
        Seconds per request (>= 0).

    Raises:
        CorpusError: Not such a row, or its predicted time alone exceeds the measurement.
    """
    s = row.setup
    if not isinstance(s, ModelSetup) or s.kind not in ("prefill", "generate"):
        raise CorpusError(
            f"row {row.id!r}: a request overhead is fitted to a prefill or generate row"
        )
    if row.metric != "time":
        raise CorpusError(f"row {row.id!r}: a request overhead is fitted to a latency")
    stack = load_stack(row.stack)
    req = stack.request_overhead_s.model_copy(update={"value": 0.0})
    with patched_stacks({row.stack: stack.model_copy(update={"request_overhead_s": req})}):
        left = row.measured_si - reproduce(row, hw).time_s
    if left < 0:
        raise CorpusError(f"row {row.id!r}: its predicted time alone exceeds the measured latency")
    return left
