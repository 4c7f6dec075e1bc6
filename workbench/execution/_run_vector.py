"""Runners of vector kernels: row (norms, softmax, reductions), elementwise, layout, gather.

Each runner takes ``(kernel, tiling, inputs, graph, backend, trace)`` and returns a
:class:`~workbench.execution._result.RunOutput`.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.execution import rows as _rows
from workbench.execution._inputs import head_op, kernel_steps
from workbench.execution._result import RunOutput
from workbench.execution._steps import apply_steps, slice_operand
from workbench.execution.errors import ExecutionError
from workbench.execution.trace import tile_start, tile_stop
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel

__all__ = ["run_gather", "run_layout", "run_rows"]


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


def run_rows(kernel, tiling, inputs, graph, bk, trace) -> RunOutput:
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
    return RunOutput(output=out, tiles=tiles, method=method, notes=notes)


#: Bytes of the source block one transpose step reads with a stride (an L1-sized block, 32 KiB:
#: an assumption that fits the L1 data cache of current x86 and Arm cores). A strided read
#: touches one element per cache line; the block's lines stay cached until all their elements
#: have been read, which is what keeps a transpose near copy speed.
TRANSPOSE_BLOCK_BYTES = 32 * 1024


def run_layout(kernel, tiling, inputs, graph, bk, trace) -> RunOutput:
    xp = bk.xp
    x = inputs["x"]
    out = xp.empty((x.shape[1], x.shape[0]), dtype=xp.float32)
    step = max(1, tiling.tile_m)
    # NOTE: each tile is transposed in cache-sized blocks of rows (TRANSPOSE_BLOCK_BYTES of
    # source); a whole large tile at once runs at a third of the speed (strided misses).
    block = max(8, TRANSPOSE_BLOCK_BYTES // (4 * max(1, x.shape[1])))
    for i, r0 in enumerate(range(0, x.shape[0], step)):
        t0 = tile_start(trace, bk)
        r1 = min(r0 + step, x.shape[0])
        for b0 in range(r0, r1, block):
            b1 = min(b0 + block, r1)
            out[:, b0:b1] = x[b0:b1].T
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
    method = (
        f"layout transform as a tiled 2-D transpose of {x.shape}, {step} rows per tile in "
        f"blocks of {block} rows"
    )
    return RunOutput(output=out, tiles=tiles, method=method)


def run_gather(kernel, tiling, inputs, graph, bk, trace) -> RunOutput:
    xp = bk.xp
    table = inputs["x"]
    ids = xp.arange(table.shape[0])[::-1]
    out = xp.empty_like(table)
    step = max(1, tiling.tile_m)
    for r0 in range(0, table.shape[0], step):
        out[r0 : r0 + step] = table[ids[r0 : r0 + step]]
    method = f"row gather of {table.shape[0]} rows of {table.shape[1]}, {step} rows per tile"
    return RunOutput(output=out, tiles=math.ceil(table.shape[0] / step), method=method)
