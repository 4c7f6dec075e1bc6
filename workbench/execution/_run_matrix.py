"""Runners of matrix-engine kernels: GEMM (and unfused attention's GEMMs), conv, fused attention.

Each runner takes ``(kernel, tiling, inputs, graph, backend, trace)`` and returns a
:class:`~workbench.execution._result.RunOutput`; :func:`workbench.execution.run.execute` picks
one by the kernel's kind.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.execution._inputs import conv_op, kernel_steps
from workbench.execution._result import RunOutput
from workbench.execution._steps import Step, apply_steps, slice_operand
from workbench.execution.attention import attention_fused
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.conv import conv2d
from workbench.execution.elementwise import ACTIVATIONS
from workbench.execution.gemm import (
    GEMM_DTYPES,
    OPERAND_BYTES,
    OUTPUT_FORMAT,
    accumulate_k,
    k_slices,
    output_tiles,
    prepare_gemm_inputs,
)
from workbench.execution.quant import round_to_format
from workbench.execution.trace import Trace, tile_start, tile_stop
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["run_attention", "run_conv", "run_gemm", "tiled_gemm"]


def _gemm_dtype(kernel: Kernel) -> tuple[str, tuple[str, ...]]:
    if kernel.weight_dtype == "int4":
        return "int4", ()
    if kernel.dtype in GEMM_DTYPES:
        return kernel.dtype, ()
    return "fp32", (f"dtype {kernel.dtype} has no execution format here; ran fp32",)


def tiled_gemm(
    a: Any,
    b: Any,
    tiling: Tiling,
    *,
    dtype: str = "fp32",
    steps: tuple[Step, ...] = (),
    operands: dict[str, Any] | None = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
    name: str = "gemm",
) -> tuple[Any, int]:
    """``steps(A @ B)`` tile by tile; A (..., M, K), B (K, N) or (..., K, N).

    Returns:
        The float32 output (..., M, N) and the number of tile calls.
    """
    bk = resolve_backend(backend)
    xp = bk.xp
    operands = operands or {}
    a_q, b_q = prepare_gemm_inputs(a, b, dtype, xp)
    m, k = a_q.shape[-2:]
    n = b_q.shape[-1]
    batch = math.prod(a_q.shape[:-2])
    out = xp.empty((*a_q.shape[:-2], m, n), dtype=xp.float32)
    slices = k_slices(k, tiling.tile_k, tiling.split_k)
    wa, wb, wc = OPERAND_BYTES[dtype]
    calls = 0
    for i, j, rows, cols in output_tiles(m, n, tiling.tile_m, tiling.tile_n, tiling.raster):
        a_rows, b_cols = a_q[..., rows, :], b_q[..., :, cols]
        mt, nt = a_rows.shape[-2], b_cols.shape[-1]
        acc = None
        for s, (k0, k1) in enumerate(slices):
            if k1 <= k0 and s > 0:
                continue
            t0 = tile_start(trace, bk)
            part = accumulate_k(a_rows, b_cols, k0, k1, tiling.tile_k, xp)
            acc = part if acc is None else acc + part
            calls += max(1, -(-(k1 - k0) // tiling.tile_k))
            kt = k1 - k0
            tile_stop(
                trace,
                bk,
                t0,
                kernel=name,
                tile_index=(i, j, s),
                bytes_touched=math.ceil(batch * (mt * kt * wa + kt * nt * wb + mt * nt * wc)),
                flops=2 * batch * mt * nt * kt,
            )
        tile_ops = {key: slice_operand(v, rows, cols) for key, v in operands.items()}
        out[..., rows, cols] = apply_steps(acc, steps, tile_ops, xp)
    return round_to_format(out, OUTPUT_FORMAT[dtype], xp), calls


def run_gemm(kernel, tiling, inputs, graph, bk, trace) -> RunOutput:
    dtype, notes = _gemm_dtype(kernel)
    a = inputs["a"]
    if kernel.name.endswith(".qk"):
        a = a * bk.xp.float32(1.0 / math.sqrt(a.shape[-1]))
        notes = (*notes, "scores scaled by 1/sqrt(head_dim) on Q before the tiles")
    steps = kernel_steps(kernel, graph)
    out, calls = tiled_gemm(
        a,
        inputs["b"],
        tiling,
        dtype=dtype,
        steps=steps,
        operands=inputs,
        backend=bk,
        trace=trace,
        name=kernel.name,
    )
    if graph is None and len(kernel.ops) > 1:
        notes = (*notes, "fused epilogue ops not run: pass graph= to run them")
    g = kernel.gemm
    method = (
        f"tiled GEMM {dtype}, {g.batch}x{g.m}x{g.n}x{g.k}, tile {tiling.shape}, "
        f"split-K {tiling.split_k}, raster {tiling.raster}, {len(steps)} fused step(s)"
    )
    return RunOutput(output=out, tiles=calls, method=method, notes=notes)


def run_conv(kernel, tiling, inputs, graph, bk, trace) -> RunOutput:
    op = conv_op(kernel, graph)
    xp = bk.xp
    dtype, notes = _gemm_dtype(kernel)
    steps = kernel_steps(kernel, graph)
    per_tile = tuple(s.kind for s in steps if s.kind in ACTIVATIONS)
    fused = len(per_tile) == len(steps)
    epilogue = (("bias",) if op.bias else ()) + (per_tile if fused else ())
    declared, want = op.layout, kernel.layout if kernel.layout in ("NCHW", "NHWC") else op.layout
    x = inputs["x"]
    if declared == "NHWC" and want == "NCHW":
        x = xp.ascontiguousarray(x.transpose(0, 3, 1, 2))
    if declared != want:
        notes = (*notes, f"input transformed {declared} -> {want} first (inserted kernel)")
    y = conv2d(
        x,
        inputs["w"],
        stride=op.stride,
        padding=op.padding,
        dilation=op.dilation,
        groups=op.groups,
        layout=want.lower() if declared != "NCHW" else "nchw",
        layout_transform=declared == "NCHW" and want == "NHWC",
        tile_m=tiling.tile_m,
        tile_n=tiling.tile_n,
        tile_k=tiling.tile_k,
        dtype=dtype,
        epilogue=epilogue,
        bias=inputs.get("bias"),
        backend=bk,
        trace=trace,
    )
    if declared == "NHWC" and want == "NCHW":
        y = xp.ascontiguousarray(y.transpose(0, 2, 3, 1))
    if not fused:
        y = apply_steps(y, steps, inputs, xp)
        notes = (*notes, "epilogue with extra operands ran as one pass after the tiles")
    m, n, k = op.gemm_mnk
    tiles = math.ceil(m / tiling.tile_m) * math.ceil(n / tiling.tile_n)
    method = (
        f"implicit-GEMM conv {op.kernel_h}x{op.kernel_w}/{op.stride} groups {op.groups} "
        f"({want}), GEMM {m}x{n}x{k}, tile {tiling.shape}"
    )
    return RunOutput(output=y, tiles=tiles, method=method, notes=notes)


def run_attention(kernel, tiling, inputs, graph, bk, trace) -> RunOutput:
    p = kernel.attention
    out = attention_fused(
        inputs["q"],
        inputs["k"],
        inputs["v"],
        q_tile=tiling.tile_m,
        kv_tile=tiling.tile_n,
        causal=p.causal,
        backend=bk,
        trace=trace,
    )
    notes: tuple[str, ...] = ()
    if tiling.split_k > 1:
        notes = (f"{tiling.split_k} KV splits run one after another (same result)",)
    q_tiles = math.ceil(p.q_len / tiling.tile_m)
    tiles = q_tiles * math.ceil(p.kv_len / tiling.tile_n)
    method = (
        f"fused attention B{p.batch} H{p.heads}/{p.kv_heads} Lq {p.q_len} Lkv {p.kv_len} "
        f"D {p.head_dim}, q tile {tiling.tile_m}, kv tile {tiling.tile_n}"
    )
    return RunOutput(output=out, tiles=tiles, method=method, notes=notes)
