"""The cost model's terms for software-scheduled hosts (a CPU running the NumPy engine).

A host profile (``workbench calibrate``) has ``scheduling: software_issued``: tiles are library
calls issued one after another, so their cost includes the call-size rate, the accumulator's
traffic per K-step, im2col gathers and per-class vector rates measured by calibration, and its
bottleneck class comes from a time split rather than from overlapped parts. These are the
formulas; :class:`workbench.cost.issue.SoftwareIssued` applies them on host profiles only (a
hardware-scheduled profile never reaches them).
"""

from __future__ import annotations

import numpy as np

from workbench.cost.model import Bottleneck
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = [
    "accumulate_s",
    "call_slowdown",
    "dram_stream_s",
    "gather_s",
    "home_level",
    "host_class",
    "row_rate",
    "skinny_slowdown",
    "transpose_s",
    "vector_class",
    "vector_rate",
]


def accumulate_s(hw: Hardware, acc_bytes: np.ndarray) -> np.ndarray:
    """Hosts: reading and writing a tile's fp32 accumulator once per K-step, seconds.

    A library call returns a fresh product that is added into the accumulator, so every K-step
    moves the accumulator twice, at the bandwidth of the innermost cache holding it (half its
    capacity, the rest holds the operand panels) or of off-chip memory.
    """
    levels = [m for m in hw.memory if m.kind != "register"]
    conds = [acc_bytes <= m.capacity_bytes / 2 for m in levels[:-1]]
    bws = [m.sustained_bytes_per_s for m in levels[:-1]]
    bw = np.select(conds, bws, default=levels[-1].sustained_bytes_per_s)
    return 2.0 * acc_bytes / bw


def call_slowdown(hw: Hardware, side: np.ndarray) -> np.ndarray | float:
    """Hosts: how much slower than the sustained peak one library call of ``side`` runs.

    ``side`` is the edge of the cube with the call's work (the geometric mean of its m, n, k).
    Interpolates the calibrated ``matrix_engine.call_rates`` (FLOP/s of square calls by side)
    on a log scale; 1 when the profile has none (accelerators).
    """
    return _slowdown(hw, hw.matrix_engine.call_rates, side)


def skinny_slowdown(hw: Hardware, rows: np.ndarray) -> np.ndarray | float:
    """Hosts: how much slower than the sustained peak a call of ``rows`` rows (M) runs.

    Library microkernels and the packing of the B panel are amortized over the rows of a call,
    so a skinny GEMM call runs far below a square one of the same work: interpolates
    ``matrix_engine.skinny_call_rates`` on a log scale of the rows (clamped at its ends: more
    rows than the table run as its largest entry); 1 without the table (accelerators). The
    caller takes the larger of this and :func:`call_slowdown`.
    """
    return _slowdown(hw, hw.matrix_engine.skinny_call_rates, rows)


def _slowdown(
    hw: Hardware, rates: tuple[tuple[int, float], ...], size: np.ndarray
) -> np.ndarray | float:
    """Peak / the FLOP/s of ``rates`` (size, FLOP/s) at ``size``, log-interpolated; 1 if none."""
    if not rates:
        return 1.0
    sides = np.log2([float(n) for n, _ in rates])
    speed = np.array([r for _, r in rates]) / hw.peak_flops("fp32")
    rel = np.interp(np.log2(np.maximum(size, 1)), sides, np.minimum(speed, 1.0))
    return 1.0 / np.maximum(rel, 1e-3)


def dram_stream_s(kernel: Kernel, hw: Hardware) -> float:
    """Hosts: streaming a kernel whose footprint exceeds the caches from DRAM, seconds.

    The core that runs the library calls also brings their operands in (packing copies,
    a single thread's outstanding misses), so on a host this time adds to the calls' instead
    of hiding behind them. 0 when the footprint fits a cache (warm runs read it from there)
    and on accelerators.
    """
    levels = [m for m in hw.memory if m.kind != "register"]
    home = home_level(kernel, hw)
    if home is not levels[-1] or kernel.bytes <= levels[-2].capacity_bytes:
        return 0.0
    return kernel.bytes / home.bandwidth_bytes_per_s


def gather_s(kernel: Kernel, hw: Hardware) -> float:
    """Host engines only: a conv's set-up plus gathering its im2col A matrix once, seconds.

    The engine gathers each M tile's A rows (all K) once; 0 unless the host profile has
    ``vector_unit.gather_bytes_per_s`` / ``overheads.conv_setup_s`` (``workbench calibrate``).
    """
    rate = hw.vector_unit.gather_bytes_per_s
    p = kernel.gemm
    if kernel.kind != "conv" or p is None:
        return 0.0
    gather = p.batch * p.m * p.k * p.a_bytes / rate if rate > 0 else 0.0
    return gather + hw.overheads.conv_setup_s


