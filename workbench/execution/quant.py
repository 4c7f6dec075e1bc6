"""Quantization emulation: the formats the mapper offers, rounded exactly as hardware rounds.

Every function takes and returns float32 arrays of the backend's array module ``xp`` (values
on the format's grid), so a low-precision kernel can run its arithmetic in fp32 and still show
the real quality loss. Integer formats carry scales:

- bf16: round-to-nearest-even on the fp32 bit pattern (keep the top 16 bits).
- fp16: IEEE half via the array module's ``float16`` cast (round to nearest even, inf past 65504).
- fp8 e4m3 (max 448, no inf: saturates) and e5m2 (max 57344, saturated here as well), with a
  per-tensor or per-channel scale ``amax / max``.
- int8: symmetric, per channel along ``axis`` (scale = amax / 127).
- int4: weight-only, symmetric, group-wise along ``axis`` in groups of ``group_size`` (scale =
  amax / 7, values clipped to [-8, 7]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.execution.backend import to_numpy
from workbench.execution.errors import ExecutionError

__all__ = [
    "FP8_MAX",
    "QUANT_FORMATS",
    "QualityMetrics",
    "Quantized",
    "dequantize",
    "error_metrics",
    "fake_quantize",
    "quantize",
    "round_bf16",
    "round_fp8",
    "round_to_format",
]

FP8_MAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}
# (explicit mantissa bits, smallest normal exponent) per fp8 format (OCP FP8 spec, 2023).
_FP8_GRID = {"fp8_e4m3": (3, -6), "fp8_e5m2": (2, -14)}
_INT_MAX = {"int8": 127, "int4": 7}
QUANT_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8", "int4")


@dataclass(frozen=True, slots=True, kw_only=True)
class Quantized:
    """A quantized tensor: values on the format's grid plus the scales that map them back.

    Attributes:
        fmt: Format name (a key of :data:`QUANT_FORMATS`).
        values: float32 array of grid values (integers for int8/int4).
        scale: Scale array broadcastable to ``values`` (1.0 for bf16/fp16/fp32/tf32).
        axis: Channel axis the scales follow (None: per tensor).
        group_size: int4 group length along ``axis`` (elements), else None.
    """

    fmt: str
    values: Any
    scale: Any
    axis: int | None
    group_size: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class QualityMetrics:
    """How far an approximation is from the exact (float64) result.

    Attributes:
        max_abs_error: max |approx - exact| (same unit as the data).
        rel_error: ||approx - exact||_2 / ||exact||_2 (dimensionless).
        snr_db: 10 log10(||exact||^2 / ||approx - exact||^2) (dB; inf when exact).
    """

    max_abs_error: float
    rel_error: float
    snr_db: float


def round_bf16(x: Any, xp: Any = np) -> Any:
    """Round float32 values to bfloat16 (round to nearest, ties to even), returned as float32."""
    x = xp.ascontiguousarray(xp.asarray(x, dtype=xp.float32))
    bits = x.view(xp.uint32)
    bias = xp.uint32(0x7FFF) + ((bits >> xp.uint32(16)) & xp.uint32(1))
    rounded = ((bits + bias) & xp.uint32(0xFFFF0000)).view(xp.float32)
    return xp.where(xp.isnan(x), x, rounded)


def _round_mantissa(x: Any, mantissa_bits: int, min_exp: int, xp: Any) -> Any:
    """Round to a float grid with ``mantissa_bits`` and subnormals below ``2**min_exp``."""
    x = xp.asarray(x, dtype=xp.float32)
    _, e = xp.frexp(x)  # x = f * 2**e, 0.5 <= |f| < 1, so floor(log2|x|) = e - 1
    exp = xp.maximum(e.astype(xp.int32) - 1, min_exp)
    quantum = xp.ldexp(xp.float32(1.0), (exp - mantissa_bits).astype(xp.int32))
    return (xp.rint(x / quantum) * quantum).astype(xp.float32)


def round_fp8(x: Any, fmt: str, xp: Any = np) -> Any:
    """Round float32 values to an fp8 grid, saturating at the format's max (no inf)."""
    mantissa, min_exp = _FP8_GRID[fmt]
    limit = xp.float32(FP8_MAX[fmt])
    return xp.clip(_round_mantissa(x, mantissa, min_exp, xp), -limit, limit)


def round_to_format(x: Any, fmt: str, xp: Any = np) -> Any:
    """Round float32 values to a float format's grid (no scaling), returned as float32.

    Args:
        x: Values (any float array).
        fmt: ``fp32``, ``tf32``, ``bf16``, ``fp16``, ``fp8_e4m3`` or ``fp8_e5m2``.
        xp: Array module.
    """
    x = xp.asarray(x, dtype=xp.float32)
    if fmt == "fp32":
        return x
    if fmt == "bf16":
        return round_bf16(x, xp)
    if fmt == "fp16":
        with np.errstate(over="ignore"):  # past 65504 is inf, as on hardware
            return x.astype(xp.float16).astype(xp.float32)
    if fmt == "tf32":
        return _round_mantissa(x, 10, -126, xp)
    if fmt in FP8_MAX:
        return round_fp8(x, fmt, xp)
    raise ExecutionError(f"round_to_format: {fmt!r} is not a float format")


