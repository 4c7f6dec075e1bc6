"""A graph from a trace's recorded shapes: the workload a profiler run actually executed.

When a PyTorch profiler trace was recorded with ``record_shapes=True`` (see
:mod:`workbench.evidence.operators`), every operator that launched kernels carries its input
sizes and types. :func:`graph_from_trace` turns each distinct operator call (name, shapes, types,
format) into one ir op, so the graph can be mapped on the trace's hardware (or any other) and
every measured kernel set beside an expected time.

Operators turned into ops (innermost ``cpu_op`` that launched the kernel):

=====================================================  =========================================
``aten::mm`` ``[M,K] [K,N]``                            MatMul(m=M, n=N, k=K)
``aten::addmm`` ``[N] [M,K] [K,N]``                     MatMul (the bias add is in the epilogue)
``aten::bmm`` / ``aten::baddbmm``                      batched MatMul
``aten::linear`` / ``aten::matmul`` (launching itself)  MatMul over the flattened leading dims
``aten::*convolution`` (with ``Concrete Inputs``)       Conv2d
``aten::*scaled_dot_product*`` / flash / efficient     Attention (``[B,H,L,D]`` q, k, v)
``aten::native_layer_norm`` (and backward), rms_norm   LayerNorm / RMSNorm
``aten::_softmax``                                     Softmax
``aten::embedding`` / ``embedding_bag``                 Embedding (rows gathered)
elementwise (add, mul, sigmoid, relu, copy_...)        Elementwise
``aten::sum`` / ``mean`` / ``amax``                     Reduce
``record_param_comms`` / ``nccl:*`` with byte counts   AllReduce / AllGather / AllToAll
=====================================================  =========================================

Anything else (fused library ops such as FBGEMM's TBE, ``torch.compile`` graphs, integer ops) is
left out and said so: :attr:`TraceGraph.skipped` counts it by reason.

The format a GEMM ran in comes from its kernels' names, not from its tensors alone: a ``float``
GEMM whose kernel name carries ``sgemm``/``gemmSN``/``gemv`` ran on the CUDA cores (``fp32``); one
whose name carries ``tensorop``, ``s1688``, ``s16816``, ``tf32`` or ``xmma`` ran on the tensor
cores in TF32 (``tf32``); ``c10::Half``/``c10::BFloat16`` tensors are ``fp16``/``bf16``
(:func:`gemm_format`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from workbench.errors import GraphError
from workbench.hw.devices import profile_for_device
from workbench.ir import (
    AllGather,
    AllReduce,
    AllToAll,
    Attention,
    Conv2d,
    Elementwise,
    Embedding,
    Graph,
    LayerNorm,
    MatMul,
    Op,
    Reduce,
    RMSNorm,
    Softmax,
)

__all__ = [
    "BAD_RANK",
    "BEYOND_MEMORY",
    "MAX_TENSOR_ELEMENTS",
    "OperatorCall",
    "TraceGraph",
    "gemm_format",
    "graph_from_trace",
    "profile_for_device",
]

_TYPES = {"float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16", "half": "fp16"}
_TENSOR_CORE_FP32 = re.compile(r"tensorop|s1688|s16816|tf32|xmma|s884|cutlass_80", re.IGNORECASE)
#: Most elements one recorded tensor may have: 2^47 (1 PiB at 8 bytes), beyond the memory of any
#: device or node; a larger size is a corrupt or hostile trace, and the op is left out.
MAX_TENSOR_ELEMENTS = 2**47
#: How a call with such a tensor is counted in :attr:`TraceGraph.skipped` (after its name).
BEYOND_MEMORY = "with a tensor beyond any device's memory (over 2^47 elements)"
#: How a call is counted whose tensors have a rank its operator cannot take (a 3-D ``mm``, a
#: 2-D key for attention) or sizes that disagree (``mm``'s inner sizes): a corrupt trace.
BAD_RANK = "with tensors of a rank (or sizes) the operator cannot take"
#: A collective's tensor type -> (format with the same bytes per element, elements per element):
#: a collective moves bytes, so an int32 tensor travels as fp32 does and an int64 one as two.
_COMM_TYPES = {
    **{t: (f, 1) for t, f in _TYPES.items()},
    "int": ("fp32", 1),
    "long": ("fp32", 2),
    "double": ("fp32", 2),
}
_SIMT_FP32 = re.compile(r"sgemm|gemmSN|gemv|gemmk1|dot_kernel", re.IGNORECASE)
_UNARY = {
    "aten::sigmoid": "sigmoid",
    "aten::sigmoid_": "sigmoid",
    "aten::relu": "relu",
    "aten::relu_": "relu",
    "aten::clamp_min": "relu",
    "aten::clamp_min_": "relu",
    "aten::clamp": "clip",
    "aten::clamp_": "clip",
    "aten::gelu": "gelu",
    "aten::silu": "silu",
    "aten::silu_": "silu",
    "aten::tanh": "tanh",
    "aten::exp": "exp",
    "aten::copy_": "identity",
    "aten::clone": "identity",
    "aten::nan_to_num": "clip",
    "aten::neg": "scale",
}
_BINARY = {
    "aten::add": "add",
    "aten::add_": "add",
    "aten::mul": "mul",
    "aten::mul_": "mul",
    "aten::sub": "sub",
    "aten::sub_": "sub",
    "aten::div": "div",
    "aten::div_": "div",
    "aten::sigmoid_backward": "mul",
    "aten::threshold_backward": "mul",
    "aten::gelu_backward": "mul",
    "aten::silu_backward": "mul",
}
_REDUCE = {"aten::sum": "sum", "aten::mean": "mean", "aten::amax": "max", "aten::max": "max"}
_ATTENTION = re.compile(r"scaled_dot_product|flash_attention|efficient_attention", re.I)


class OperatorCall(Protocol):
    """What the graph needs of one recorded operator call (``evidence.operators.RecordedOp``).

    models/ sits above evidence/ in the pipeline, so the call is read through this protocol.
    """

    @property
    def name(self) -> str:
        """The operator (``aten::addmm``)."""
        ...

    @property
    def input_dims(self) -> tuple[tuple[int, ...], ...] | None:
        """Per input, its sizes (None: no shapes recorded)."""
        ...

    @property
    def input_types(self) -> tuple[str, ...]:
        """Per input, its recorded type (``float``, ``c10::Half``, ``Scalar``)."""
        ...

    @property
    def signature(self) -> str:
        """Name, shapes and types: what makes two calls the same work."""
        ...

    def arg(self, key: str) -> str | None:
        """Another recorded argument as text, or None."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceGraph:
    """The graph a trace's shapes describe, and how its ops link back to the trace.

    Attributes:
        graph: One op per distinct operator call (name, shapes, types, format).
        op_of_call: Index of a call (into the ``calls`` given) -> name of its graph op.
        skipped: ``(reason, calls)``: operator calls left out of the graph, by reason.
    """

    graph: Graph
    op_of_call: Mapping[int, str]
    skipped: tuple[tuple[str, int], ...]


