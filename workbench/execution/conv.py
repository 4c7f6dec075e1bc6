"""Conv2d as an implicit GEMM, tile by tile, in NHWC or NCHW (grouped and depthwise included).

The GEMM view, per group g (all groups run as one batched matmul)::

    M = N * P * Q (output pixels), N_gemm = K / groups, K_gemm = R * S * C / groups
    for m0 in range(0, M, tile_m):                       # output-pixel tiles
        A = im2col(x, rows m0:m0+tile_m)                 # (groups, tm, K_gemm), built per tile
        for n0 in range(0, K / groups, tile_n):          # output-channel tiles
            acc = sum over K-steps of tile_k: A[..., k] @ W[..., k, n0:n0+tn]
            out[m0:, g, n0:] = epilogue(acc)

im2col is a strided window view of the padded input gathered per tile, so memory stays
O(tile_m x K_gemm). NCHW runs directly (reduction order C, R, S) or, with
``layout_transform=True`` (as the mapper may insert), is transposed to NHWC first (order R, S, C).
The weight is always (K, C / groups, R, S).
"""

from __future__ import annotations

import math
from typing import Any

from workbench.execution.backend import Backend, as_operand, resolve_backend
from workbench.execution.errors import ExecutionError, check_sizes
from workbench.execution.gemm import (
    OPERAND_BYTES,
    OUTPUT_FORMAT,
    accumulate_k,
    epilogue_tile,
    prepare_gemm_inputs,
)
from workbench.execution.quant import round_to_format
from workbench.execution.trace import Trace, tile_start, tile_stop

__all__ = ["conv2d", "conv_output_size", "im2col_tile", "window_view"]


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of one spatial axis (elements)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _pair(v: int | tuple[int, int], name: str = "size") -> tuple[int, int]:
    pair = (v, v) if not isinstance(v, tuple | list) else tuple(v)
    if len(pair) != 2 or not all(isinstance(p, int) and not isinstance(p, bool) for p in pair):
        raise ExecutionError(f"conv2d: {name} must be an integer or a pair of them, got {v!r}")
    return pair[0], pair[1]


def _windows(
    xpad: Any,
    layout: str,
    rs: tuple[int, int],
    pq: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
    xp: Any,
) -> Any:
    """Strided view (N, P, Q, G, *reduction axes) of the padded input, no copy."""
    if layout == "nhwc":
        sn, sh, sw, sc = xpad.strides
        c = xpad.shape[3]
    else:
        sn, sc, sh, sw = xpad.strides
        c = xpad.shape[1]
    cg = c // groups
    n = xpad.shape[0]
    (r, s), (p, q) = rs, pq
    head_shape = (n, p, q, groups)
    head_strides = (sn, sh * stride[0], sw * stride[1], sc * cg)
    if layout == "nhwc":  # reduction order (R, S, Cg)
        shape = (*head_shape, r, s, cg)
        strides = (*head_strides, sh * dilation[0], sw * dilation[1], sc)
    else:  # reduction order (Cg, R, S)
        shape = (*head_shape, cg, r, s)
        strides = (*head_strides, sc, sh * dilation[0], sw * dilation[1])
    return xp.lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)


def _pad(x: Any, padding: tuple[int, int], nhwc: bool, xp: Any) -> Any:
    """Zero-pad the spatial axes into a new contiguous array (cheaper than ``xp.pad``)."""
    ph, pw = padding
    if ph == 0 and pw == 0:
        return xp.ascontiguousarray(x)
    if nhwc:
        n, h, w, c = x.shape
        out = xp.zeros((n, h + 2 * ph, w + 2 * pw, c), dtype=x.dtype)
        out[:, ph : ph + h, pw : pw + w, :] = x
    else:
        n, c, h, w = x.shape
        out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=x.dtype)
        out[:, :, ph : ph + h, pw : pw + w] = x
    return out