def transpose_s(kernel: Kernel, hw: Hardware) -> float:
    """Hosts: a layout-transform kernel's tiled 2-D transpose at the calibrated rate, seconds.

    A transpose reads one side with a stride of a whole row, so its rate is not the copy
    bandwidth: it depends on the source's row length (cache sets and lines touched per element)
    and on its size (the cache level its source and result fit in). ``vector_unit.
    transpose_rates`` (elements/s by row length and elements, measured by ``workbench
    calibrate``) is interpolated on a log scale of the row length at each calibrated size, then
    on a log scale of the size (clamped at the table's ends). 0 for other kernels and for
    profiles without the figures (accelerators: the bytes move at the copy rates).
    """
    table = hw.vector_unit.transpose_rates
    p = kernel.rows
    if kernel.kind != "layout" or p is None or not table:
        return 0.0
    widths = sorted({w for w, _, _ in table})
    sizes = sorted({n for _, n, _ in table})
    rate = {(w, n): r for w, n, r in table}
    at_size = [
        float(np.interp(np.log2(max(p.cols, 1)), np.log2(widths), [rate[w, n] for w in widths]))
        for n in sizes
    ]
    elements = p.rows * p.cols
    r = float(np.interp(np.log2(max(elements, 1)), np.log2(sizes), at_size))
    return elements / r


def vector_class(kernel: Kernel) -> str:
    """The engine's class of a vector kernel: layernorm, rmsnorm, softmax, reduce, elementwise.

    Read from the kernel's kind and the op kind lowering names in ``engine_reason``
    (``"<OpKind> runs on the vector unit"``); used to look up a host's per-class effective rate
    (:attr:`~workbench.hw.schema.VectorUnit.kernel_flops_per_s`).
    """
    if kernel.kind == "elementwise":
        return "elementwise"
    head = kernel.engine_reason.split(" ", 1)[0].lower()
    return {"pool": "reduce", "attention": "softmax"}.get(head, head)


def row_rate(hw: Hardware, cls: str, cols: np.ndarray | float) -> np.ndarray | float | None:
    """Hosts: FLOP/s of the engine's row kernels of class ``cls`` at row length ``cols``.

    Each row's reductions (max, sum, mean) and the broadcasts of their results are library
    inner loops, so the cost per element depends on the row length. Interpolates the
    calibrated ``vector_unit.row_rates`` table on a log scale of the row length (clamped at
    its ends); None when the profile has no table for the class (accelerators, old profiles).
    """
    table = hw.vector_unit.row_rates.get(cls)
    if not table:
        return None
    lengths = np.log2([float(n) for n, _ in table])
    rate = np.interp(np.log2(np.maximum(cols, 1)), lengths, [r for _, r in table])
    return float(rate) if np.ndim(rate) == 0 else rate


def vector_rate(kernel: Kernel, hw: Hardware, cls: str | None = None) -> float:
    """Vector FLOP/s for ``kernel``: a host's per-class rate when calibrated, else the peak.

    On a host, a row kernel's rate is the class's rate at its row length (:func:`row_rate`).
    """
    rates = hw.vector_unit.kernel_flops_per_s
    if rates:
        cls = cls or vector_class(kernel)
        if kernel.kind == "row" and kernel.rows is not None:
            by_length = row_rate(hw, cls, kernel.rows.cols)
            if by_length is not None:
                return float(by_length)
        rate = rates.get(cls)
        if rate:
            return rate
    return hw.vector_flops(kernel.dtype)


def home_level(kernel: Kernel, hw: Hardware):
    """The innermost cache or DRAM level whose capacity holds all of the kernel's bytes."""
    levels = [m for m in hw.memory if m.kind != "register"]
    return next((m for m in levels if m.capacity_bytes >= kernel.bytes), levels[-1])


def host_class(kernel: Kernel, hw: Hardware, total_s: float, fixed_s: float) -> tuple[str, str]:
    """Bottleneck class on a software-scheduled host, from a time split (seconds).

    The host runs one library call after another, so time is a sum, not a max of overlapped
    parts: ``fixed_s`` (launch and issued steps) is overhead; of the rest (work), moving the
    kernel's bytes at the copy rate of the level its footprint fits in is bandwidth. The class
    is ``overhead`` when the fixed part is at least the work, else ``bandwidth:<level>`` when
    moving takes at least half the work, else ``compute``. Validation applies the same split to
    measured times (:func:`workbench.tuning.validate.measured_class`).

    Args:
        kernel: The kernel.
        hw: A host profile (``scheduling: software_issued``).
        total_s: Its total time, seconds.
        fixed_s: Its fixed software cost, seconds.

    Returns:
        ``(class, evidence sentence)``.
    """
    work = max(total_s - fixed_s, 0.0)
    lvl = home_level(kernel, hw)
    moving = kernel.bytes / lvl.sustained_bytes_per_s
    figures = (
        f"fixed {fixed_s * 1e6:.3g} us (launch and issued tile steps), work {work * 1e6:.3g} us, "
        f"moving {kernel.bytes / 1e6:.3g} MB at {lvl.name} {lvl.sustained_bytes_per_s / 1e9:.3g}"
        f" GB/s {moving * 1e6:.3g} us"
    )
    if fixed_s >= work:
        return "overhead", f"overhead-bound on the host: {figures}"
    if moving >= 0.5 * work:
        return (
            str(Bottleneck.bandwidth(lvl.name)),
            f"{lvl.name}-bandwidth-bound on the host: {figures}",
        )
    return "compute", f"compute-bound on the host: {figures}"
