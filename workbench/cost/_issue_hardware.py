"""Hardware-scheduled tiles (GPUs, NPUs, TPUs): the chips' :class:`~workbench.cost.issue.TileIssue`.

The chip's schedulers issue tiles; loads, math and epilogues overlap; padded tiles are the work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.cost.model import power_floor_s
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["HardwareScheduled"]

Array = np.ndarray


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

    def stream_ramp_s(self, hw: Hardware, level: str) -> float:
        """``latency of level + store drain``: what a bandwidth-bound kernel adds to its bytes.

        Its first request comes back one latency of the level after the kernel starts, and the
        kernel ends when its last stores have landed (:meth:`store_drain_s`); in between the
        level streams at its sustained bandwidth.
        """
        return hw.level(level).latency_s + self.store_drain_s(hw)

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
