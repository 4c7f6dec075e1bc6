"""How tiles reach the engine: one strategy per profile, chosen once.

Two mechanisms put a tile's steps on an engine, and the cost model differs between them only
where this module says so:

- :class:`HardwareScheduled` (GPUs, NPUs, TPUs: ``scheduling: hardware_scheduled``): the chip's
  schedulers issue tiles; loads, math and epilogues overlap; padded tiles are the work.
- :class:`SoftwareIssued` (a host written by ``workbench calibrate``: ``scheduling:
  software_issued``): every tile step is a library call issued one after another from software,
  so calls run the exact slice at the calibrated rate of their size, epilogues and DRAM
  streaming add to the calls, and the bottleneck class comes from a time split
  (:func:`workbench.cost.host.host_class`).

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

The profile's typed ``scheduling`` field (:attr:`workbench.hw.Hardware.hardware_scheduled`)
picks the strategy; lowering and scheduling read the same field. A scorer asks
:func:`tile_issue` once and calls the strategy; it never asks which one it got. The interface is
one method per place a scorer needs it (:class:`TileIssue`); a method returns a record of terms
(:class:`GemmTerms`, :class:`Streaming`) where a mechanism has several, each with its neutral
value (0 s, ``False``, the input unchanged) where the mechanism does not exist. Formulas both
strategies apply are plain functions (:mod:`._issue_terms`), not methods.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from workbench.cost._issue_hardware import HardwareScheduled
from workbench.cost._issue_software import SoftwareIssued
from workbench.cost._issue_terms import GemmTerms, Streaming
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = [
    "GemmTerms",
    "HardwareScheduled",
    "SoftwareIssued",
    "Streaming",
    "TileIssue",
    "tile_issue",
]

Array = np.ndarray


class TileIssue(Protocol):
    """What differs between hardware-scheduled and software-issued tiles (see module docstring)."""

    @property
    def solves_math_rate(self) -> bool:
        """True where the math efficiency is fitted through a reference GEMM's shape.

        :func:`workbench.cost.efficiency.math_efficiency`; else the measured figure stands.
        """
        ...

    def gemm_terms(self, kernel: Kernel, hw: Hardware, ms, rows, cols, bw_core) -> GemmTerms:
        """What a GEMM's tiles pay beyond their main loop (rows x cols output tiles, bytes/s)."""
        ...

    def gemm_step(self, kernel: Kernel, hw: Hardware, ms, t_k: Array, rows, cols):
        """``(work FLOPs, K-step seconds)`` of every candidate from the padded ones."""
        ...

    def attention_block_s(self, kernel: Kernel, hw: Hardware, ms, kind: str, t_mm):
        """Seconds of one block's products (``t_mm``) and softmax; None for a published class."""
        ...

    def attention_pipeline(self, kernel: Kernel, hw: Hardware, ms, t_block, active, compute):
        """``(pipeline, compute, issue)`` seconds of every candidate from its block time."""
        ...

    def row_compute_s(self, kernel: Kernel, hw: Hardware, flops, util) -> Array:
        """Seconds of a row kernel's vector ``flops`` at ``util`` of the cores, transposes too."""
        ...

    def streaming(self, kernel: Kernel, hw: Hardware) -> Streaming:
        """How the kernel's traffic adds to its time: per-level ramp, serial streaming."""
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
    """The profile's tile-issue strategy, from its typed ``scheduling`` field.

    Args:
        hw: The profile.

    Returns:
        :class:`HardwareScheduled` where ``scheduling`` is ``hardware_scheduled``, else
        :class:`SoftwareIssued` (with an attention engine where the profile measured one,
        ``overheads.attention_block_issue_s > 0``).

    >>> from workbench.hw import load_hardware
    >>> type(tile_issue(load_hardware("h100-sxm"))).__name__
    'HardwareScheduled'
    """
    if hw.hardware_scheduled:
        return _HARDWARE
    return _SOFTWARE[hw.overheads.attention_block_issue_s > 0]
