"""Software-issued tiles (calibrated hosts): the :class:`~workbench.cost.issue.TileIssue` of hosts.

Every tile step is a library call issued one after another from software; the formulas it applies
are in :mod:`workbench.cost.host`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.cost import host
from workbench.cost._issue_terms import GemmTerms, Streaming, block_pipeline, softmax_s
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["SoftwareIssued"]

Array = np.ndarray


def _epilogue_s(kernel: Kernel, hw: Hardware) -> float:
    """``vector FLOPs / calibrated elementwise rate``, seconds (0 without an epilogue).

    The fused epilogue (bias, activation, residual) runs as library passes over each output
    tile after its matmul.
    """
    if not kernel.vector_flops:
        return 0.0
    return kernel.vector_flops / host.vector_rate(kernel, hw, "elementwise")


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

    def gemm_terms(self, kernel: Kernel, hw: Hardware, ms, rows, cols, bw_core) -> GemmTerms:
        """A conv's gather and the epilogue's library passes; tile steps issued per (m, n) tile.

        Library calls have no asynchronous-copy path to fall off and no systolic array; the
        engine dequantizes weights outside the K-step (its traffic); the host accumulates split
        slices in place; a call returns when its stores are done. The gather is a conv's set-up
        plus its im2col (:func:`~workbench.cost.host.gather_s`); every batch entry (head, conv
        group) of an output tile runs in one library call.
        """
        return GemmTerms(
            misaligned=False,
            dequant_s=0.0,
            fill_skew_s=0.0,
            split_fixup_s=np.zeros(1),
            store_drain_s=0.0,
            gather_s=host.gather_s(kernel, hw),
            epilogue_s=_epilogue_s(kernel, hw),
            issue_per_tile=True,
        )

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

    def _work_share(self, kernel: Kernel, ms):
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

    def attention_block_s(self, kernel: Kernel, hw: Hardware, ms, kind: str, t_mm):
        """Seconds of a block's two products and its softmax, whatever the class (generic loop).

        A block's two products are small library calls: they run at the calibrated rate of a
        call of their size (the cube with the same work), not at the large-call peak, on the
        block's real work only (:meth:`_work_share`). The softmax: with an attention engine,
        ``br x bc x 5 / (softmax rate at row length bc / cores)`` (the online softmax's passes
        at the engine's measured rate); without one, the hardware formula
        (:func:`._issue_terms.softmax_s`). The two add, except FA3's without an engine (its
        products overlap the softmax: the max).
        """
        p = kernel.attention
        assert p is not None
        if self.attention_engine:
            by_length = host.row_rate(hw, "softmax", ms.bc)
            rate = by_length if by_length is not None else host.vector_rate(kernel, hw, "softmax")
            t_sm = ms.br * ms.bc * 5.0 / (rate / hw.matrix_engine.cores)
        else:
            t_sm = softmax_s(hw, ms)
        share = self._work_share(kernel, ms)
        t_mm, t_sm = t_mm * share, t_sm * share
        t_mm = t_mm * host.call_slowdown(hw, np.cbrt(ms.br * ms.bc * p.head_dim))
        if kind == "fa3" and not self.attention_engine:
            return np.maximum(t_mm, t_sm)
        return t_mm + t_sm

    def attention_pipeline(self, kernel: Kernel, hw: Hardware, ms, t_block, active, compute):
        """``(pipeline, compute, issue)`` seconds.

        Without an attention engine: as on hardware, each block issuing ``tile_issue_s``
        (:func:`._issue_terms.block_pipeline`). With one, the engine runs every head of a
        (query tile, KV block) pair in one step, so fixed costs are per engine block and per
        query tile, not per head block::

            issue    = blocks / (batch x heads) x block_issue + query tiles x qtile_issue
            pipeline = blocks x (t_block - tile_issue) / active + issue + 2 x latency
            compute  = compute x work share
        """
        o = hw.overheads
        if not self.attention_engine:
            return block_pipeline(hw, ms, t_block, active, compute)
        p = kernel.attention
        assert p is not None
        bh = p.batch * p.heads
        engine_blocks = ms.blocks / bh
        q_tiles = ms.items / (bh * ms.split)
        issue_s = engine_blocks * o.attention_block_issue_s + q_tiles * o.attention_qtile_issue_s
        lat = hw.offchip.latency_s
        pipeline = ms.blocks * (t_block - o.tile_issue_s) / active + issue_s + 2 * lat
        return pipeline, compute * self._work_share(kernel, ms), issue_s

    def row_compute_s(self, kernel: Kernel, hw: Hardware, flops, util) -> Array:
        """``flops / (calibrated class rate x util) + strided transpose``, seconds.

        :func:`~workbench.cost.host.vector_rate` and :func:`~workbench.cost.host.transpose_s`.
        """
        return flops / (host.vector_rate(kernel, hw) * util) + host.transpose_s(kernel, hw)

    def streaming(self, kernel: Kernel, hw: Hardware) -> Streaming:
        """No ramp; the streaming the issuing core does itself adds to the calls.

        A level's calibrated rate was measured over whole calls, latency included; the serial
        streaming is :func:`~workbench.cost.host.dram_stream_s`.
        """
        return Streaming(
            ramp_s={m.name: 0.0 for m in hw.memory}, serial_s=host.dram_stream_s(kernel, hw)
        )

    def power_floor_s(self, kernel: Kernel, hw: Hardware, flops) -> float:
        """0 s: the calibrated rates were measured on this host, under its own power limit."""
        return 0.0

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """The time split (:func:`~workbench.cost.host.host_class`) unless capacity or sync."""
        if found[0] in ("capacity", "sync"):
            return found
        return host.host_class(kernel, hw, total_s, fixed_s)
