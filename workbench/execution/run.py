"""The adapter from the mapper to the engine: run a mapped kernel tile by tile, as mapped.

``execute`` takes a :class:`~workbench.mapper.KernelMapping` (or a ``(Kernel, Tiling)`` pair)
and runs it with the decisions of its :class:`~workbench.scheduling.tiling.Tiling`:

* ``gemm``: output tiles ``tile_m x tile_n`` visited in ``raster`` order, K-steps of ``tile_k``,
  ``split_k`` slices summed, then the fused epilogue (the kernel's ops after its head) per tile,
  at the kernel's dtype. Batched GEMMs run every batch entry of a tile in one call.
  Unfused attention kernels ``<op>.qk`` (scaled Q K^T), ``<op>.pv`` are batched GEMMs.
* ``conv``: implicit GEMM with the mapped tiles; when the kernel's layout differs from the conv
  op's declared layout, the input is transformed first (as the mapper's inserted kernel does).
* ``attention``: flash-style with query tile ``tile_m`` and KV tile ``tile_n``.
* ``row`` (norm, softmax, reduce, ``<op>.softmax``): ``tile_m`` rows per tile, statistics over
  column chunks of ``tile_n`` (one chunk when the row fits), then the fused steps per tile.
* ``elementwise``: the fused chain per tile of ``tile_m`` rows; ``layout``: tiled transpose;
  ``gather``: row gather. ``collective``: refused with the reason.

Without the graph (``graph=None``) a kernel runs by its kind and name: no fused epilogue, norms
guessed from the name; a conv needs the graph for its stride and padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workbench.execution import rows as _rows
from workbench.execution._inputs import (
    conv_op,
    head_op,
    kernel_steps,
    make_inputs,
    output_view,
)
from workbench.execution._steps import Step, apply_steps, slice_operand
from workbench.execution.attention import attention_fused
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.conv import conv2d
from workbench.execution.elementwise import ACTIVATIONS
from workbench.execution.errors import ExecutionError
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
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["ExecutionResult", "execute", "make_inputs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult:
    """What one execution of a mapped kernel produced.

    Attributes:
        kernel: Kernel name.
        kind: Kernel kind.
        backend: ``numpy`` or ``cupy``.
        output: The output array (backend array module), float32.
        tile: The tiling that ran, ``MxNxK``.
        tiles: Tile executions (tile calls, split-K slices counted).
        method: One line saying how it ran.
        notes: Where execution departs from the mapping, and why.
        trace: The trace recorded (None when not asked for).
    """

    kernel: str
    kind: str
    backend: str
    output: Any
    tile: str
    tiles: int
    method: str
    notes: tuple[str, ...] = ()
    trace: Trace | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    output: Any
    tiles: int
    method: str
    notes: tuple[str, ...] = ()


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


def _run_gemm(kernel, tiling, inputs, graph, bk, trace) -> _Run:
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
    return _Run(output=out, tiles=calls, method=method, notes=notes)


def _run_conv(kernel, tiling, inputs, graph, bk, trace) -> _Run:
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
    return _Run(output=y, tiles=tiles, method=method, notes=notes)


def _run_attention(kernel, tiling, inputs, graph, bk, trace) -> _Run:
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
    return _Run(output=out, tiles=tiles, method=method, notes=notes)


def _row_kind(kernel: Kernel, graph: Graph | None) -> tuple[str, str]:
    """(row function, detail) from the head op's type, else from the kernel's name."""
    op = head_op(kernel, graph)
    name = kernel.name.lower()
    if kernel.name.endswith(".softmax") or (op is not None and op.kind == "Softmax"):
        return "softmax", ""
    if op is not None:
        if op.kind in ("LayerNorm", "RMSNorm"):
            return op.kind.lower(), ""
        if op.kind == "Reduce":
            return "reduce", op.op  # type: ignore[attr-defined]
        if op.kind == "Pool" and op.op == "global_avg":  # type: ignore[attr-defined]
            return "reduce", "mean"
        raise ExecutionError(f"kernel {kernel.name!r}: {op.kind} is not executed by the adapter")
    if "rms" in name:
        return "rmsnorm", ""
    if "norm" in name or "ln" in name.split("."):
        return "layernorm", ""
    return "reduce", "sum"


def _causal_mask(kernel: Kernel, x: Any, graph: Graph | None, xp: Any) -> Any:
    op = head_op(kernel, graph)
    if not (kernel.name.endswith(".softmax") and op is not None and getattr(op, "causal", False)):
        return x
    lq, lk = op.q_len, op.kv_len  # type: ignore[attr-defined]
    rows = xp.arange(lq)[:, None] + (lk - lq)
    mask = xp.where(xp.arange(lk)[None, :] > rows, xp.float32(-xp.inf), xp.float32(0.0))
    return (x.reshape(-1, lq, lk) + mask).reshape(x.shape)


def _row_fn(kind: str, detail: str, inputs: dict[str, Any], col_tile: int, xp: Any):
    g, b = inputs.get("gamma"), inputs.get("beta")
    if kind == "softmax":
        return lambda t: _rows._softmax_tile(t, "online", col_tile, xp)
    if kind == "layernorm":

        def ln(t: Any) -> Any:
            mean, var = _rows._moments(t, "online", col_tile, xp)
            y = (t - mean) / xp.sqrt(var + xp.float32(1e-5))
            y = y if g is None else y * g
            return y if b is None else y + b

        return ln
    if kind == "rmsnorm":

        def rms(t: Any) -> Any:
            y = t / xp.sqrt(_rows._mean_square(t, "online", col_tile, xp) + xp.float32(1e-6))
            return y if g is None else y * g

        return rms
    return lambda t: _rows._reduce_tile(t, detail, "online", col_tile, xp)[:, None]


def _run_rows(kernel, tiling, inputs, graph, bk, trace) -> _Run:
    xp = bk.xp
    steps = kernel_steps(kernel, graph)
    x = inputs["x"]
    notes: tuple[str, ...] = ()
    if kernel.kind == "row":
        kind, detail = _row_kind(kernel, graph)
        x = _causal_mask(kernel, x, graph, xp)
        fn = _row_fn(kind, detail, inputs, max(1, tiling.tile_n), xp)
    elif kernel.kind == "elementwise":
        kind, fn = "elementwise", (lambda t: t)
        if graph is None:
            notes = ("elementwise ops unknown without graph=: ran a copy",)
    else:
        raise ExecutionError(f"kernel {kernel.name!r}: kind {kernel.kind} is not a row kernel")
    n_rows, cols = x.shape
    out = None
    tiles = 0
    for i, r0 in enumerate(range(0, n_rows, max(1, tiling.tile_m))):
        rows = slice(r0, min(r0 + tiling.tile_m, n_rows))
        t0 = tile_start(trace, bk)
        y = fn(x[rows])
        tile_ops = {key: slice_operand(v, rows, slice(None)) for key, v in inputs.items()}
        y = apply_steps(y, steps, tile_ops, xp)
        if out is None:
            out = xp.empty((n_rows, y.shape[1]), dtype=xp.float32)
        out[rows] = y
        tiles += 1
        nr = rows.stop - rows.start
        tile_stop(
            trace,
            bk,
            t0,
            kernel=kernel.name,
            tile_index=(i,),
            bytes_touched=4 * nr * (cols + y.shape[1]),
            flops=kernel.flops * nr // n_rows,
        )
    assert out is not None  # NOTE: a row kernel has at least one row tile
    out = out[:, 0] if kind == "reduce" else out
    method = (
        f"{kind} over {n_rows}x{cols}, {tiling.tile_m} rows x {tiling.tile_n} cols per "
        f"tile, {tiling.passes} pass(es), {len(steps)} fused step(s)"
    )
    return _Run(output=out, tiles=tiles, method=method, notes=notes)


def _run_layout(kernel, tiling, inputs, graph, bk, trace) -> _Run:
    xp = bk.xp
    x = inputs["x"]
    out = xp.empty((x.shape[1], x.shape[0]), dtype=xp.float32)
    step = max(1, tiling.tile_m)
    for i, r0 in enumerate(range(0, x.shape[0], step)):
        t0 = tile_start(trace, bk)
        out[:, r0 : r0 + step] = x[r0 : r0 + step].T
        tile_stop(
            trace,
            bk,
            t0,
            kernel=kernel.name,
            tile_index=(i,),
            bytes_touched=8 * min(step, x.shape[0] - r0) * x.shape[1],
            flops=0,
        )
    tiles = math.ceil(x.shape[0] / step)
    method = f"layout transform as a tiled 2-D transpose of {x.shape}, {step} rows per tile"
    return _Run(output=out, tiles=tiles, method=method)


def _run_gather(kernel, tiling, inputs, graph, bk, trace) -> _Run:
    xp = bk.xp
    table = inputs["x"]
    ids = xp.arange(table.shape[0])[::-1]
    out = xp.empty_like(table)
    step = max(1, tiling.tile_m)
    for r0 in range(0, table.shape[0], step):
        out[r0 : r0 + step] = table[ids[r0 : r0 + step]]
    method = f"row gather of {table.shape[0]} rows of {table.shape[1]}, {step} rows per tile"
    return _Run(output=out, tiles=math.ceil(table.shape[0] / step), method=method)


_RUNNERS = {
    "gemm": _run_gemm,
    "conv": _run_conv,
    "attention": _run_attention,
    "row": _run_rows,
    "elementwise": _run_rows,
    "layout": _run_layout,
    "gather": _run_gather,
}


def _unpack(item: Any) -> tuple[Kernel, Tiling]:
    if isinstance(item, tuple) and len(item) == 2:
        kernel, tiling = item
    else:
        kernel, tiling = getattr(item, "kernel", None), getattr(item, "tiling", None)
    if not isinstance(kernel, Kernel) or not isinstance(tiling, Tiling):
        raise ExecutionError("execute: expected a KernelMapping or a (Kernel, Tiling) pair")
    return kernel, tiling


def execute(
    item: Any,
    inputs: dict[str, Any] | None = None,
    *,
    graph: Graph | None = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
    seed: int = 0,
) -> ExecutionResult:
    """Run a mapped kernel tile by tile exactly as its tiling says (see the module docstring).

    Args:
        item: A :class:`~workbench.mapper.KernelMapping` or a ``(Kernel, Tiling)`` pair.
        inputs: Arrays keyed as :func:`make_inputs` names them; None makes random ones.
        graph: The graph the kernel came from (fused epilogues, conv shapes, op types).
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per tile, or None.
        seed: Seed for random inputs.

    Returns:
        The :class:`ExecutionResult`.

    Raises:
        ExecutionError: The kernel cannot be executed (a collective, an op the adapter does not
            run, a conv without its graph), with the reason.
    """
    kernel, tiling = _unpack(item)
    bk = resolve_backend(backend)
    runner = _RUNNERS.get(kernel.kind)
    if runner is None:
        raise ExecutionError(
            f"kernel {kernel.name!r}: a {kernel.kind} kernel moves data between chips; "
            "one process cannot execute it"
        )
    if min(tiling.tile_m, tiling.tile_n, tiling.tile_k) <= 0:
        raise ExecutionError(f"kernel {kernel.name!r}: tiling {tiling.shape} is not positive")
    if inputs is None:
        inputs = make_inputs(kernel, seed, bk, graph=graph)
    if kernel.kind in ("row", "elementwise", "layout", "gather") and "x" in inputs:
        view = output_view(kernel)
        inputs = {**inputs, "x": inputs["x"].reshape(view)}
    run = runner(kernel, tiling, inputs, graph, bk, trace)
    return ExecutionResult(
        kernel=kernel.name,
        kind=kernel.kind,
        backend=bk.name,
        output=run.output,
        tile=tiling.shape,
        tiles=run.tiles,
        method=run.method,
        notes=run.notes,
        trace=trace,
    )
