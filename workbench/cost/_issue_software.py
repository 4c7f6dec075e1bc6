"""Software-issued tiles (calibrated hosts): the :class:`~workbench.cost.issue.TileIssue` of hosts.

Every tile step is a library call issued one after another from software; the formulas it applies
are in :mod:`workbench.cost.host`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.cost import host
from workbench.cost._issue_hardware import HardwareScheduled
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["SoftwareIssued"]

Array = np.ndarray

_HARDWARE = HardwareScheduled()


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

    def stream_ramp_s(self, hw: Hardware, level: str) -> float:
        """0 s: a level's calibrated rate was measured over whole calls, latency included."""
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
            return _HARDWARE.softmax_s(kernel, hw, ms)
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
            return _HARDWARE.attention_pipeline(kernel, hw, ms, t_block, active, compute)
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

    def power_floor_s(self, kernel: Kernel, hw: Hardware, flops) -> float:
        """0 s: the calibrated rates were measured on this host, under its own power limit."""
        return 0.0

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """The time split (:func:`~workbench.cost.host.host_class`) unless capacity or sync."""
        if found[0] in ("capacity", "sync"):
            return found
        return host.host_class(kernel, hw, total_s, fixed_s)
