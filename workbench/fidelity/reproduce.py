"""Reproduce one published row through the real mapper, and its independent roofline floor.

Each setup is rebuilt as an IR graph (one ``Linear`` for a GEMM, one ``Attention`` for a kernel
benchmark, a preset or published decoder for whole models, ResNet-50 for CNN rows) and mapped
with :func:`workbench.map_model`. The step time is turned into the row's metric:

* GEMM: ``2 m n k / time`` (FLOP/s); when the benchmark writes C wider than its operands
  (``out_dtype``, e.g. cuBLASLt FP8 writing fp16), the conversion is a ``Quantize`` to that
  format, fused into the GEMM's epilogue, so C is stored (and floored) at its real width.
* stream (a STREAM copy): bytes read + written / time (B/s).
* Attention: the source's FLOP count (``4 b h s^2 d``, halved for causal when the source does)
  over time (FLOP/s). The row's ``software`` names the implementation class that is costed
  (FA3, FA2 or CK, Triton: workbench/cost/attention_class.py), whatever the profile ships.
* decode: one step's time (s per token), or ``batch / step time`` when the row is in tokens/s;
  prefill: the prefill's time (time to first token).
* generate: prefill + ``(output_len - 1)`` decode steps at the mean context (s).
* serving (static batch): ``batch x output_len / (prefill + (output_len - 1) x decode step at the
  mean context)`` (output tokens/s per replica; divided by the tensor-parallel chips when the row
  is per chip).
* training: ``(3 + recompute) x`` the forward time of a causal prefill of one chip's share
  (backward = 2 x forward, plus the rematerialised forward fraction; a fused attention's
  backward is 2.5 x its forward: five GEMMs against two), PaLM-convention model
  FLOPs per token: MFU (fraction).
* cnn: ``batch / time`` (images/s).

The **floor** is computed without the cost model: ``max(FLOPs / matrix peak, compulsory bytes /
off-chip bandwidth)`` with datasheet figures, where compulsory bytes are the operands and result
(GEMM, attention) or every weight and KV-cache tensor read once (models). A prediction faster
than its floor is a modelling error.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.cost.attention_class import class_for_software
from workbench.fidelity.schema import (
    AttentionSetup,
    CorpusError,
    GemmSetup,
    ModelSetup,
    PublishedRow,
    StreamSetup,
)
from workbench.hw.schema import Hardware
from workbench.ir import Attention, Elementwise, Graph, Linear
from workbench.ir.dtypes import bytes_for
from workbench.ir.ops_vector import Quantize
from workbench.mapper import ModelMapping, map_model
from workbench.models import (
    PRESETS,
    TransformerConfig,
    decoder_graph,
    resnet50_graph,
    training_flops_per_token,
)
from workbench.options import MapOptions

__all__ = ["Reproduction", "reproduce"]

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
    """

    predicted: float
    bound: float
    time_s: float
    floor_s: float
    bottleneck: str


def _class(mappings: tuple[ModelMapping, ...]) -> str:
    """The bottleneck class holding most of the time over every kernel of the mappings."""
    time: dict[str, float] = {}
    for m in mappings:
        for k in m.kernels:
            cls = k.cost.bottleneck.split(":")[0]
            cls = _CLASSES.get(cls, cls)
            time[cls] = time.get(cls, 0.0) + k.cost.total_s
    return max(time, key=lambda c: time[c]) if time else "compute"


def _peak(hw: Hardware, dtype: str) -> float:
    return hw.peak_flops(dtype) or hw.vector_flops(dtype)


def _graph_floor(graph: Graph, hw: Hardware, dtype: str) -> float:
    """max(matmul FLOPs / peak, every weight and cache tensor once / off-chip bandwidth), s."""
    nbytes = sum(t.nbytes for op in graph.ops for t in op.weight_tensors())
    return max(graph.matmul_flops / _peak(hw, dtype), nbytes / hw.offchip.bandwidth_bytes_per_s)


def _gemm(s: GemmSetup, hw: Hardware) -> Reproduction:
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
    m = map_model(Graph(name="gemm", ops=ops), hw)
    flops = 2.0 * s.m * s.n * s.k
    nbytes = bytes_for(s.m * s.k + s.k * s.n, s.dtype) + bytes_for(s.m * s.n, out)
    floor = max(flops / _peak(hw, s.dtype), nbytes / hw.offchip.bandwidth_bytes_per_s)
    return Reproduction(
        predicted=flops / m.time_s,
        bound=flops / floor,
        time_s=m.time_s,
        floor_s=floor,
        bottleneck=_class((m,)),
    )