def gemm_format(tensor_dtype: str, kernel_names: Iterable[str]) -> str:
    """The format a GEMM ran in, from its tensors' dtype and its kernels' names (module doc).

    >>> gemm_format("fp32", ["volta_sgemm_128x64_nn"]), gemm_format("fp32", [
    ...     "cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4"])
    ('fp32', 'tf32')
    """
    if tensor_dtype != "fp32":
        return tensor_dtype
    names = list(kernel_names)
    if any(_SIMT_FP32.search(n) for n in names):
        return "fp32"
    if any(_TENSOR_CORE_FP32.search(n) for n in names):
        return "tf32"
    return "fp32"


def graph_from_trace(
    calls: Sequence[OperatorCall],
    kernel_names: Mapping[int, Sequence[str]],
    *,
    source: str,
    device: str = "unknown",
    world_size: int | None = None,
) -> TraceGraph:
    """Build the graph of every operator call that launched kernels (see the module doc).

    Args:
        calls: The trace's operator calls (``RecordedOps.ops``).
        kernel_names: Index into ``calls`` -> names of the kernels that call launched (they give
            each GEMM's format); calls absent here launched nothing and are left out.
        source: The trace's file, for the graph's name and errors.
        device: The trace's GPU, kept in the graph's meta.
        world_size: Ranks of the run (``distributedInfo``), the group of a collective whose
            annotation records no ``Group size``; None when unknown.

    Returns:
        The graph, the link from each call to its op, and what was left out.

    Raises:
        GraphError: No operator of the trace could be turned into an op (no shapes recorded,
            or only operators the graph does not model).
    """
    names = kernel_names
    ops: dict[tuple[str, str], Op] = {}
    op_of_call: dict[int, str] = {}
    skipped: dict[str, int] = {}
    shapes = any(call.input_dims is not None for call in calls)
    for index, call in enumerate(calls):
        if index not in names:
            continue
        built = _op(call, names[index], f"t{len(ops)}", world_size)
        if isinstance(built, str):
            skipped[built] = skipped.get(built, 0) + 1
            continue
        key = (call.signature, built.dtype)
        op = ops.setdefault(key, built)
        op_of_call[index] = op.name
    if not ops:
        reason = "no operator the graph models" if shapes else "no shapes recorded"
        corrupt = [f"{r} ({n})" for r, n in skipped.items() if r.endswith(BAD_RANK)]
        if corrupt:
            reason += f"; left out as corrupt: {'; '.join(corrupt)}"
        raise GraphError(f"{source}: no graph from the trace: {reason}")
    graph = Graph(
        name=f"trace {source}",
        ops=tuple(ops.values()),
        meta=(("source", source), ("device", device)),
    )
    return TraceGraph(
        graph=graph,
        op_of_call=op_of_call,
        skipped=tuple(sorted(skipped.items(), key=lambda kv: -kv[1])),
    )