def im2col_tile(view: Any, m0: int, m1: int, xp: Any) -> Any:
    """Gather output pixels ``m0:m1`` of a window view (N, P, Q, G, *red) as (G, tm, K_gemm).

    This is the im2col step the engine runs once per pixel tile (a copy of ``G x tm x K_gemm``
    elements); calibration times it to give the host's ``gather_bytes_per_s``.
    """
    p, q, groups = view.shape[1], view.shape[2], view.shape[3]
    idx = xp.arange(m0, m1)
    a = view[idx // (p * q), (idx // q) % p, idx % q]  # (tm, G, *red)
    return xp.ascontiguousarray(a.reshape(m1 - m0, groups, -1).transpose(1, 0, 2))


def window_view(
    x: Any, rs: tuple[int, int], padding: tuple[int, int], stride: tuple[int, int], xp: Any
) -> Any:
    """Pad an NHWC input and return its (N, P, Q, 1, R, S, C) window view (for calibration)."""
    xpad = _pad(x, padding, True, xp)
    p = conv_output_size(x.shape[1], rs[0], stride[0], padding[0], 1)
    q = conv_output_size(x.shape[2], rs[1], stride[1], padding[1], 1)
    return _windows(xpad, "nhwc", rs, (p, q), stride, (1, 1), 1, xp)


def _check(x: Any, w: Any, layout: str, groups: int) -> None:
    if layout not in ("nhwc", "nchw"):
        raise ExecutionError(f"conv2d: layout must be 'nhwc' or 'nchw', got {layout!r}")
    if x.ndim != 4 or w.ndim != 4:
        raise ExecutionError(f"conv2d: need 4-D input and weight, got {x.shape} and {w.shape}")
    c = x.shape[3] if layout == "nhwc" else x.shape[1]
    k, cg = w.shape[0], w.shape[1]
    if groups <= 0 or c % groups or k % groups or cg * groups != c:
        raise ExecutionError(
            f"conv2d: channels {c}, filters {k}, weight C/groups {cg} do not fit groups={groups}"
        )


def conv2d(
    x: Any,
    w: Any,
    *,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    layout: str = "nhwc",
    layout_transform: bool = False,
    tile_m: int = 256,
    tile_n: int = 64,
    tile_k: int = 256,
    dtype: str = "fp32",
    epilogue: tuple[str, ...] = (),
    bias: Any = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Run a 2-D convolution as a tiled implicit GEMM (see the module docstring's loop nest).

    Args:
        x: Input, (N, H, W, C) for ``nhwc`` or (N, C, H, W) for ``nchw``.
        w: Weight (K, C / groups, R, S).
        stride: Per spatial axis (elements); an int means both axes.
        padding: Zero padding per spatial axis (elements).
        dilation: Per spatial axis (elements).
        groups: Channel groups (``groups == C == K`` is depthwise).
        layout: ``"nhwc"`` or ``"nchw"``; the output uses the same layout.
        layout_transform: For NCHW input, transpose to NHWC, run, and transpose back.
        tile_m: GEMM tile over output pixels N*P*Q (elements).
        tile_n: GEMM tile over output channels per group (elements).
        tile_k: K-step over the R*S*C/groups reduction (elements).
        dtype: GEMM dtype (inputs quantized as in :func:`~workbench.execution.gemm.gemm`).
        epilogue: Steps on each tile (``bias``, an activation), as in ``gemm``.
        bias: Shape (K,), for ``bias``.
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per (pixel tile, channel tile), or None.

    Returns:
        float32 output in ``layout``.
    """
    bk = resolve_backend(backend)
    xp = bk.xp
    check_sizes("conv2d", tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, groups=groups)
    stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
    dilation = _pair(dilation, "dilation")
    x = as_operand(xp, x, "conv2d", "x")
    w = as_operand(xp, w, "conv2d", "w")
    _check(x, w, layout, groups)
    if min(tile_m, tile_n, tile_k) <= 0 or min(*stride, *dilation) <= 0 or min(padding) < 0:
        raise ExecutionError("conv2d: tiles, stride and dilation must be positive, padding >= 0")
    if layout == "nchw" and layout_transform:
        x_nhwc = xp.ascontiguousarray(x.transpose(0, 2, 3, 1))
        y = conv2d(
            x_nhwc,
            w,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            layout="nhwc",
            tile_m=tile_m,
            tile_n=tile_n,
            tile_k=tile_k,
            dtype=dtype,
            epilogue=epilogue,
            bias=bias,
            backend=bk,
            trace=trace,
        )
        return xp.ascontiguousarray(y.transpose(0, 3, 1, 2))
    return _implicit_gemm(
        x,
        w,
        stride,
        padding,
        dilation,
        groups,
        layout,
        (tile_m, tile_n, tile_k),
        dtype,
        epilogue,
        bias,
        bk,
        trace,
    )


def _implicit_gemm(
    x: Any,
    w: Any,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
    layout: str,
    tiles: tuple[int, int, int],
    dtype: str,
    epilogue: tuple[str, ...],
    bias: Any,
    bk: Backend,
    trace: Trace | None,
) -> Any:
    xp = bk.xp
    nhwc = layout == "nhwc"
    n, h, wd = (x.shape[0], x.shape[1], x.shape[2]) if nhwc else (x.shape[0], *x.shape[2:])
    k, cg, r, s = w.shape
    kg = k // groups
    p = conv_output_size(h, r, stride[0], padding[0], dilation[0])
    q = conv_output_size(wd, s, stride[1], padding[1], dilation[1])
    if p <= 0 or q <= 0:
        raise ExecutionError(f"conv2d: output would be empty ({p}x{q}) for input {h}x{wd}")
    x_q, w_q = prepare_gemm_inputs(x, w, dtype, xp)
    xpad = _pad(x_q, padding, nhwc, xp)
    view = _windows(xpad, layout, (r, s), (p, q), stride, dilation, groups, xp)
    # Weight as (G, K_gemm, Kg) with the reduction order of the view.
    wg = w_q.reshape(groups, kg, cg, r, s)
    wg = wg.transpose(0, 3, 4, 2, 1) if nhwc else wg.transpose(0, 2, 3, 4, 1)
    wmat = xp.ascontiguousarray(wg.reshape(groups, r * s * cg, kg))
    bias = None if bias is None else xp.asarray(bias, dtype=xp.float32).reshape(groups, 1, kg)
    m_total, k_gemm = n * p * q, r * s * cg
    out = xp.empty((groups, m_total, kg), dtype=xp.float32)
    tile_m, tile_n, tile_k = tiles
    wa, wb, wc = OPERAND_BYTES[dtype]
    for i, m0 in enumerate(range(0, m_total, tile_m)):
        m1 = min(m0 + tile_m, m_total)
        a = im2col_tile(view, m0, m1, xp)
        for j, n0 in enumerate(range(0, kg, tile_n)):
            n1 = min(n0 + tile_n, kg)
            t0 = tile_start(trace, bk)
            acc = accumulate_k(a, wmat[:, :, n0:n1], 0, k_gemm, tile_k, xp)
            b_t = None if bias is None else bias[:, :, n0:n1]
            out[:, m0:m1, n0:n1] = epilogue_tile(acc, epilogue, b_t, None, None, bk)
            mt, nt = m1 - m0, n1 - n0
            tile_stop(
                trace,
                bk,
                t0,
                kernel="conv2d",
                tile_index=(i, j),
                bytes_touched=math.ceil(
                    groups * (mt * k_gemm * wa + k_gemm * nt * wb + mt * nt * wc)
                ),
                flops=2 * groups * mt * nt * k_gemm,
            )
    y = out.transpose(1, 0, 2).reshape(n, p, q, k)
    y = round_to_format(y, OUTPUT_FORMAT[dtype], xp)
    return y if nhwc else xp.ascontiguousarray(y.transpose(0, 3, 1, 2))