def _attention(s: AttentionSetup, hw: Hardware) -> Reproduction:
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
    options = MapOptions(attention_kernel=class_for_software(s.software))
    m = map_model(Graph(name="attn", ops=(op,)), hw, options)
    counted = 4.0 * s.batch * s.heads * s.seq * s.seq * s.head_dim
    if s.causal and s.flop_convention == "causal_half":
        counted /= 2
    q_o = 2 * s.batch * s.seq * s.heads * s.head_dim
    k_v = 2 * s.batch * s.seq * s.kv_heads * s.head_dim
    nbytes = bytes_for(q_o + k_v, s.dtype)
    floor = max(op.matmul_flops / _peak(hw, s.dtype), nbytes / hw.offchip.bandwidth_bytes_per_s)
    return Reproduction(
        predicted=counted / m.time_s,
        bound=counted / floor,
        time_s=m.time_s,
        floor_s=floor,
        bottleneck=_class((m,)),
    )


def _stream(s: StreamSetup, hw: Hardware) -> Reproduction:
    op = Elementwise(name="copy", inputs=("a",), op="identity", shape=(s.elements,), dtype=s.dtype)
    m = map_model(Graph(name="stream", ops=(op,)), hw)
    moved = float(op.bytes_read + op.bytes_written)
    floor = moved / hw.offchip.bandwidth_bytes_per_s
    return Reproduction(
        predicted=moved / m.time_s,
        bound=moved / floor,
        time_s=m.time_s,
        floor_s=floor,
        bottleneck=_class((m,)),
    )


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


def _decoder(s: ModelSetup, hw: Hardware, phase: str, batch: int, context: int) -> ModelMapping:
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
    )
    # NOTE: an engine that runs its fused attention wider than the GEMMs (attention_dtype)
    # maps it as a dtype override of the attention kernels only.
    over = (("*attn.sdpa", s.attention_dtype),) if s.attention_dtype else ()
    return map_model(g, hw, MapOptions(dtype_overrides=over))


def _model(s: ModelSetup, hw: Hardware, metric: str, per_chip: bool) -> Reproduction:
    if s.kind == "cnn":
        g = resnet50_graph(batch=s.batch, dtype=s.dtype)
        m = map_model(g, hw)
        floor = _graph_floor(g, hw, s.dtype)
        return Reproduction(
            predicted=s.batch / m.time_s,
            bound=s.batch / floor,
            time_s=m.time_s,
            floor_s=floor,
            bottleneck=_class((m,)),
        )
    if s.kind == "training":
        return _training(s, hw)
    chips = s.tensor_parallel if per_chip else 1
    parts: list[tuple[ModelMapping, int]] = []
    if s.kind in ("prefill", "generate", "serving"):
        parts.append((_decoder(s, hw, "prefill", s.batch, s.seq), 1))
    steps = {"decode": 1, "prefill": 0}.get(s.kind, max(s.output_len - 1, 0))
    if steps:
        context = s.seq + (s.output_len // 2 if s.kind != "decode" else 0)
        parts.append((_decoder(s, hw, "decode", s.batch, context), steps))
    time = sum(m.time_s * n for m, n in parts)
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
        bottleneck=_class(tuple(m for m, _ in parts)),
    )


def _training(s: ModelSetup, hw: Hardware) -> Reproduction:
    m = _decoder(s, hw, "prefill", s.batch, s.seq)
    # NOTE: activation rematerialisation runs (part of) the forward again in the backward pass
    # (Chen et al. arXiv:1604.06174; Korthikanti et al. arXiv:2205.05198): the step pays
    # 3 + recompute forwards while MFU's model FLOPs stay at 3 (the PaLM convention).
    passes = 3.0 + s.recompute
    # NOTE: a fused attention's backward recomputes S = Q K^T and runs dV, dP, dQ, dK: five
    # GEMMs of the forward's size against its two (FlashAttention-2, arXiv:2307.08691,
    # Algorithm 2), so it costs 2.5 forwards, not the 2 of a linear layer.
    attention = sum(k.cost.total_s for k in m.kernels if k.kernel.kind == "attention")
    step = passes * m.time_s + 0.5 * attention
    floor = passes * _graph_floor(m.graph, hw, s.dtype)
    per_token = training_flops_per_token(_config(s), s.seq)
    work = s.batch * s.seq * per_token / s.tensor_parallel
    peak = _peak(hw, s.dtype)
    return Reproduction(
        predicted=work / (step * peak),
        bound=work / (floor * peak),
        time_s=step,
        floor_s=floor,
        bottleneck=_class((m,)),
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
    if isinstance(s, GemmSetup):
        return _gemm(s, hw)
    if isinstance(s, AttentionSetup):
        return _attention(s, hw)
    if isinstance(s, StreamSetup):
        return _stream(s, hw)
    return _model(s, hw, row.metric, row.unit.endswith("/chip"))
