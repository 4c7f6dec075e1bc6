"""Attention, unfused (materialised scores) and fused flash-style (online softmax over KV tiles).

Shapes: q (B, Hq, Lq, D); k, v (B, Hkv, Lkv, D) with Hq a multiple of Hkv (GQA; Hkv = 1 is MQA):
query head h reads KV head ``h // (Hq / Hkv)``. Causal masking follows the KV-cache convention:
query i sits at position ``Lkv - Lq + i`` and sees keys ``j <= Lkv - Lq + i`` (decode: Lq = 1).

Fused loop nest (per batch and KV head, all query heads of the group at once)::

    for q0 in range(0, Lq, q_tile):
        m = -inf; l = 0; acc = 0                               # running max, sum, output
        for k0 in range(0, Lkv, kv_tile):                      # skips tiles fully masked
            s = Q[q0:] @ K[k0:]^T * scale  (+ causal mask)     # (q_tile, kv_tile) scores
            m_new = max(m, rowmax(s)); p = exp(s - m_new)
            l = l * exp(m - m_new) + rowsum(p)
            acc = acc * exp(m - m_new) + p @ V[k0:]; m = m_new
        O[q0:] = acc / l

Peak working memory is O(q_tile x kv_tile) per head batch instead of O(Lq x Lkv).
"""

from __future__ import annotations

import math
from typing import Any

from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.errors import ExecutionError
from workbench.execution.trace import Trace, tile_start, tile_stop

__all__ = ["attention_fused", "attention_unfused"]


def _prepare(q: Any, k: Any, v: Any, causal: bool, xp: Any) -> tuple[Any, Any, Any, int]:
    """Cast to float32, check shapes, and view q as (B, Hkv, group, Lq, D)."""
    q, k, v = (xp.asarray(t, dtype=xp.float32) for t in (q, k, v))
    if q.ndim != 4 or k.shape != v.shape or k.ndim != 4:
        raise ExecutionError(
            f"attention: need q (B, Hq, Lq, D) and k, v (B, Hkv, Lkv, D); got {q.shape}, "
            f"{k.shape}, {v.shape}"
        )
    b, hq, lq, d = q.shape
    if k.shape[0] != b or k.shape[3] != d or k.shape[1] == 0 or hq % k.shape[1]:
        raise ExecutionError(
            f"attention: q {q.shape} and k {k.shape} disagree (batch, head dim, or Hq % Hkv)"
        )
    if causal and lq > k.shape[2]:
        raise ExecutionError(f"attention: causal needs Lq <= Lkv, got {lq} > {k.shape[2]}")
    group = hq // k.shape[1]
    return q.reshape(b, k.shape[1], group, lq, d), k[:, :, None], v[:, :, None], group


def _mask(s: Any, q0: int, k0: int, offset: int, xp: Any) -> Any:
    """Set scores of keys after each query's position to -inf (in place)."""
    rows = xp.arange(q0, q0 + s.shape[-2])[:, None] + offset
    cols = xp.arange(k0, k0 + s.shape[-1])[None, :]
    s += xp.where(cols > rows, xp.float32(-xp.inf), xp.float32(0.0))
    return s


