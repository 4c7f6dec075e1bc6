"""Hardware-scheduled tiles (GPUs, NPUs, TPUs): the chips' :class:`~workbench.cost.issue.TileIssue`.

The chip's schedulers issue tiles; loads, math and epilogues overlap; padded tiles are the work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.cost._issue_terms import GemmTerms, Streaming, block_pipeline, softmax_s
from workbench.cost.model import power_floor_s
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["HardwareScheduled"]

Array = np.ndarray


def _misaligned(kernel: Kernel, hw: Hardware) -> bool:
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


def _dequant_s(kernel: Kernel, hw: Hardware, ms) -> Array | float:
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
    return np.minimum(ms.tn, p.n) * ms.tk * p.b_dequant_ops / (hw.vector_flops("fp32") / 2 / cores)


def _split_fixup_s(hw: Hardware, ms, rows, cols, bw_core) -> Array:
    """``latency + 2 x rows x cols x 4 B x (split - 1) / bw_core`` where split > 1, seconds.

    Split-K slices of an output tile run on different cores; each writes its fp32 partial
    tile to a workspace, and the slice that finishes last waits on the tile's semaphore,
    reads the other partials back and reduces them (CUTLASS "serial" split-K / stream-K
    fixup).
    """
    nxt = hw.memory[hw.memory.index(hw.sram) + 1]
    partial = 2.0 * rows * cols * 4.0 * (ms.split - 1) / bw_core
    return np.where(ms.split > 1, nxt.latency_s + partial, 0.0)


@dataclass(frozen=True, slots=True)
class HardwareScheduled:
    """GPUs, NPUs, TPUs: the chip schedules its own tiles (``scheduling: hardware_scheduled``)."""

    solves_math_rate: bool = True

    def gemm_terms(self, kernel: Kernel, hw: Hardware, ms, rows, cols, bw_core) -> GemmTerms:
        """Misaligned strides, dequant, fill skew, split-K fix-up and one store drain.

        * fill skew ``fold_skew_cycles / clock`` (0 off systolic arrays): a systolic array fills
          before its first fold and drains after its last (rows + cols - 2 cycles); the folds in
          between stream back to back, so a tile pays the skew once;
        * store drain: one off-chip latency (earlier waves' stores overlap the next wave's main
          loop);
        * no gather (implicit GEMM reads a conv's operands in place), no epilogue time (it
          overlaps the next tile's main loop), no software issue to batch.
        """
        skew = hw.matrix_engine.fold_skew_cycles
        return GemmTerms(
            misaligned=_misaligned(kernel, hw),
            dequant_s=_dequant_s(kernel, hw, ms),
            fill_skew_s=skew / hw.matrix_engine.clock_hz if skew else 0.0,
            split_fixup_s=_split_fixup_s(hw, ms, rows, cols, bw_core),
            store_drain_s=hw.offchip.latency_s,
            gather_s=0.0,
            epilogue_s=0.0,
            issue_per_tile=False,
        )

    def gemm_step(self, kernel: Kernel, hw: Hardware, ms, t_k: Array, rows, cols):
        """The padded native tiles are the work: ``(padded FLOPs, t_k)`` unchanged."""
        return ms.padded_flops, t_k

    def attention_block_s(self, kernel: Kernel, hw: Hardware, ms, kind: str, t_mm):
        """Seconds of a block's two products and its softmax; None for a published class.

        Every class but ``generic`` is costed by its published breakdown (attention_class.py).
        The generic block loop: ``t_mm + softmax`` (:func:`._issue_terms.softmax_s`).
        """
        if kind != "generic":
            return None
        return t_mm + softmax_s(hw, ms)

    def attention_pipeline(self, kernel: Kernel, hw: Hardware, ms, t_block, active, compute):
        """``max(blocks x t_block / active, longest item) + 2 x latency``; no issue time."""
        return block_pipeline(hw, ms, t_block, active, compute)

    def row_compute_s(self, kernel: Kernel, hw: Hardware, flops, util) -> Array:
        """``flops / (vector peak in the kernel's format x util)``; a transpose is its traffic."""
        return flops / (hw.vector_flops(kernel.dtype) * util)

    def streaming(self, kernel: Kernel, hw: Hardware) -> Streaming:
        """Ramp ``latency of the level + store drain``; DRAM streaming overlaps the tiles.

        A bandwidth-bound kernel's first request comes back one latency of the level after it
        starts, and it ends when its last stores have landed (one off-chip latency); in between
        the level streams at its sustained bandwidth.
        """
        drain = hw.offchip.latency_s
        return Streaming(ramp_s={m.name: m.latency_s + drain for m in hw.memory}, serial_s=0.0)

    def power_floor_s(self, kernel: Kernel, hw: Hardware, flops) -> Array | float:
        """``flops x energy per FLOP / (TDP - idle)``: the board's power roof, seconds.

        The engine's FLOPs in its own format (the vector unit's in fp32, as the energy model
        counts them); see :func:`workbench.cost.model.power_floor_s`.
        """
        fmt = kernel.compute_dtype if kernel.engine == "matrix" else "fp32"
        return power_floor_s(hw, fmt, flops)

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """The overlap classifier's class stands."""
        return found
