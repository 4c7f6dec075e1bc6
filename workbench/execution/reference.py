"""Naive float64 references that every tiled kernel is tested against (NumPy, host only).

They are written for clarity, not speed: direct formulas, no tiling, float64 throughout.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.execution.backend import to_numpy

__all__ = [
    "attention_ref",
    "conv2d_ref",
    "elementwise_ref",
    "gemm_ref",
    "layernorm_ref",
    "reduce_ref",
    "rmsnorm_ref",
    "softmax_ref",
]

_GELU_C = math.sqrt(2.0 / math.pi)
_ACT64: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda x: x,
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
}


def _f64(x: Any) -> np.ndarray:
    return to_numpy(x).astype(np.float64)


def elementwise_ref(x: Any, kinds: tuple[str, ...]) -> np.ndarray:
    """Apply unary kinds left to right in float64."""
    y = _f64(x)
    for kind in kinds:
        y = _ACT64[kind](y)
    return y


def gemm_ref(
    a: Any, b: Any, *, epilogue: tuple[str, ...] = (), bias: Any = None, residual: Any = None
) -> np.ndarray:
    """``epilogue(A @ B)`` in float64 (quantize steps are not applied here)."""
    y = _f64(a) @ _f64(b)
    for step in epilogue:
        if step == "bias":
            y = y + _f64(bias)
        elif step == "residual":
            y = y + _f64(residual)
        elif not step.startswith("quantize_"):
            y = _ACT64[step](y)
    return y


def conv2d_ref(
    x: Any,
    w: Any,
    *,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
    layout: str = "nhwc",
) -> np.ndarray:
    """Direct convolution in float64; ``w`` is (K, C/groups, R, S); output in ``layout``."""
    xs = _f64(x)
    if layout == "nchw":
        xs = xs.transpose(0, 2, 3, 1)
    ws = _f64(w)
    n, h, wd, _ = xs.shape
    k, cg, r, s = ws.shape
    xp_ = np.pad(xs, ((0, 0), (padding[0],) * 2, (padding[1],) * 2, (0, 0)))
    p = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    kg = k // groups
    out = np.zeros((n, p, q, k))
    for g in range(groups):
        for ri in range(r):
            for si in range(s):
                h0, w0 = ri * dilation[0], si * dilation[1]
                patch = xp_[
                    :, h0 : h0 + stride[0] * p : stride[0], w0 : w0 + stride[1] * q : stride[1]
                ]
                patch = patch[:, :p, :q, g * cg : (g + 1) * cg]
                out[..., g * kg : (g + 1) * kg] += patch @ ws[g * kg : (g + 1) * kg, :, ri, si].T
    return out.transpose(0, 3, 1, 2) if layout == "nchw" else out


def attention_ref(
    q: Any, k: Any, v: Any, *, causal: bool = False, scale: float | None = None
) -> np.ndarray:
    """softmax(Q K^T * scale + mask) V in float64, with GQA and the KV-cache causal offset.

    Shapes: q (B, Hq, Lq, D), k and v (B, Hkv, Lkv, D); query i sits at position
    ``Lkv - Lq + i`` and sees keys ``j <= Lkv - Lq + i``.
    """
    q64, k64, v64 = _f64(q), _f64(k), _f64(v)
    group = q64.shape[1] // k64.shape[1]
    k64 = np.repeat(k64, group, axis=1)
    v64 = np.repeat(v64, group, axis=1)
    lq, lk, d = q64.shape[2], k64.shape[2], q64.shape[3]
    s = q64 @ k64.swapaxes(-1, -2) * (1.0 / math.sqrt(d) if scale is None else scale)
    if causal:
        pos = lk - lq + np.arange(lq)[:, None]
        s = np.where(np.arange(lk)[None, :] <= pos, s, -np.inf)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v64


def softmax_ref(x: Any) -> np.ndarray:
    """Softmax over the last axis in float64."""
    y = _f64(x)
    y = np.exp(y - y.max(axis=-1, keepdims=True))
    return y / y.sum(axis=-1, keepdims=True)


def layernorm_ref(x: Any, gamma: Any = None, beta: Any = None, *, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm over the last axis in float64 (biased variance)."""
    y = _f64(x)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + eps)
    y = y if gamma is None else y * _f64(gamma)
    return y if beta is None else y + _f64(beta)


def rmsnorm_ref(x: Any, gamma: Any = None, *, eps: float = 1e-6) -> np.ndarray:
    """RMSNorm over the last axis in float64."""
    y = _f64(x)
    y = y / np.sqrt((y * y).mean(-1, keepdims=True) + eps)
    return y if gamma is None else y * _f64(gamma)


def reduce_ref(x: Any, kind: str) -> np.ndarray:
    """Sum, mean or max over the last axis in float64."""
    return np.asarray(getattr(np, kind)(_f64(x), axis=-1))
