"""How tiles reach the engine: one strategy per profile, chosen once.

Two mechanisms put a tile's steps on an engine, and the cost model differs between them only
where this module says so:

- :class:`HardwareScheduled` (GPUs, NPUs, TPUs: ``overheads.tile_issue_s == 0``): the chip's
  schedulers issue tiles; loads, math and epilogues overlap; padded tiles are the work.
- :class:`SoftwareIssued` (a calibrated host, ``workbench calibrate``: ``tile_issue_s > 0``):
  every tile step is a library call issued one after another from software, so calls run the
  exact slice at the calibrated rate of their size, epilogues and DRAM streaming add to the
  calls, and the bottleneck class comes from a time split (:func:`workbench.cost.host.host_class`).

A scorer asks :func:`tile_issue` once and calls the strategy; it never asks which one it got.
Every method returns seconds, FLOP/s or a dimensionless factor, as its docstring says, and the
neutral value (0 s, a factor of 1, the input unchanged) where its mechanism does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from workbench.cost import host
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["HardwareScheduled", "SoftwareIssued", "TileIssue", "tile_issue"]

Array = np.ndarray


class TileIssue(Protocol):
    """What differs between hardware-scheduled and software-issued tiles (see module docstring)."""

    @property
    def solves_math_rate(self) -> bool:
        """True where the profile's math efficiency is fitted through a reference GEMM's shape."""
        ...

    def misaligned(self, kernel: Kernel, hw: Hardware) -> bool:
        """Whether a GEMM's operand strides keep it off the engine's asynchronous-copy path."""
        ...

    def dequant_s(self, kernel: Kernel, hw: Hardware, ms) -> Array | float:
        """Seconds per K-step the vector unit spends dequantizing a weight-only B tile."""
        ...

    def fill_skew_s(self, hw: Hardware) -> float:
        """Seconds a systolic tile pays once to fill and drain its array."""
        ...

    def gemm_step(self, kernel: Kernel, hw: Hardware, ms, t_k: Array, rows, cols):
        """``(work FLOPs, K-step seconds)`` of every candidate from the padded ones."""
        ...

    def split_fixup_s(self, hw: Hardware, ms, rows, cols, bw_core) -> Array:
        """Per-tile seconds of the split-K reduction."""
        ...

    def store_drain_s(self, hw: Hardware) -> float:
        """Seconds after the last wave until its output stores have landed."""
        ...

    def gather_s(self, kernel: Kernel, hw: Hardware) -> float:
        """Seconds a conv spends setting up and gathering its im2col A matrix once."""
        ...

    def epilogue_s(self, kernel: Kernel, hw: Hardware) -> float:
        """Seconds of a GEMM's fused epilogue beyond its tiles' main loops."""
        ...

    def batched_issue(self, kernel: Kernel, pipeline: Array, issued: Array):
        """``(pipeline, issue seconds)`` once a batched GEMM's tile steps are issued."""
        ...

    def fused_class(self, kind: str) -> bool:
        """Whether attention class ``kind`` is costed by its published kernel breakdown."""
        ...

    def softmax_s(self, kernel: Kernel, hw: Hardware, ms) -> Array:
        """Seconds of the online softmax of one (query tile, KV block) on one core."""
        ...

    def attention_work(self, kernel: Kernel, hw: Hardware, ms, t_mm, t_sm):
        """``(matrix, softmax)`` seconds of a block once only its real work is counted."""
        ...

    def attention_step(self, kind: str, t_mm, t_sm) -> Array:
        """Seconds of a block's two products and its softmax, overlapped or in series."""
        ...

    def attention_pipeline(self, kernel: Kernel, hw: Hardware, ms, t_block, active, compute):
        """``(pipeline, compute, issue)`` seconds of every candidate from its block time."""
        ...

    def vector_rate(self, kernel: Kernel, hw: Hardware, cls: str | None = None) -> float:
        """FLOP/s of ``kernel``'s vector work (class ``cls``, default the kernel's)."""
        ...

    def transpose_s(self, kernel: Kernel, hw: Hardware) -> float:
        """Seconds of a layout transform's strided copy beyond its traffic."""
        ...

    def dram_stream_s(self, kernel: Kernel, hw: Hardware) -> float:
        """Seconds of DRAM streaming that add to the pipeline instead of hiding behind it."""
        ...

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """``(class, evidence)`` from the overlap classifier's ``found`` and a time split."""
        ...


