"""Tiled GEMM, executed tile by tile exactly as mapped.

Loop nest (``loop_order="mn"`` rasters output tiles row-major, ``"nm"`` column-major)::

    for (m0, n0) in raster(M / tile_m, N / tile_n):          # output tiles
        for s in range(split_k):                             # split-K slices of the K loop
            acc[s] = 0                                       # fp32 accumulator
            for k0 in slice_s(K, step=tile_k):               # K-steps
                acc[s] += A[m0:m0+tm, k0:k0+tk] @ B[k0:k0+tk, n0:n0+tn]
        C[m0:, n0:] = round_out(epilogue(sum_s acc[s]))      # split-K reduce, then epilogue

Each K-step is one ``xp.matmul`` on the tile slices, so large tiles run near library speed.
Low-precision dtypes quantize the inputs with :mod:`workbench.execution.quant` first (the
arithmetic stays fp32, as tensor cores accumulate), so quality results are real.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from workbench.execution import cupy_kernels
from workbench.execution.backend import Backend, as_operand, resolve_backend
from workbench.execution.elementwise import ACTIVATIONS, activate
from workbench.execution.errors import ExecutionError, check_sizes
from workbench.execution.quant import fake_quantize, round_to_format
from workbench.execution.trace import Trace, tile_start, tile_stop

__all__ = [
    "EPILOGUES",
    "GEMM_DTYPES",
    "OPERAND_BYTES",
    "OUTPUT_FORMAT",
    "accumulate_k",
    "epilogue_tile",
    "gemm",
    "k_slices",
    "output_tiles",
    "prepare_gemm_inputs",
]

# Output format per GEMM dtype: what the kernel writes (fp8 and int4 kernels write bf16; int8
# writes the dequantized fp32 result).
OUTPUT_FORMAT = {
    "fp32": "fp32", "tf32": "fp32", "bf16": "bf16", "fp16": "fp16",
    "fp8_e4m3": "bf16", "fp8_e5m2": "bf16", "int8": "fp32", "int4": "bf16",
}  # fmt: skip
GEMM_DTYPES = tuple(OUTPUT_FORMAT)
# (A bytes, B bytes, C bytes) per element, for trace traffic.
OPERAND_BYTES = {
    "fp32": (4, 4, 4), "tf32": (4, 4, 4), "bf16": (2, 2, 2), "fp16": (2, 2, 2),
    "fp8_e4m3": (1, 1, 2), "fp8_e5m2": (1, 1, 2), "int8": (1, 1, 4), "int4": (2, 0.5, 2),
}  # fmt: skip
EPILOGUES = ("bias", "residual", "quantize_int8", "quantize_fp8", *ACTIVATIONS)


def prepare_gemm_inputs(a: Any, b: Any, dtype: str, xp: Any) -> tuple[Any, Any]:
    """Quantize GEMM inputs as a ``dtype`` kernel sees them, returned as float32.

    fp8: one scale per tensor; int8: per row of A (token) and per column of B (output
    channel); int4: weight-only, B in groups of 128 along K, A in bf16.
    """
    a = as_operand(xp, a, "gemm", "A")
    b = as_operand(xp, b, "gemm", "B")
    if dtype in ("fp32", "tf32", "bf16", "fp16"):
        return round_to_format(a, dtype, xp), round_to_format(b, dtype, xp)
    if dtype in ("fp8_e4m3", "fp8_e5m2"):
        return fake_quantize(a, dtype, xp=xp), fake_quantize(b, dtype, xp=xp)
    if dtype == "int8":
        return fake_quantize(a, "int8", axis=0, xp=xp), fake_quantize(b, "int8", axis=1, xp=xp)
    if dtype == "int4":
        return round_to_format(a, "bf16", xp), fake_quantize(b, "int4", axis=0, xp=xp)
    raise ExecutionError(f"gemm: unknown dtype {dtype!r} (known: {', '.join(GEMM_DTYPES)})")


def output_tiles(
    m: int, n: int, tile_m: int, tile_n: int, loop_order: str
) -> Iterator[tuple[int, int, slice, slice]]:
    """Yield ``(i, j, rows, cols)`` for each output tile in raster order (ragged edges kept)."""
    rows = [slice(m0, min(m0 + tile_m, m)) for m0 in range(0, m, tile_m)]
    cols = [slice(n0, min(n0 + tile_n, n)) for n0 in range(0, n, tile_n)]
    if loop_order == "mn":
        for i, r in enumerate(rows):
            for j, c in enumerate(cols):
                yield i, j, r, c
    else:
        for j, c in enumerate(cols):
            for i, r in enumerate(rows):
                yield i, j, r, c


def k_slices(k: int, tile_k: int, split_k: int) -> tuple[tuple[int, int], ...]:
    """Split the K loop into ``split_k`` contiguous ranges of whole K-steps (some may be empty)."""
    per = math.ceil(math.ceil(k / tile_k) / split_k) * tile_k
    return tuple((min(s * per, k), min((s + 1) * per, k)) for s in range(split_k))


def accumulate_k(a: Any, b: Any, k0: int, k1: int, tile_k: int, xp: Any) -> Any:
    """fp32 sum over K-steps of ``a[..., k] @ b[..., k, :]`` for k in [k0, k1) (batch dims ok)."""
    acc = None
    for ks in range(k0, k1, tile_k):
        ke = min(ks + tile_k, k1)
        part = xp.matmul(a[..., ks:ke], b[..., ks:ke, :])
        if acc is None:
            acc = part
        else:
            acc += part
    if acc is None:
        return xp.zeros((*a.shape[:-1], b.shape[-1]), dtype=xp.float32)
    return acc


def _check(a: Any, b: Any, tiles: tuple[int, int, int], split_k: int, loop_order: str) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ExecutionError(f"gemm: need A (M, K) and B (K, N), got {a.shape} and {b.shape}")
    if min(tiles) <= 0 or split_k <= 0:
        raise ExecutionError(f"gemm: tiles {tiles} and split_k {split_k} must be positive")
    if loop_order not in ("mn", "nm"):
        raise ExecutionError(f"gemm: loop_order must be 'mn' or 'nm', got {loop_order!r}")


def _check_epilogue(epilogue: tuple[str, ...], bias: Any, residual: Any, n: int, m: int) -> None:
    for step in epilogue:
        if step not in EPILOGUES:
            raise ExecutionError(f"gemm: unknown epilogue step {step!r} (known: {EPILOGUES})")
    if "bias" in epilogue and (bias is None or tuple(bias.shape) != (n,)):
        raise ExecutionError(f"gemm: epilogue 'bias' needs bias of shape ({n},)")
    if "residual" in epilogue and (residual is None or tuple(residual.shape) != (m, n)):
        raise ExecutionError(f"gemm: epilogue 'residual' needs residual of shape ({m}, {n})")
    quant = [i for i, s in enumerate(epilogue) if s.startswith("quantize_")]
    if quant and quant != [len(epilogue) - 1]:
        raise ExecutionError("gemm: a quantize epilogue step must come last, and only once")


def epilogue_tile(
    acc: Any,
    epilogue: tuple[str, ...],
    bias: Any,
    residual: Any,
    out_scale: float | None,
    bk: Backend,
) -> Any:
    """Apply the epilogue steps in order to one tile (a fused CuPy kernel where one fits)."""
    xp = bk.xp
    if bk.is_gpu and cupy_kernels.fits_fused_epilogue(epilogue):
        return cupy_kernels.fused_epilogue_cupy(acc, epilogue, bias, residual)
    for step in epilogue:
        if step == "bias":
            acc = acc + bias
        elif step == "residual":
            acc = acc + residual
        elif step.startswith("quantize_"):
            if out_scale is not None:
                acc = _quantize_out(acc, step, out_scale, xp)
        else:
            acc = activate(step, acc, xp)
    return acc


def _quantize_out(y: Any, step: str, scale: float, xp: Any) -> Any:
    fmt = "int8" if step == "quantize_int8" else "fp8_e4m3"
    if fmt == "int8":
        return xp.clip(xp.rint(y / xp.float32(scale)), -127, 127) * xp.float32(scale)
    return round_to_format(y / xp.float32(scale), fmt, xp) * xp.float32(scale)


def gemm(
    a: Any,
    b: Any,
    *,
    tile_m: int,
    tile_n: int,
    tile_k: int,
    split_k: int = 1,
    loop_order: str = "mn",
    dtype: str = "fp32",
    epilogue: tuple[str, ...] = (),
    bias: Any = None,
    residual: Any = None,
    out_scale: float | None = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Run ``C = epilogue(A @ B)`` tile by tile as mapped (see the module docstring's loop nest).

    Args:
        a: A, shape (M, K).
        b: B, shape (K, N).
        tile_m: Output tile rows (elements); ragged edges are handled exactly.
        tile_n: Output tile columns (elements).
        tile_k: K-step (elements).
        split_k: Number of split-K slices whose fp32 partials are summed before the epilogue.
        loop_order: ``"mn"`` (row-major raster over output tiles) or ``"nm"`` (column-major).
        dtype: A format in :data:`GEMM_DTYPES`; inputs are quantized to it, accumulation is fp32,
            the output is rounded to :data:`OUTPUT_FORMAT` ``[dtype]``.
        epilogue: Steps applied in order: ``bias``, ``residual``, an activation, and last
            optionally ``quantize_int8`` / ``quantize_fp8`` (fused per tile with ``out_scale``;
            without it the dynamic per-tensor scale needs the whole output, so it runs as one
            pass after the tiles).
        bias: Shape (N,), for ``bias``.
        residual: Shape (M, N), for ``residual``.
        out_scale: Output quantization scale (value per grid step), or None for dynamic.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per (output tile, split-K slice), or None.

    Returns:
        float32 array (M, N) of the backend's array module.

    Example:
        >>> import numpy as np
        >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> gemm(a, a.T, tile_m=1, tile_n=1, tile_k=2, backend="numpy").tolist()
        [[5.0, 14.0], [14.0, 50.0]]
    """
    check_sizes("gemm", tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, split_k=split_k)
    if not isinstance(epilogue, tuple | list):
        raise ExecutionError(f"gemm: epilogue must be a tuple of step names, got {epilogue!r}")
    bk = resolve_backend(backend)
    xp = bk.xp
    a_q, b_q = prepare_gemm_inputs(a, b, dtype, xp)
    _check(a_q, b_q, (tile_m, tile_n, tile_k), split_k, loop_order)
    m, k = a_q.shape
    n = b_q.shape[1]
    bias = None if bias is None else as_operand(xp, bias, "gemm", "bias")
    residual = None if residual is None else as_operand(xp, residual, "gemm", "residual")
    _check_epilogue(epilogue, bias, residual, n, m)
    out = xp.empty((m, n), dtype=xp.float32)
    slices = k_slices(k, tile_k, split_k)
    wa, wb, wc = OPERAND_BYTES[dtype]
    for i, j, rows, cols in output_tiles(m, n, tile_m, tile_n, loop_order):
        a_rows, b_cols = a_q[rows], b_q[:, cols]
        mt, nt = a_rows.shape[0], b_cols.shape[1]
        partials = []
        for s, (k0, k1) in enumerate(slices):
            if k1 <= k0 and s > 0:
                continue
            t0 = tile_start(trace, bk)
            partials.append(accumulate_k(a_rows, b_cols, k0, k1, tile_k, xp))
            kt = k1 - k0
            tile_stop(
                trace,
                bk,
                t0,
                kernel="gemm",
                tile_index=(i, j, s),
                bytes_touched=math.ceil((mt * kt) * wa + (kt * nt) * wb + mt * nt * wc),
                flops=2 * mt * nt * kt,
            )
        acc = partials[0]
        for p in partials[1:]:
            acc += p
        b_t = None if bias is None else bias[cols]
        r_t = None if residual is None else residual[rows, cols]
        out[rows, cols] = epilogue_tile(acc, epilogue, b_t, r_t, out_scale, bk)
    if epilogue and epilogue[-1].startswith("quantize_") and out_scale is None:
        top = 127.0 if epilogue[-1] == "quantize_int8" else 448.0
        amax = float(xp.abs(out).max()) if out.size else 0.0
        out = _quantize_out(out, epilogue[-1], (amax / top) or 1.0, xp)
    return round_to_format(out, OUTPUT_FORMAT[dtype], xp)