def _op(
    call: OperatorCall, kernels: Sequence[str], name: str, world_size: int | None = None
) -> Op | str:
    """The ir op for one call, or the reason it has none."""
    if any(math.prod(d) > MAX_TENSOR_ELEMENTS for d in call.input_dims or ()):
        return f"{call.name} {BEYOND_MEMORY}"
    comm = _collective(call, name, world_size)
    if comm is not None:
        return comm
    if call.input_dims is None:
        return "no shapes recorded"
    dims, types = call.input_dims, call.input_types
    tensors = [(d, _TYPES.get(t)) for d, t in zip(dims, types, strict=False) if d]
    dtype = next((dt for d, dt in tensors if dt), None)
    if dtype is None:
        return "no floating-point tensor input"
    try:
        return _build(call.name, [d for d, _ in tensors], dtype, kernels, name, call)
    except GraphError:
        return f"shapes not understood for {call.name}"


def _build(
    op: str,
    shapes: list[tuple[int, ...]],
    dtype: str,
    kernels: Sequence[str],
    name: str,
    call: OperatorCall,
) -> Op | str:
    fmt = gemm_format(dtype, kernels)
    gemm = _gemm(op, shapes, fmt, name)
    if gemm is not None:
        return gemm
    if "convolution" in op:
        return _conv(call, shapes, fmt, name)
    if _ATTENTION.search(op) and len(shapes) >= 3:
        q, k, v = shapes[:3]
        if not (len(q) == len(k) == len(v) == 4 and q[0] == k[0] == v[0] and q[3] == k[3]):
            return f"{op} {BAD_RANK}"
        b, h, q_len, d = q
        kv_len = k[2]
        return Attention(
            name=name, inputs=(f"{name}.q", f"{name}.k", f"{name}.v"), dtype=dtype, batch=b,
            heads=h, kv_heads=shapes[1][1], q_len=q_len, kv_len=kv_len, head_dim=d, causal=False,
        )  # fmt: skip
    big = max(shapes, key=math.prod)
    if op in ("aten::native_layer_norm", "aten::native_layer_norm_backward", "aten::layer_norm"):
        return LayerNorm(name=name, inputs=(f"{name}.x",), dtype=dtype, shape=big)
    if op in ("aten::rms_norm", "aten::_fused_rms_norm"):
        return RMSNorm(name=name, inputs=(f"{name}.x",), dtype=dtype, shape=big)
    if op in ("aten::_softmax", "aten::softmax", "aten::_softmax_backward_data"):
        return Softmax(name=name, inputs=(f"{name}.x",), dtype=dtype, shape=big)
    if op in ("aten::embedding", "aten::embedding_bag", "aten::_embedding_bag"):
        table = shapes[0]
        ids = shapes[1] if len(shapes) > 1 else ()
        if len(table) != 2 or not ids:
            return "embedding without a [rows, dim] table and ids"
        return Embedding(name=name, dtype=dtype, tokens=ids, vocab=table[0], dim=table[1])
    if op in _REDUCE:
        return Reduce(name=name, inputs=(f"{name}.x",), dtype=dtype, shape=big, op=_REDUCE[op])
    if op in _BINARY:
        two = len(shapes) >= 2 and shapes[0] == shapes[1]
        kind = _BINARY[op] if two else "scale"
        inputs = (f"{name}.a", f"{name}.b") if two else (f"{name}.a",)
        return Elementwise(name=name, inputs=inputs, dtype=dtype, op=kind, shape=big)
    if op in _UNARY:
        return Elementwise(name=name, inputs=(f"{name}.a",), dtype=dtype, op=_UNARY[op], shape=big)
    return f"not modelled: {op}"