def _attention_default_pipeline(ms, hw: Hardware, t_block, active):
    """Blocks spread over the active cores, the longest item at least, plus two latencies, s."""
    lat = hw.offchip.latency_s
    per_core = ms.blocks * t_block / active
    longest = ms.max_blocks * t_block
    return np.maximum(per_core, longest) + 2 * lat


@dataclass(frozen=True, slots=True)
class HardwareScheduled:
    """GPUs, NPUs, TPUs: the chip schedules its own tiles (``tile_issue_s == 0``)."""

    solves_math_rate: bool = True

    def misaligned(self, kernel: Kernel, hw: Hardware) -> bool:
        """A matrix GEMM with strides not 16-byte aligned, where the fallback runs slower.

        TMA needs aligned strides; the warp-level fallback runs at ``legacy_mma_fraction < 1``.
        """
        p = kernel.gemm
        return (
            p is not None
            and kernel.engine == "matrix"
            and hw.matrix_engine.legacy_mma_fraction < 1
            and not p.strides_aligned
        )

    def dequant_s(self, kernel: Kernel, hw: Hardware, ms) -> Array | float:
        """``min(tn, n) x tk x dequant ops / (vector FMA/s per core)``, seconds per K-step.

        Weight-only formats: the vector unit (CUDA cores, VPU) dequantizes each K-step's B tile
        before the matrix engine uses it; the same warps issue both, so it adds to the step's
        compute (an FMA is 2 FLOPs of the vector peak, one instruction). 0 without dequant.
        """
        p = kernel.gemm
        assert p is not None
        if not p.b_dequant_ops:
            return 0.0
        cores = hw.matrix_engine.cores
        return (
            np.minimum(ms.tn, p.n) * ms.tk * p.b_dequant_ops / (hw.vector_flops("fp32") / 2 / cores)
        )

    def fill_skew_s(self, hw: Hardware) -> float:
        """``fold_skew_cycles / clock``, seconds (0 off systolic arrays).

        A systolic array fills before its first fold and drains after its last (rows + cols - 2
        cycles); the folds in between stream back to back (weights double-buffered, the next
        wavefront entering as the last leaves), so a tile pays the skew once.
        """
        skew = hw.matrix_engine.fold_skew_cycles
        return skew / hw.matrix_engine.clock_hz if skew else 0.0

    def gemm_step(self, kernel: Kernel, hw: Hardware, ms, t_k: Array, rows, cols):
        """The padded native tiles are the work: ``(padded FLOPs, t_k)`` unchanged."""
        return ms.padded_flops, t_k

    def split_fixup_s(self, hw: Hardware, ms, rows, cols, bw_core) -> Array:
        """``latency + 2 x rows x cols x 4 B x (split - 1) / bw_core`` where split > 1, seconds.

        Split-K slices of an output tile run on different cores; each writes its fp32 partial
        tile to a workspace, and the slice that finishes last waits on the tile's semaphore,
        reads the other partials back and reduces them (CUTLASS "serial" split-K / stream-K
        fixup).
        """
        nxt = hw.memory[hw.memory.index(hw.sram) + 1]
        partial = 2.0 * rows * cols * 4.0 * (ms.split - 1) / bw_core
        return np.where(ms.split > 1, nxt.latency_s + partial, 0.0)

    def store_drain_s(self, hw: Hardware) -> float:
        """One off-chip latency: earlier waves' stores overlap the next wave's main loop."""
        return hw.offchip.latency_s

    def gather_s(self, kernel: Kernel, hw: Hardware) -> float:
        """0 s: the engine reads a conv's operands in place (implicit GEMM)."""
        return 0.0

    def epilogue_s(self, kernel: Kernel, hw: Hardware) -> float:
        """0 s: the fused epilogue overlaps the next tile's main loop."""
        return 0.0

    def batched_issue(self, kernel: Kernel, pipeline: Array, issued: Array):
        """No software issue: ``(pipeline, issued)`` unchanged."""
        return pipeline, issued

    def fused_class(self, kind: str) -> bool:
        """Every class but ``generic`` has a published breakdown (attention_class.py)."""
        return kind != "generic"

    def softmax_s(self, kernel: Kernel, hw: Hardware, ms) -> Array:
        """``br x bc x (1 / SFU rate + 5 / vector rate)`` per core, seconds.

        One exp on the special-function units and ~5 FLOPs on the vector unit per score.
        """
        cores = hw.matrix_engine.cores
        vec_core = hw.vector_flops("fp32") / cores
        sfu = hw.vector_unit.special_function_ops_per_s or hw.vector_flops("fp32")
        return ms.br * ms.bc * (1.0 / (sfu / cores) + 5.0 / vec_core)

    def attention_work(self, kernel: Kernel, hw: Hardware, ms, t_mm, t_sm):
        """Padded blocks are the work: ``(t_mm, t_sm)`` unchanged."""
        return t_mm, t_sm

    def attention_step(self, kind: str, t_mm, t_sm) -> Array:
        """``max(t_mm, t_sm)`` for FA3 (ping-pong warpgroups), else ``t_mm + t_sm``."""
        return np.maximum(t_mm, t_sm) if kind == "fa3" else t_mm + t_sm

    def attention_pipeline(self, kernel: Kernel, hw: Hardware, ms, t_block, active, compute):
        """``max(blocks x t_block / active, longest item) + 2 x latency``; no issue time."""
        pipeline = _attention_default_pipeline(ms, hw, t_block, active)
        issue = hw.overheads.tile_issue_s
        return pipeline, compute, np.maximum(ms.blocks / active, ms.max_blocks) * issue

    def vector_rate(self, kernel: Kernel, hw: Hardware, cls: str | None = None) -> float:
        """The vector unit's peak FLOP/s in the kernel's format."""
        return hw.vector_flops(kernel.dtype)

    def transpose_s(self, kernel: Kernel, hw: Hardware) -> float:
        """0 s: a transpose's bytes move at the copy rates (its traffic)."""
        return 0.0

    def dram_stream_s(self, kernel: Kernel, hw: Hardware) -> float:
        """0 s: DRAM streaming overlaps the tiles (it is a level time)."""
        return 0.0

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """The overlap classifier's class stands."""
        return found


