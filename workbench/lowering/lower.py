"""Lowering: graph -> kernels (engine, fusion, format, layout).

Passes, in order:

1. :func:`~workbench.lowering.fusion.plan_fusion` groups ops into kernels.
2. Each group becomes one kernel (fused attention) or several (unfused attention: QK^T, softmax,
   PV with the score matrix in off-chip memory), with its format chosen (override > op format)
   and its engine selected (GEMM-like work goes to the matrix engine when it supports the format,
   otherwise to the vector unit, with the reason recorded).
3. Layout assignment inserts a layout-transform kernel where a conv wants a layout its producer
   did not write (or folds it into the producer's store when ``layout_fold`` is on).
4. Cache residency marks kernels whose input their predecessor left in the shared cache.
5. Debug barriers are added per layer when asked.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.ir.ops import (
    AllGather,
    AllReduce,
    AllToAll,
    Attention,
    Conv2d,
    Embedding,
    LayerNorm,
    Linear,
    MatMul,
    Op,
    Pool,
    Reduce,
    RMSNorm,
    Softmax,
    Transpose,
)
from workbench.ir.views import Reshape
from workbench.lowering.formats import DEQUANT_OPS, WEIGHT_GROUP, engine_for, group_bytes
from workbench.lowering.fusion import Group, plan_fusion
from workbench.lowering.kernel import AttentionProblem, GemmProblem, Kernel, RowProblem
from workbench.lowering.kernel import elem_bytes as _eb
from workbench.lowering.layout import add_layer_barriers, assign_layouts, assign_operand_layouts
from workbench.lowering.residency import mark_cache_residency
from workbench.options import MapOptions

__all__ = ["lower"]


def lower(graph: Graph, hw: Hardware, options: MapOptions) -> tuple[Kernel, ...]:
    """Lower ``graph`` to kernels for ``hw`` under ``options``.

    Args:
        graph: Operator graph.
        hw: Target hardware.
        options: Overrides (fusion rules, formats, layout, barriers).

    Returns:
        Kernels in execution order.
    """
    kernels: list[Kernel] = []
    for group in plan_fusion(graph, hw, options):
        kernels.extend(_group_kernels(group, hw, options))
    kernels = assign_layouts(kernels, graph, hw, options)
    kernels = assign_operand_layouts(kernels, hw, options)
    kernels = mark_cache_residency(kernels, graph, hw)
    if options.barrier_per_layer:
        kernels = add_layer_barriers(kernels)
    return tuple(kernels)


#: Narrowest element an all-reduce sums on the links, bytes (16-bit floats; see _group_kernels).
REDUCE_MIN_BYTES = 2.0


# ---------------------------------------------------------------------------------------------
# group -> kernels
# ---------------------------------------------------------------------------------------------
def _group_kernels(group: Group, hw: Hardware, options: MapOptions) -> list[Kernel]:
    head = group.head
    dtype = options.dtype_for(head.name, head.dtype)
    base = _base_fields(group, dtype)
    if isinstance(head, Reshape) and len(group.ops) == 1:
        return []  # a view: no launch, no bytes
    if isinstance(head, Attention):
        return _attention_kernels(group, head, hw, options, dtype)
    if isinstance(head, (Linear, MatMul, Conv2d)):
        return [_gemm_kernel(group, head, hw, options, dtype, base)]
    if isinstance(head, (AllReduce, AllGather, AllToAll)):
        link_bytes = head.link_bytes
        if isinstance(head, AllReduce) and _eb(dtype) < REDUCE_MIN_BYTES:
            # NOTE: an 8-bit (fp8, int8) model's row-parallel GEMM dequantizes in its epilogue
            # and the all-reduce sums 16-bit values: HCCL reduces fp32, bf16, fp16, int32 and
            # uint32 only (docs.habana.ai, HCCL C API, hcclDataType_t), and NCCL had no 8-bit
            # float type in the 2023-24 releases these stacks shipped with ([R]: ncclFloat8e4m3
            # came later, SM90+ only).
            link_bytes *= REDUCE_MIN_BYTES / _eb(dtype)
            note = f"{dtype} activations summed as 16-bit values on the links"
            base = {**base, "notes": (*base["notes"], note)}
        return [
            Kernel(
                **base,
                kind="collective",
                engine="interconnect",
                engine_reason=f"{head.kind} collective over chip-to-chip links",
                link_bytes=link_bytes,
                chips=head.chips,
            )
        ]
    return [_vector_kernel(group, head, dtype, base)]


def _scaled_bytes(group: Group, dtype: str) -> tuple[int, int, int]:
    """(read, written, saved) off-chip bytes of a group, re-expressed at ``dtype``."""
    scale = _eb(dtype) / _eb(group.head.dtype)
    head = group.head
    read = sum(t.nbytes for t in head.input_tensors()) + sum(
        t.nbytes for t in head.weight_tensors()
    )
    written = group.tail.bytes_written
    if group.tail is not head:
        written = group.tail.output_tensor().nbytes
    return (
        round((read + group.extra_read_bytes) * scale),
        round(written * scale),
        round(group.saved_bytes * scale),
    )


def _base_fields(group: Group, dtype: str) -> dict[str, Any]:
    read, written, saved = _scaled_bytes(group, dtype)
    matmul = sum(op.matmul_flops for op in group.ops)
    vector = sum(op.vector_flops for op in group.ops)
    return {
        "name": group.head.name,
        "ops": tuple(op.name for op in group.ops),
        "layer_type": group.head.layer_type,
        "dtype": dtype,
        "flops": matmul + vector,
        "matmul_flops": matmul,
        "vector_flops": vector,
        "bytes_read": read,
        "bytes_written": written,
        "saved_bytes": saved,
        "fusion": tuple(group.rules),
        "notes": tuple(group.notes),
    }


def _gemm_kernel(
    group: Group, head: Op, hw: Hardware, options: MapOptions, dtype: str, base: dict[str, Any]
) -> Kernel:
    eb = _eb(dtype)
    wdt = None
    if isinstance(head, Linear):
        wdt = options.weight_dtype or head.weight_dtype
        b_bytes = _eb(wdt) if wdt else eb
        problem = GemmProblem(
            batch=1,
            m=head.m,
            n=head.out_features,
            k=head.in_features,
            a_bytes=eb,
            b_bytes=b_bytes,
            c_bytes=_eb(group.tail.output_dtype) if group.tail is not head else eb,
            b_is_weight=True,
            epilogue_bytes=round(group.extra_read_bytes * eb / _eb(head.dtype)),
        )
        kind = "gemm"
    elif isinstance(head, MatMul):
        problem = GemmProblem(
            batch=head.batch,
            m=head.m,
            n=head.n,
            k=head.k,
            a_bytes=eb,
            b_bytes=eb,
            c_bytes=eb,
            b_is_weight=False,
            epilogue_bytes=group.extra_read_bytes,
            b_k_major=False,
        )
        kind = "gemm"
    else:
        assert isinstance(head, Conv2d)
        m, n, k = head.gemm_mnk
        problem = GemmProblem(
            batch=head.groups,
            m=m,
            n=n,
            k=k,
            a_bytes=eb,
            b_bytes=eb,
            c_bytes=eb,
            b_is_weight=True,
            epilogue_bytes=group.extra_read_bytes,
            a_expansion=head.im2col_expansion,
        )
        kind = "conv"
    engine, reason, engine_dtype = engine_for(hw, dtype)
    # NOTE: a software-issued host (hw.scheduling) hands every grouped GEMM to its BLAS
    # library whatever its shape; an accelerator's matrix array would idle on n=1 groups.
    hardware_tiles = hw.hardware_scheduled
    narrow = problem.n < hw.matrix_engine.native_tile_n
    if isinstance(head, Conv2d) and head.groups > 1 and narrow and hardware_tiles:
        engine, engine_dtype = "vector", None
        reason = (
            f"grouped/depthwise conv: per-group GEMM has n={problem.n} < native tile n="
            f"{hw.matrix_engine.native_tile_n}, runs on the vector unit"
        )
    legacy = hw.matrix_engine.legacy_mma_fraction
    if engine == "matrix" and legacy < 1 and hardware_tiles and not problem.strides_aligned:
        base["notes"] = (
            *base["notes"],
            f"operand strides (k={problem.k}) are not multiples of 16 bytes: no TMA, a "
            f"warp-level MMA kernel at {legacy:.0%} of the engine's peak",
        )
    if wdt is not None and wdt != dtype:
        # NOTE: weight-only formats are dequantized to the compute format per tile load, on the
        # vector unit, inside the GEMM main loop; integer formats carry group scales and zeros.
        extra = 2 * problem.k * problem.n
        base = {**base, "vector_flops": base["vector_flops"] + extra,
                "flops": base["flops"] + extra}  # fmt: skip
        assert isinstance(head, Linear)
        per_weight = _eb(wdt) + group_bytes(wdt)
        w_scale = per_weight / _eb(head.weight_dtype or head.dtype)
        w_bytes = sum(t.nbytes for t in head.weight_tensors()[:1])
        base["bytes_read"] = round(base["bytes_read"] - w_bytes + w_bytes * w_scale)
        ops = DEQUANT_OPS.get(wdt, 2.0)
        problem = replace(problem, b_bytes=per_weight, b_dequant_ops=ops)
        scales = (
            f", group-{WEIGHT_GROUP} fp16 scale+zero {group_bytes(wdt) * 8:.2g} bit/weight"
            if group_bytes(wdt)
            else ""
        )
        base["notes"] = (
            *base["notes"],
            f"weight-only {wdt}: dequantized to {dtype} on the vector unit in the main loop "
            f"({ops:g} instructions/weight){scales}",
        )
    return Kernel(
        **base,
        kind=kind,
        engine=engine,
        engine_reason=reason,
        weight_dtype=wdt,
        engine_dtype=engine_dtype,
        gemm=problem,
        layout=getattr(head, "layout", "row-major"),
    )


def _attention_kernels(
    group: Group, op: Attention, hw: Hardware, options: MapOptions, dtype: str
) -> list[Kernel]:
    base = _base_fields(group, dtype)
    eb = _eb(dtype)
    kv_dtype = op.kv_dtype if (op.kv_dtype and not options.dtype) else dtype
    problem = AttentionProblem(
        batch=op.batch,
        heads=op.heads,
        kv_heads=op.kv_heads,
        q_len=op.q_len,
        kv_len=op.kv_len,
        head_dim=op.head_dim,
        causal=op.causal,
        elem_bytes=eb,
        kv_bytes=_eb(kv_dtype),
        kv_group_shared=options.gqa_kv_sharing,
    )
    engine, reason, engine_dtype = engine_for(hw, dtype)
    if options.fusion_enabled("flash_attention"):
        refusal = _flash_refusal(problem, hw)
        if refusal is None and dtype in hw.matrix_engine.k_major_dtypes:
            note = (f"{dtype} on {hw.name} needs a K-major V: transposed in-kernel while it "
                    "is in SRAM (FlashAttention-3 style)")  # fmt: skip
            base = {**base, "notes": (*base["notes"], note)}
        if refusal is None:
            return [
                Kernel(
                    **{**base, "fusion": ("flash_attention",)},
                    kind="attention",
                    engine=engine,
                    engine_reason=reason,
                    engine_dtype=engine_dtype,
                    attention=problem,
                )
            ]
        base = {**base, "notes": (*base["notes"], refusal)}
    unfused = _unfused_attention(op, problem, base, engine, reason, dtype)
    return [replace(k, engine_dtype=engine_dtype) if k.engine == "matrix" else k for k in unfused]


def _flash_refusal(p: AttentionProblem, hw: Hardware) -> str | None:
    """Why fused attention cannot fit SRAM at the smallest tile, or None if it can."""
    t = hw.matrix_engine.native_tile_m
    need = (
        t * p.head_dim * p.elem_bytes
        + 2 * t * p.head_dim * p.kv_bytes
        + t * t * 4
        + t * p.head_dim * 4
    )
    cap = hw.sram.capacity_bytes
    if need <= cap:
        return None
    return (
        f"flash_attention refused: the smallest tile ({t}x{t}, head_dim {p.head_dim}) needs "
        f"{need / 1024:.0f} KiB > {hw.sram.name} {cap / 1024:.0f} KiB"
    )


def _unfused_attention(
    op: Attention,
    p: AttentionProblem,
    base: dict[str, Any],
    engine: str,
    reason: str,
    dtype: str,
) -> list[Kernel]:
    """QK^T, softmax and PV as three kernels; the score matrix goes through off-chip memory."""
    bh = p.batch * p.heads
    scores = bh * p.q_len * p.kv_len
    eb = p.elem_bytes
    q_bytes = round(bh * p.q_len * p.head_dim * eb)
    kv_bytes = round(bh * p.kv_len * p.head_dim * p.kv_bytes)
    s_bytes = round(scores * eb)
    pairs_flops = 2 * bh * p.head_dim * op.score_pairs
    common = {
        "layer_type": op.layer_type,
        "dtype": dtype,
        "ops": (op.name,),
        "saved_bytes": 0,
        "fusion": (),
        "notes": base["notes"],
    }
    append = op.bytes_written - op.output_tensor().nbytes

    def gemm(suffix: str, n: int, k: int, read: int, written: int) -> Kernel:
        # NOTE: K^T in Q K^T is K-major (K is stored [kv, d]); V in P V is N-major.
        problem = GemmProblem(batch=bh, m=p.q_len, n=n, k=k, a_bytes=eb, b_bytes=p.kv_bytes,
                              c_bytes=eb, b_is_weight=False, b_k_major=suffix == "qk")  # fmt: skip
        return Kernel(
            **common, name=f"{op.name}.{suffix}", kind="gemm", engine=engine,
            engine_reason=reason, gemm=problem, flops=pairs_flops, matmul_flops=pairs_flops,
            bytes_read=read, bytes_written=written,
        )  # fmt: skip

    qk = gemm("qk", p.kv_len, p.head_dim, q_bytes + kv_bytes,
              s_bytes + round(append * eb / _eb(op.dtype)))  # fmt: skip
    sm_flops = 6 * bh * op.score_pairs
    sm = Kernel(
        **common,
        name=f"{op.name}.softmax",
        kind="row",
        engine="vector",
        engine_reason="softmax runs on the vector unit",
        rows=RowProblem(rows=bh * p.q_len, cols=p.kv_len, reduce=True, operands=2, elem_bytes=eb),
        flops=sm_flops,
        vector_flops=sm_flops,
        bytes_read=s_bytes,
        bytes_written=s_bytes,
    )
    pv = gemm("pv", p.head_dim, p.kv_len, s_bytes + kv_bytes, q_bytes)
    return [qk, sm, pv]


def _vector_kernel(group: Group, head: Op, dtype: str, base: dict[str, Any]) -> Kernel:
    eb = _eb(dtype)
    shape = head.output_shape()
    operands = 1 + sum(len(op.inputs) for op in group.ops)
    reduce = isinstance(head, (LayerNorm, RMSNorm, Softmax, Reduce))
    kind = "row" if reduce else "elementwise"
    rows, cols = math.prod(shape[:-1]) or 1, shape[-1]
    if isinstance(head, Reduce):
        shape = head.shape
        rows, cols = math.prod(shape) // shape[head.axis], shape[head.axis]
    elif isinstance(head, Pool):
        rows, cols = head.batch * head.channels, head.height * head.width
        reduce, kind = True, "row"
    elif isinstance(head, Embedding):
        kind = "gather"
    elif isinstance(head, Transpose):
        kind = "layout"
    problem = RowProblem(rows=rows, cols=cols, reduce=reduce, operands=operands, elem_bytes=eb)
    return Kernel(
        **base,
        kind=kind,
        engine="vector",
        engine_reason=f"{head.kind} runs on the vector unit",
        rows=problem,
        layout=getattr(head, "layout", "row-major"),
    )
