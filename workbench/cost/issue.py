"""How tiles reach the engine: one strategy per profile, chosen once.

Two mechanisms put a tile's steps on an engine, and the cost model differs between them only
where this module says so:

- :class:`HardwareScheduled` (GPUs, NPUs, TPUs: ``overheads.tile_issue_s == 0``): the chip's
  schedulers issue tiles; loads, math and epilogues overlap; padded tiles are the work.
- :class:`SoftwareIssued` (a calibrated host, ``workbench calibrate``: ``tile_issue_s > 0``):
  every tile step is a library call issued one after another from software, so calls run the
  exact slice at the calibrated rate of their size, epilogues and DRAM streaming add to the
  calls, and the bottleneck class comes from a time split (:func:`workbench.cost.host.host_class`).

Where they differ (each written once, in :mod:`._issue_hardware` and :mod:`._issue_software`)::

    mechanism                hardware-scheduled              software-issued
    GEMM work                padded native tiles             exact slice x call-size slowdown
                                                             + fp32 accumulator per K-step
    weight-only dequant      vector unit, per K-step         (in traffic)
    systolic fill skew       skew cycles / clock per tile    0
    split-K fix-up           latency + partials              0 (accumulates in place)
    store drain              one off-chip latency            0
    bandwidth-bound ramp     level latency + store drain     0 (in the calibrated rates)
    im2col, epilogue         0 (implicit GEMM, overlapped)   gather + calibrated passes
    batched GEMM issue       (no issue)                      once per (m, n) tile, not per entry
    attention                published class breakdown       generic block loop, exact blocks,
                                                             per-engine-block issue (calibrated)
    vector rate, transpose   peak, copy rates                calibrated class rates, strided
    DRAM streaming           overlapped (a level time)       adds to the calls
    power roof               engine FLOPs x pJ/FLOP          0 (the calibrated rates are
                             / (TDP - idle)                  sustained on this host)
    bottleneck class         overlap classifier              time split (fixed vs work)
    math efficiency          solved through the GEMM shape   the measured figure

A scorer asks :func:`tile_issue` once and calls the strategy; it never asks which one it got.
Every method returns seconds, FLOP/s or a dimensionless factor, as its docstring says, and the
neutral value (0 s, a factor of 1, the input unchanged) where its mechanism does not exist.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from workbench.cost._issue_hardware import HardwareScheduled
from workbench.cost._issue_software import SoftwareIssued
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

    def stream_ramp_s(self, hw: Hardware, level: str) -> float:
        """Seconds a kernel bound by ``level``'s bandwidth adds to its bytes' streaming time."""
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

    def power_floor_s(self, kernel: Kernel, hw: Hardware, flops) -> Array | float:
        """Seconds the board needs to dissipate ``flops`` of the kernel's engine (power roof)."""
        ...

    def classify(self, kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float, found):
        """``(class, evidence)`` from the overlap classifier's ``found`` and a time split."""
        ...


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