@dataclass(frozen=True, slots=True)
class SoftwareIssued:
    """A calibrated host: tile steps are library calls issued from software.

    Attributes:
        attention_engine: The profile measured a fused-attention engine
            (``overheads.attention_block_issue_s > 0``): its blocks run every head at once, its
            softmax at the measured row rate and its visible blocks whole.
    """

    attention_engine: bool = False
    solves_math_rate: bool = False

    def misaligned(self, kernel: Kernel, hw: Hardware) -> bool:
        """Never: library calls have no asynchronous-copy path to fall off."""
        return False

    def dequant_s(self, kernel: Kernel, hw: Hardware, ms) -> Array | float:
        """0 s: the engine dequantizes weights outside the K-step (its traffic)."""
        return 0.0

    def fill_skew_s(self, hw: Hardware) -> float:
        """0 s: no systolic array."""
        return 0.0

    def gemm_step(self, kernel: Kernel, hw: Hardware, ms, t_k: Array, rows, cols):
        """``(true FLOPs, t_k x true / padded x call slowdown + accumulator time)``.

        A library call runs the exact slice, so edge tiles cost their true work, not the padded
        native tile. A call's rate is that of a cube of the same work: the engine issues a
        tile's batch entries as one matmul call, but NumPy runs a stacked matmul as one BLAS
        call per batch entry, so each runs at the rate of one entry's size; a skinny call (few
        rows) runs at the rate of its row count, whatever its work. Every K-step reads and
        writes the fp32 accumulator (:func:`~workbench.cost.host.accumulate_s`).
        """
        p = kernel.gemm
        assert p is not None
        work = np.broadcast_to(2.0 * p.batch * p.m * p.n * p.k, np.shape(ms.padded_flops))
        t_k = t_k * (work / np.maximum(ms.padded_flops, 1))
        call = np.cbrt(rows * cols * np.minimum(ms.tk, p.k))
        slow = np.maximum(host.call_slowdown(hw, call), host.skinny_slowdown(hw, rows))
        return work, t_k * slow + host.accumulate_s(hw, rows * cols * 4.0)

    def split_fixup_s(self, hw: Hardware, ms, rows, cols, bw_core) -> Array:
        """0 s: the host accumulates split slices in place."""
        return np.zeros(1)

    def store_drain_s(self, hw: Hardware) -> float:
        """0 s: a call returns when its stores are done (they are in its time)."""
        return 0.0

    def gather_s(self, kernel: Kernel, hw: Hardware) -> float:
        """A conv's set-up plus its im2col gather (:func:`~workbench.cost.host.gather_s`)."""
        return host.gather_s(kernel, hw)

    def epilogue_s(self, kernel: Kernel, hw: Hardware) -> float:
        """``vector FLOPs / calibrated elementwise rate``, seconds (0 without an epilogue).

        The fused epilogue (bias, activation, residual) runs as library passes over each output
        tile after its matmul.
        """
        if not kernel.vector_flops:
            return 0.0
        return kernel.vector_flops / self.vector_rate(kernel, hw, "elementwise")

    def batched_issue(self, kernel: Kernel, pipeline: Array, issued: Array):
        """``issue = issued / batch``; the pipeline trades ``issued`` for it, seconds.

        Every batch entry (head, conv group) of an output tile runs in one library call, so tile
        steps are issued once per tile of the (m, n) grid.
        """
        p = kernel.gemm
        assert p is not None
        if p.batch <= 1:
            return pipeline, issued
        issue_s = issued / p.batch
        return pipeline - issued + issue_s, issue_s

    def fused_class(self, kind: str) -> bool:
        """Never: the host runs the generic block loop whatever the class."""
        return False

    def softmax_s(self, kernel: Kernel, hw: Hardware, ms) -> Array:
        """With an attention engine: ``br x bc x 5 / (softmax rate at row length bc / cores)``.

        The online softmax's passes (max, subtract, exp, sum per score) run at the engine's
        measured softmax rate; a block's scores are rows of ``bc`` keys. Without one, the
        hardware formula (:meth:`HardwareScheduled.softmax_s`).
        """
        if not self.attention_engine:
            return HardwareScheduled().softmax_s(kernel, hw, ms)
        by_length = host.row_rate(hw, "softmax", ms.bc)
        rate = by_length if by_length is not None else self.vector_rate(kernel, hw, "softmax")
        return ms.br * ms.bc * 5.0 / (rate / hw.matrix_engine.cores)

    def work_share(self, kernel: Kernel, ms):
        """Real work over padded work of each candidate, at most 1.

        Library calls run the exact (edge) block, not the padded tile. An attention engine
        computes whole visible blocks (the causal mask is applied to computed scores), so there
        only the ragged edges are not work.
        """
        p = kernel.attention
        assert p is not None
        if not self.attention_engine:
            return np.minimum(float(kernel.matmul_flops) / np.maximum(ms.padded_flops, 1), 1.0)
        true = (p.q_len / (-(-p.q_len // ms.br) * ms.br)) * (
            p.kv_len / (-(-p.kv_len // ms.bc) * ms.bc)
        )
        return np.minimum(true, 1.0)

    def attention_work(self, kernel: Kernel, hw: Hardware, ms, t_mm, t_sm):
        """``(t_mm x share x call slowdown, t_sm x share)``, seconds.

        A block's two products are small library calls: they run at the calibrated rate of a
        call of their size (the cube with the same work), not at the large-call peak.
        """
        p = kernel.attention
        assert p is not None
        share = self.work_share(kernel, ms)
        t_mm, t_sm = t_mm * share, t_sm * share
        return t_mm * host.call_slowdown(hw, np.cbrt(ms.br * ms.bc * p.head_dim)), t_sm

    def attention_step(self, kind: str, t_mm, t_sm) -> Array:
        """``t_mm + t_sm``; without an attention engine FA3's products overlap: the max."""
        if kind == "fa3" and not self.attention_engine:
            return np.maximum(t_mm, t_sm)
        return t_mm + t_sm

    def attention_pipeline(self, kernel: Kernel, hw: Hardware, ms, t_block, active, compute):
        """``(pipeline, compute, issue)`` seconds.

        Without an attention engine: as on hardware, each block issuing ``tile_issue_s``. With
        one, the engine runs every head of a (query tile, KV block) pair in one step, so fixed
        costs are per engine block and per query tile, not per head block::

            issue    = blocks / (batch x heads) x block_issue + query tiles x qtile_issue
            pipeline = blocks x (t_block - tile_issue) / active + issue + 2 x latency
            compute  = compute x work share
        """
        o = hw.overheads
        if not self.attention_engine:
            return HardwareScheduled().attention_pipeline(kernel, hw, ms, t_block, active, compute)
        p = kernel.attention
        assert p is not None
        bh = p.batch * p.heads
        engine_blocks = ms.blocks / bh
        q_tiles = ms.items / (bh * ms.split)
        issue_s = engine_blocks * o.attention_block_issue_s + q_tiles * o.attention_qtile_issue_s
        lat = hw.offchip.latency_s
        pipeline = ms.blocks * (t_block - o.tile_issue_s) / active + issue_s + 2 * lat
        return pipeline, compute * self.work_share(kernel, ms), issue_s

    def vector_rate(self, kernel: Kernel, hw: Hardware, cls: str | None = None) -> float:
        """The calibrated per-class FLOP/s (:func:`~workbench.cost.host.vector_rate`)."""
        return host.vector_rate(kernel, hw, cls)

    def transpose_s(self, kernel: Kernel, hw: Hardware) -> float:
        """The calibrated strided transpose (:func:`~workbench.cost.host.transpose_s`)."""
        return host.transpose_s(kernel, hw)

    def dram_stream_s(self, kernel: Kernel, hw: Hardware) -> float:
        """Streaming the issuing core does itself (:func:`~workbench.cost.host.dram_stream_s`)."""
        return host.dram_stream_s(kernel, hw)

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """The time split (:func:`~workbench.cost.host.host_class`) unless capacity or sync."""
        if found[0] in ("capacity", "sync"):
            return found
        return host.host_class(kernel, hw, total_s, fixed_s)


_HARDWARE = HardwareScheduled()
_SOFTWARE = (SoftwareIssued(attention_engine=False), SoftwareIssued(attention_engine=True))


def tile_issue(hw: Hardware) -> TileIssue:
    """The profile's tile-issue strategy: software-issued where ``tile_issue_s > 0``.

    Args:
        hw: The profile.

    Returns:
        :class:`SoftwareIssued` for a calibrated host, else :class:`HardwareScheduled`.

    >>> from workbench.hw import load_hardware
    >>> type(tile_issue(load_hardware("h100-sxm"))).__name__
    'HardwareScheduled'
    """
    o = hw.overheads
    if o.tile_issue_s > 0:
        return _SOFTWARE[o.attention_block_issue_s > 0]
    return _HARDWARE