def _amax(x: Any, axis: int | None, xp: Any) -> Any:
    """Absolute max per channel (keepdims), or per tensor when ``axis`` is None."""
    a = xp.abs(x)
    if axis is None:
        return a.max(keepdims=True) if a.size else xp.zeros((1,) * a.ndim, xp.float32)
    others = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    return a.max(axis=others, keepdims=True)


def _safe_scale(amax: Any, top: float, xp: Any) -> Any:
    scale = (amax / xp.float32(top)).astype(xp.float32)
    # NOTE: an all-zero (or subnormal, underflowing) channel gets scale 1 instead of 0.
    return xp.where(scale > 0, scale, xp.float32(1.0)).astype(xp.float32)


def _int4_groups(x: Any, axis: int, group_size: int, xp: Any) -> Quantized:
    axis %= x.ndim
    length = x.shape[axis]
    pad = (-length) % group_size
    moved = xp.moveaxis(x, axis, -1)
    if pad:
        moved = xp.concatenate([moved, xp.zeros((*moved.shape[:-1], pad), xp.float32)], -1)
    grouped = moved.reshape(*moved.shape[:-1], -1, group_size)
    scale = _safe_scale(xp.abs(grouped).max(axis=-1, keepdims=True), 7, xp)
    values = xp.clip(xp.rint(grouped / scale), -8, 7)
    values = values.reshape(*moved.shape)[..., :length]
    scale_full = xp.broadcast_to(scale, grouped.shape).reshape(*moved.shape)[..., :length]
    return Quantized(
        fmt="int4",
        values=xp.moveaxis(values, -1, axis),
        scale=xp.ascontiguousarray(xp.moveaxis(scale_full, -1, axis)),
        axis=axis,
        group_size=group_size,
    )


def quantize(
    x: Any, fmt: str, *, axis: int | None = None, group_size: int = 128, xp: Any = np
) -> Quantized:
    """Quantize float values to ``fmt``.

    Args:
        x: Values (float array).
        fmt: A format in :data:`QUANT_FORMATS`.
        axis: For fp8/int8, the channel axis that gets its own scale (None: one scale per
            tensor). For int4, the axis along which groups are formed (default: last).
        group_size: int4 group length (elements).
        xp: Array module.

    Returns:
        The grid values and scales; :func:`dequantize` maps them back.

    Example:
        >>> q = quantize(np.array([0.5, -1.0], np.float32), "int8")
        >>> q.values.tolist(), q.scale.tolist()
        ([64.0, -127.0], [0.007874015718698502])
    """
    x = xp.asarray(x, dtype=xp.float32)
    if fmt not in QUANT_FORMATS:
        raise ExecutionError(
            f"quantize: unknown format {fmt!r} (known: {', '.join(QUANT_FORMATS)})"
        )
    one = xp.ones((1,) * x.ndim, xp.float32)
    if fmt in ("fp32", "tf32", "bf16", "fp16"):
        return Quantized(
            fmt=fmt, values=round_to_format(x, fmt, xp), scale=one, axis=None, group_size=None
        )
    if fmt == "int4":
        if group_size <= 0:
            raise ExecutionError(f"quantize: int4 group_size must be positive, got {group_size}")
        return _int4_groups(x, -1 if axis is None else axis, group_size, xp)
    top = FP8_MAX.get(fmt) or _INT_MAX[fmt]
    scale = _safe_scale(_amax(x, axis, xp), top, xp)
    if fmt in FP8_MAX:
        values = round_fp8(x / scale, fmt, xp)
    else:
        values = xp.clip(xp.rint(x / scale), -top, top)
    return Quantized(
        fmt=fmt, values=values.astype(xp.float32), scale=scale, axis=axis, group_size=None
    )


def dequantize(q: Quantized) -> Any:
    """Map quantized values back to float32 (values * scale)."""
    return (q.values * q.scale).astype(q.values.dtype)


def fake_quantize(
    x: Any, fmt: str, *, axis: int | None = None, group_size: int = 128, xp: Any = np
) -> Any:
    """Quantize then dequantize: float32 values that carry exactly the format's error."""
    return dequantize(quantize(x, fmt, axis=axis, group_size=group_size, xp=xp))


def error_metrics(approx: Any, exact: Any) -> QualityMetrics:
    """Error of ``approx`` against ``exact``, computed in float64 on the host.

    Example:
        >>> error_metrics(np.array([1.0, 2.0]), np.array([1.0, 2.0])).snr_db
        inf
    """
    a = to_numpy(approx).astype(np.float64)
    e = to_numpy(exact).astype(np.float64)
    if a.shape != e.shape:
        raise ExecutionError(f"error_metrics: shapes differ, {a.shape} vs {e.shape}")
    diff = a - e
    err2 = float(np.sum(diff * diff))
    ref2 = float(np.sum(e * e))
    return QualityMetrics(
        max_abs_error=float(np.max(np.abs(diff))) if diff.size else 0.0,
        rel_error=math.sqrt(err2 / ref2) if ref2 > 0 else (0.0 if err2 == 0 else math.inf),
        snr_db=10 * math.log10(ref2 / err2) if err2 > 0 else math.inf,
    )