def attention_unfused(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Three kernels with the full (Lq, Lkv) score matrix in memory: QK^T, softmax, PV.

    Args:
        q: Queries (B, Hq, Lq, D).
        k: Keys (B, Hkv, Lkv, D).
        v: Values (B, Hkv, Lkv, D).
        causal: Apply the KV-cache causal mask (see the module docstring).
        scale: Score scale (default 1 / sqrt(D)).
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per kernel (scores, softmax, pv), or None.

    Returns:
        float32 output (B, Hq, Lq, D).
    """
    bk = resolve_backend(backend)
    xp = bk.xp
    qg, kg, vg, _ = _prepare(q, k, v, causal, xp)
    b, hkv, group, lq, d = qg.shape
    lk = kg.shape[3]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    heads = b * hkv * group
    t0 = tile_start(trace, bk)
    s = xp.matmul(qg, kg.swapaxes(-1, -2))
    s *= xp.float32(scale)
    if causal:
        _mask(s, 0, 0, lk - lq, xp)
    tile_stop(
        trace,
        bk,
        t0,
        kernel="attention.scores",
        tile_index=(0,),
        bytes_touched=4 * heads * (lq * d + lk * d + lq * lk),
        flops=2 * heads * lq * lk * d,
    )
    t0 = tile_start(trace, bk)
    s -= s.max(axis=-1, keepdims=True)
    xp.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    tile_stop(
        trace,
        bk,
        t0,
        kernel="attention.softmax",
        tile_index=(1,),
        bytes_touched=8 * heads * lq * lk,
        flops=5 * heads * lq * lk,
    )
    t0 = tile_start(trace, bk)
    out = xp.matmul(s, vg)
    tile_stop(
        trace,
        bk,
        t0,
        kernel="attention.pv",
        tile_index=(2,),
        bytes_touched=4 * heads * (lq * lk + lk * d + lq * d),
        flops=2 * heads * lq * lk * d,
    )
    return out.reshape(b, hkv * group, lq, d)


def attention_fused(
    q: Any,
    k: Any,
    v: Any,
    *,
    q_tile: int = 128,
    kv_tile: int = 128,
    causal: bool = False,
    scale: float | None = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
) -> Any:
    """Flash-style attention: online softmax over KV tiles (see the module docstring).

    Args:
        q: Queries (B, Hq, Lq, D).
        k: Keys (B, Hkv, Lkv, D).
        v: Values (B, Hkv, Lkv, D).
        q_tile: Query rows per tile (elements).
        kv_tile: Keys per tile (elements).
        causal: Apply the KV-cache causal mask.
        scale: Score scale (default 1 / sqrt(D)).
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per (q tile, kv tile) executed, or None.

    Returns:
        float32 output (B, Hq, Lq, D).
    """
    if q_tile <= 0 or kv_tile <= 0:
        raise ExecutionError(f"attention: q_tile {q_tile} and kv_tile {kv_tile} must be positive")
    bk = resolve_backend(backend)
    xp = bk.xp
    qg, kg, vg, _ = _prepare(q, k, v, causal, xp)
    b, hkv, group, lq, d = qg.shape
    lk = kg.shape[3]
    scale = xp.float32(1.0 / math.sqrt(d) if scale is None else scale)
    offset = lk - lq
    heads = b * hkv * group
    out = xp.empty_like(qg)
    for i, q0 in enumerate(range(0, lq, q_tile)):
        q1 = min(q0 + q_tile, lq)
        q_t = qg[..., q0:q1, :] * scale
        m = xp.full((*q_t.shape[:-1], 1), -xp.inf, dtype=xp.float32)
        l_sum = xp.zeros_like(m)
        acc = xp.zeros_like(q_t)
        last_key = q1 - 1 + offset if causal else lk - 1
        for j, k0 in enumerate(range(0, last_key + 1, kv_tile)):
            k1 = min(k0 + kv_tile, lk)
            t0 = tile_start(trace, bk)
            m, l_sum = _online_step(
                q_t,
                kg[..., k0:k1, :],
                vg[..., k0:k1, :],
                m,
                l_sum,
                acc,
                (q0, k0, offset) if causal else None,
                xp,
            )
            qt, kt = q1 - q0, k1 - k0
            tile_stop(
                trace,
                bk,
                t0,
                kernel="attention.fused",
                tile_index=(i, j),
                bytes_touched=4 * heads * (qt * d + 2 * kt * d),
                flops=4 * heads * qt * kt * d,
            )
        out[..., q0:q1, :] = acc / l_sum
    return out.reshape(b, hkv * group, lq, d)


def _online_step(
    q_t: Any,
    k_t: Any,
    v_t: Any,
    m: Any,
    l_sum: Any,
    acc: Any,
    causal_at: tuple[int, int, int] | None,
    xp: Any,
) -> tuple[Any, Any]:
    """One KV tile of the online softmax; updates ``acc`` in place, returns (m, l)."""
    s = xp.matmul(q_t, k_t.swapaxes(-1, -2))
    if causal_at is not None:
        _mask(s, *causal_at, xp)
    m_new = xp.maximum(m, s.max(axis=-1, keepdims=True))
    # NOTE: a row whose keys so far are all masked has m_new = -inf; use 0 so exp gives 0, not nan.
    m_safe = xp.where(m_new == -xp.inf, xp.float32(0.0), m_new)
    s -= m_safe
    xp.exp(s, out=s)
    corr = xp.exp(m - m_safe)
    acc *= corr
    acc += xp.matmul(s, v_t)
    return m_new, l_sum * corr + s.sum(axis=-1, keepdims=True)
