"""The mapspace of fused (flash-style) attention: query tile x key/value tile x stages.

Loop nest of one work item (one query tile of one (batch, head))::

    load Q[i*Br:(i+1)*Br]                        # once
    for j in visible key/value blocks:           # causal: blocks up to the tile's last query
        load K[j*Bc:(j+1)*Bc], V[...]            # the streamed operand, `stages` buffers
        S = Q K^T (Br x Bc, on chip) ; online softmax ; O += P V
    store O[i]                                   # once

Off-chip traffic per (batch, head) is therefore ``Q + O + (number of query tiles) x K,V``: with
``Br`` proportional to ``M / d`` (M the SRAM size) that is Theta(N^2 d^2 / M), the FlashAttention
paper's bound, against Theta(N d + N^2) for the unfused kernels that write the score matrix.
A shared cache large enough to hold the K/V of the heads in flight serves the repeats instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.hw.schema import Hardware
from workbench.lowering.kernel import AttentionProblem, Kernel
from workbench.options import TileOverride
from workbench.scheduling.gemm import CACHE_USABLE_FRACTION
from workbench.scheduling.tiling import accumulator_capacity

__all__ = ["AttentionMapspace", "attention_mapspace", "packed_group"]

_Q_MULTIPLES = (1, 2, 3, 4, 6, 8, 12, 16)
_KV_SIZES = (16, 32, 64, 128, 256)


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionMapspace:
    """Candidate (query tile, kv tile, stages) of a fused attention kernel, as arrays.

    Attributes:
        br, bc, stages: Query tile rows, key/value tile rows, pipeline stages.
        split: Key/value splits per query tile (flash-decoding: the KV sequence is cut into
            ``split`` parts run on different cores, whose partial outputs are then combined).
        sram_bytes, register_bytes, fits: Per-core footprint and whether it fits.
        items: Work items (batch x heads x query tiles).
        blocks: Key/value blocks processed in total (after the causal skip).
        max_blocks: Blocks of the longest work item (load imbalance under a causal mask).
        padded_flops: Matrix FLOPs executed including padding and masked block halves.
        traffic: Level name -> bytes.
        spill: Extra bytes from overflowing SRAM.
        source: ``search``, ``override`` or ``heuristic``.
    """

    br: np.ndarray
    bc: np.ndarray
    stages: np.ndarray
    split: np.ndarray
    sram_bytes: np.ndarray
    register_bytes: np.ndarray
    fits: np.ndarray
    items: np.ndarray
    blocks: np.ndarray
    max_blocks: np.ndarray
    padded_flops: np.ndarray
    traffic: dict[str, np.ndarray]
    spill: np.ndarray
    source: str

    @property
    def size(self) -> int:
        """Number of candidates."""
        return int(self.br.size)


def _visible_blocks(p: AttentionProblem, br: np.ndarray, bc: np.ndarray) -> tuple[np.ndarray, ...]:
    """Total and maximum key/value blocks per (batch, head), per candidate."""
    tq = -(-p.q_len // br)
    full = -(-p.kv_len // bc)
    if not p.causal:
        return tq * full, full
    past = p.kv_len - p.q_len
    total = np.zeros_like(br)
    for val in np.unique(br):
        i = np.arange(-(-p.q_len // int(val)))
        last_key = np.minimum(p.kv_len, past + (i + 1) * int(val))
        sel = br == val
        total[sel] = (-(-last_key[None, :] // bc[sel][:, None])).sum(axis=1)
    return total, full


def attention_mapspace(
    kernel: Kernel, hw: Hardware, *, override: TileOverride | None = None, search: str = "full"
) -> AttentionMapspace:
    """Build and evaluate the fused-attention mapspace of ``kernel``.

    Args:
        kernel: A kernel with an :class:`AttentionProblem`.
        hw: Target hardware.
        override: Forced (query tile, kv tile) as ``m`` and ``n``.
        search: ``"full"`` or ``"heuristic"``.

    Returns:
        Candidates with footprint, work and traffic arrays.
    """
    p = kernel.attention
    assert p is not None
    nat = hw.matrix_engine.native_tile_m
    group = packed_group(p, hw)
    rows = p.q_len * group  # query rows of one work item's (batch, KV head) or (batch, head)
    bh = p.batch * p.heads // group
    splits = [1]
    if bh * -(-rows // nat) < hw.matrix_engine.cores:
        splits = [s for s in (1, 2, 4, 8, 16, 32, 64) if s * 64 <= p.kv_len] or [1]
    if override is not None:
        brs, bcs, sts = [override.m], [override.n], [1, 2]
    elif search == "heuristic":
        brs, bcs, sts, splits = [max(nat, 64)], [64], [2], [1]
    else:
        nat_n = hw.matrix_engine.native_tile_n
        # NOTE: fewer query rows than the instruction's M (decode): S^T = K Q^T puts the rows
        # on the narrow N side (swap AB, as for skinny GEMMs), so they pad to N, not to M.
        q_nat = nat_n if rows < nat and nat_n < nat and hw.hardware_scheduled else nat
        brs = [q_nat * m for m in _Q_MULTIPLES if q_nat * m <= max(q_nat, 1024)]
        bcs = sorted({max(nat_n, round(b / nat_n) * nat_n) for b in _KV_SIZES})
        sts = [1, 2, 3]
    grid = np.meshgrid(brs, bcs, sts, splits, indexing="ij")
    br, bc, st, sp = (g.ravel() for g in grid)
    d = p.head_dim
    acc_cap = accumulator_capacity(hw)
    acc = br * bc * 4 + br * d * 4  # S tile and O accumulator, fp32
    operand = br * d * p.elem_bytes + 2 * bc * d * p.kv_bytes * st
    sram = np.ceil(operand + (0 if acc_cap else acc)).astype(np.int64)
    regs = acc if acc_cap else np.zeros_like(acc)
    fits = sram <= hw.sram.capacity_bytes
    if acc_cap:
        fits = fits & (regs <= acc_cap)
    if group > 1:
        # NOTE: packed GQA (FlashAttention pack_gqa, FlashDecoding): the query heads of a KV
        # group share one work item, their rows stacked into the query tile; all KV is visible
        # to a decode-length query (the causal skip is ignored for these few rows).
        tq = -(-rows // br)
        max_blocks = -(-p.kv_len // bc)
        blocks_per_head = tq * max_blocks
    else:
        blocks_per_head, max_blocks = _visible_blocks(p, br, bc)
        tq = -(-p.q_len // br)
    items = bh * tq * sp
    blocks = bh * blocks_per_head
    padded = 4.0 * blocks * br * bc * d  # float64: past 2^63 an int64 wraps
    traffic, spill = _traffic(p, hw, br, bc, st, tq, blocks_per_head, sram, group)
    # Flash-decoding: each split writes a partial O (fp32) and its row statistics, re-read to
    # combine them.
    combine = np.where(sp > 1, 2.0 * p.batch * p.heads * p.q_len * (d + 2) * 4 * sp, 0.0)
    # NOTE: the partials are small and stay in a shared cache when there is one.
    has_cache = len(traffic) > 2
    offchip = hw.offchip.name
    traffic = {k: v + combine if (k != offchip or not has_cache) else v for k, v in traffic.items()}
    source = "override" if override is not None else search if search == "heuristic" else "search"
    return AttentionMapspace(
        br=br,
        bc=bc,
        stages=st,
        split=sp,
        sram_bytes=sram,
        register_bytes=regs,
        fits=fits,
        items=items,
        blocks=blocks,
        max_blocks=-(-np.broadcast_to(max_blocks, br.shape) // sp),
        padded_flops=padded,
        traffic=traffic,
        spill=spill,
        source=source,
    )


def packed_group(p: AttentionProblem, hw: Hardware) -> int:
    """Query heads packed into one work item: the GQA group for a decode-length query, else 1.

    With grouped-query attention (``kv_heads < heads``) and fewer query rows than the matrix
    engine's native M, libraries stack the group's query heads into one tile so each K/V block
    is loaded once per KV head (FlashAttention-2/3 ``pack_gqa``, FlashDecoding, FlashInfer).
    Software-issued hosts (``hw.scheduling``) run their own engine and keep one head per work
    item, and so does a stack whose kernel does not share K/V across the group
    (``kv_group_shared`` off).

    >>> from workbench.hw import load_hardware
    >>> p = AttentionProblem(batch=64, heads=64, kv_heads=8, q_len=1, kv_len=2048, head_dim=128,
    ...     causal=True, elem_bytes=2, kv_bytes=2)
    >>> packed_group(p, load_hardware("h100-sxm"))
    8
    """
    if p.kv_heads >= p.heads or p.heads % p.kv_heads or not hw.hardware_scheduled:
        return 1
    if not p.kv_group_shared:
        return 1
    return p.heads // p.kv_heads if p.q_len < hw.matrix_engine.native_tile_m else 1


def _traffic(p, hw, br, bc, st, tq, blocks_per_head, sram, group):
    bh = p.batch * p.heads
    d = p.head_dim
    q_o = 2.0 * bh * p.q_len * d * p.elem_bytes
    # K and V streamed once per visible block of each work item: per query head, or per KV
    # head when the group is packed into one work item (bh // group items).
    kv_stream = 2.0 * (bh // group) * blocks_per_head * bc * d * p.kv_bytes
    kv_once = 2.0 * p.batch * p.kv_heads * p.kv_len * d * p.kv_bytes
    cap = hw.sram.capacity_bytes
    spill = np.where(sram > cap, 2.0 * kv_stream * (sram - cap) / np.maximum(sram, 1), 0.0)
    levels = hw.memory
    s = levels.index(hw.sram)
    traffic: dict[str, np.ndarray] = {hw.sram.name: 2.0 * (q_o + kv_stream)}
    caches = [m for m in levels[s + 1 : -1] if m.kind in ("cache", "sram")]
    for lvl in caches:
        traffic[lvl.name] = q_o + kv_stream + spill
    if caches:
        usable = CACHE_USABLE_FRACTION * max(c.capacity_bytes for c in caches)
        heads_in_flight = np.maximum(1, np.minimum(bh // group, -(-hw.matrix_engine.cores // tq)))
        # NOTE: query heads of one GQA group share their KV head's lines in the cache.
        kv_in_flight = -(-heads_in_flight * group // (p.heads // max(p.kv_heads, 1)))
        per_head_kv = 2.0 * p.kv_len * d * p.kv_bytes
        dram_kv = np.where(kv_in_flight * per_head_kv <= usable, kv_once, kv_stream)
        if not p.kv_group_shared:  # every query head reads its KV head from off-chip memory
            dram_kv = kv_stream
        dram = q_o + dram_kv
    else:
        dram = q_o + kv_stream + spill
    traffic[levels[-1].name] = np.maximum(dram, q_o + kv_once)
    return traffic, spill