def _gemm(op: str, shapes: list[tuple[int, ...]], fmt: str, name: str) -> Op | str | None:
    """The MatMul of a GEMM-like call; the reason it has none (wrong rank); None: no GEMM."""
    mk = _gemm_sizes(op, shapes)
    if mk is None:
        return None
    if isinstance(mk, str):
        return f"{op} {mk}"
    batch, m, n, k = mk
    return MatMul(
        name=name, inputs=(f"{name}.a", f"{name}.b"), dtype=fmt, batch=batch, m=m, n=n, k=k
    )


def _gemm_sizes(op: str, shapes: list[tuple[int, ...]]) -> tuple[int, int, int, int] | str | None:
    """``(batch, m, n, k)`` of a GEMM-like call, :data:`BAD_RANK` for shapes it cannot take."""
    # NOTE: every operator checks the rank of each tensor it reads and that the sizes it
    # contracts agree; a trace that claims otherwise is corrupt, and the call is left out.
    if op in ("aten::mm", "aten::addmm") and len(shapes) >= (2 if op == "aten::mm" else 3):
        a, b = shapes[0:2] if op == "aten::mm" else shapes[1:3]
        if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
            return BAD_RANK
        return (1, a[0], b[1], a[1])
    if op in ("aten::bmm", "aten::baddbmm") and len(shapes) >= 2:
        if op == "aten::baddbmm" and len(shapes) < 3:
            return None
        a, b = shapes[1:3] if op == "aten::baddbmm" else shapes[0:2]
        if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
            return BAD_RANK
        return (a[0], a[1], b[2], a[2])
    if op in ("aten::linear", "aten::matmul") and len(shapes) >= 2 and len(shapes[1]) == 2:
        x, w = shapes[0], shapes[1]
        n, k = (w[0], w[1]) if op == "aten::linear" else (w[1], w[0])
        if x[-1] != k:
            return BAD_RANK
        return (1, math.prod(x[:-1]), n, k)
    return None


