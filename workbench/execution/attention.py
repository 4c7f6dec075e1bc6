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

from workbench.execution.backend import Backend, as_operand, resolve_backend
from workbench.execution.errors import ExecutionError, check_sizes
from workbench.execution.trace import Trace, tile_start, tile_stop

__all__ = ["attention_fused", "attention_unfused"]


def _prepare(q: Any, k: Any, v: Any, causal: bool, xp: Any) -> tuple[Any, Any, Any, int]:
    """Cast to float32, check shapes, and view q as (B, Hkv, group, Lq, D)."""
    q, k, v = (as_operand(xp, t, "attention", n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    if q.ndim != 4 or k.shape != v.shape or k.ndim != 4:
        raise ExecutionError(
            f"attention: need q (B, Hq, Lq, D) and k, v (B, Hkv, Lkv, D); got {q.shape}, "
            f"{k.shape}, {v.shape}"
        )
    b, hq, lq, d = q.shape
    if min(q.shape) == 0 or min(k.shape) == 0:
        raise ExecutionError(
            f"attention: every size must be positive; got q {q.shape}, k {k.shape} "
            "(a KV length of 0 has no keys to attend to)"
        )
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
    check_sizes("attention", q_tile=q_tile, kv_tile=kv_tile)
    bk = resolve_backend(backend)
    xp = bk.xp
    qg, kg, vg, _ = _prepare(q, k, v, causal, xp)
    b, hkv, group, lq, d = qg.shape
    lk = kg.shape[3]
    scale = xp.float32(1.0 / math.sqrt(d) if scale is None else scale)
    offset = lk - lq
    heads = b * hkv * group
    # NOTE: (B*Hkv, Lkv, D) views; a query tile of every head of a KV group is one
    # (group * q_tile, D) matrix, so each block is one batched matmul per KV head.
    k3 = kg.reshape(b * hkv, lk, d)
    v3 = vg.reshape(b * hkv, lk, d)
    k_t = k3.swapaxes(-1, -2)  # NOTE: a view; BLAS reads it transposed (a copy costs more)
    out = xp.empty_like(qg)
    for i, q0 in enumerate(range(0, lq, q_tile)):
        q1 = min(q0 + q_tile, lq)
        tq = q1 - q0
        q_t = (qg[..., q0:q1, :] * scale).reshape(b * hkv, group * tq, d)
        last_key = q1 - 1 + offset if causal else lk - 1
        state: tuple[Any, Any, Any] | None = None
        biases: dict[tuple[int, int, int], Any] = {}
        for j, k0 in enumerate(range(0, last_key + 1, kv_tile)):
            k1 = min(k0 + kv_tile, lk)
            t0 = tile_start(trace, bk)
            # NOTE: keys k0..k1-1 are all visible to query q0 when k1 - 1 <= q0 + offset.
            masked = causal and k1 - 1 > q0 + offset
            mask = None
            if masked:
                key = (q0 + offset - k0, tq, k1 - k0)
                if key not in biases:
                    biases[key] = _block_bias(tq, group, q0 + offset, k0, k1, xp)
                mask = biases[key]
            state = _online_step(q_t, k_t[..., k0:k1], v3[:, k0:k1], state, mask, xp)
            tile_stop(
                trace,
                bk,
                t0,
                kernel="attention.fused",
                tile_index=(i, j),
                bytes_touched=4 * heads * (tq * d + 2 * (k1 - k0) * d),
                flops=4 * heads * tq * (k1 - k0) * d,
            )
        assert state is not None  # NOTE: every query sees key 0 (Lq <= Lkv), so >= 1 block ran
        acc, _, l_sum = state
        acc /= l_sum
        out[..., q0:q1, :] = acc.reshape(b, hkv, group, tq, d)
    return out.reshape(b, hkv * group, lq, d)


def _block_bias(tq: int, group: int, first_query: int, k0: int, k1: int, xp: Any) -> Any:
    """(group * tq, k1 - k0) float32 additive mask: -inf where key > the query's position."""
    rows = xp.arange(first_query, first_query + tq)[:, None]
    bias = xp.where(xp.arange(k0, k1)[None, :] > rows, xp.float32(-xp.inf), xp.float32(0.0))
    bias = bias.astype(xp.float32)
    return xp.tile(bias, (group, 1)) if group > 1 else bias


def _online_step(
    q_t: Any, k_t: Any, v_t: Any, state: tuple[Any, Any, Any] | None, mask: Any, xp: Any
) -> tuple[Any, Any, Any]:
    """One KV block of the online softmax on (acc, m, l); ``acc`` is updated in place.

    ``mask`` is the block's additive causal mask (0 or -inf), None for a fully visible block.

    The first block of a query tile (``state`` None) starts the statistics; later blocks
    rescale them by ``exp(m - m_new)``. Every row has a finite maximum: key 0 is visible to
    every query under the KV-cache causal convention, and the first block holds it.
    """
    s = xp.matmul(q_t, k_t)
    if mask is not None:
        s += mask
    m_blk = s.max(axis=-1, keepdims=True)
    if state is None:
        s -= m_blk
        xp.exp(s, out=s)
        return xp.matmul(s, v_t), m_blk, s.sum(axis=-1, keepdims=True)
    acc, m, l_sum = state
    m_new = xp.maximum(m, m_blk)
    s -= m_new
    xp.exp(s, out=s)
    corr = xp.exp(m - m_new)
    acc *= corr
    acc += xp.matmul(s, v_t)
    return acc, m_new, l_sum * corr + s.sum(axis=-1, keepdims=True)