def _conv(call: OperatorCall, shapes: list[tuple[int, ...]], fmt: str, name: str) -> Op | str:
    concrete = call.arg("Concrete Inputs")
    if len(shapes) < 2 or not concrete:
        return "convolution without recorded stride/padding (Concrete Inputs)"
    if len(shapes[0]) != 4 or len(shapes[1]) != 4:
        return f"{call.name} {BAD_RANK}"
    (n, c, h, w), (k, cg, r, s) = shapes[0], shapes[1]
    # NOTE: aten::convolution's concrete inputs: ..., stride, padding, dilation, transposed, ...,
    # groups; the first integers after the shapes are stride and padding (square kernels only).
    # A number of more than 9 digits is no stride or padding: the call is corrupt.
    found = re.findall(r"\d+", concrete)
    if any(len(v) > 9 for v in found):
        return f"{call.name} {BAD_RANK}"
    ints = [int(v) for v in found]
    stride, padding = (ints[0], ints[2]) if len(ints) >= 4 else (1, 0)
    if cg < 1 or c % cg or stride > max(h, w) or padding > max(h, w):
        return f"{call.name} {BAD_RANK}"
    return Conv2d(
        name=name, inputs=(f"{name}.x",), dtype=fmt, batch=n, in_channels=c, height=h, width=w,
        out_channels=k, kernel_h=r, kernel_w=s, stride=max(stride, 1), padding=padding,
        groups=max(c // cg, 1),
    )  # fmt: skip


def _collective(call: OperatorCall, name: str, world_size: int | None) -> Op | str | None:
    """The collective a call ran, from its byte counts; None when the call is no collective.

    Two recordings: ``record_param_comms`` with ``Collective name``, ``In/Out msg nelems``,
    ``dtype`` and ``Group size`` (newer PyTorch), or the ``nccl:<collective>`` annotation
    ProcessGroupNCCL wraps each call in, with its tensor's ``Input Dims`` and ``Input type``
    (older PyTorch: the group is then the trace's world size, ``distributedInfo``).
    """
    if call.name.startswith("nccl:"):
        return _annotated_collective(call, name, world_size)
    kind = (call.arg("Collective name") or call.name).lower()
    nelems = call.arg("Out msg nelems") or call.arg("In msg nelems")
    size = call.arg("Group size")
    if not nelems or not size or not nelems.isdigit() or not size.isdigit():
        return None
    if len(nelems) > 15 or len(size) > 6:
        return f"{call.name} with byte counts out of range"
    n, chips = int(nelems), int(size)
    dtype = _TYPES.get(call.arg("dtype") or "") or {"Float": "fp32", "Half": "fp16"}.get(
        call.arg("dtype") or "", "fp32"
    )
    if n <= 0 or chips < 2:
        return None
    if "all_gather" in kind or "allgather" in kind:
        return _collective_op(kind, (max(n // chips, 1),), dtype, chips, name)  # output -> shard
    return _collective_op(kind, (n,), dtype, chips, name)


def _annotated_collective(call: OperatorCall, name: str, chips: int | None) -> Op | str:
    """The op of an ``nccl:<collective>`` annotation, or the reason it has none."""
    kind = call.name.removeprefix("nccl:").lower()
    dims, types = call.input_dims or (), call.input_types
    tensor = next(
        ((d, _COMM_TYPES[t]) for d, t in zip(dims, types, strict=False) if d and t in _COMM_TYPES),
        None,
    )
    if tensor is None:
        return f"{call.name} without a tensor's sizes"
    if chips is None or chips < 2:
        return f"{call.name} without a known world size (distributedInfo)"
    shape, (dtype, words) = tensor
    shape = (*shape[:-1], shape[-1] * words)
    op = _collective_op(kind, shape, dtype, chips, name)
    return op if op is not None else f"not modelled: {call.name}"


def _collective_op(
    kind: str, shape: tuple[int, ...], dtype: str, chips: int, name: str
) -> Op | None:
    """All-gather (``shape`` is each chip's shard), all-reduce or all-to-all; None otherwise."""
    inputs = (f"{name}.x",)
    if "all_gather" in kind or "allgather" in kind:
        return AllGather(name=name, inputs=inputs, dtype=dtype, shape=shape, chips=chips)
    if "all_reduce" in kind or "allreduce" in kind:
        return AllReduce(name=name, inputs=inputs, dtype=dtype, shape=shape, chips=chips)
    if "all_to_all" in kind or "alltoall" in kind:
        return AllToAll(name=name, inputs=inputs, dtype=dtype, shape=shape, chips=chips)
    return None
