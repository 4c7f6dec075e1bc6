"""MFU, HFU and MBU of a mapped step, defined so that 0 <= MFU <= HFU <= 1 by construction.

Notation (SI units): a step of time ``T`` seconds runs kernels ``k`` of time ``t_k`` seconds
(``T = sum_k t_k`` + the step overhead, so ``sum_k t_k <= T``).

* ``P_model`` (FLOP/s) is the peak of the engine and format **the model's GEMMs run in**, fixed
  per model: the run's format (``--dtype``, else the graph's own), placed on an engine by the
  same rule the lowering uses (:func:`workbench.lowering.formats.engine_for`): the matrix engine
  at that format, at the wider format it is unpacked to (int4 on int8 tensor cores), or the vector
  unit when the matrix engine lacks it. Weight-only formats (``--weight-dtype``) do not change it
  (the GEMM computes in the activation format), and a per-kernel override (``--kernel-dtype``)
  never does.
* ``P_k`` (FLOP/s) is the peak of kernel ``k``'s own engine at its own format: the matrix engine
  at :attr:`Kernel.compute_dtype`, else the vector unit at it. ``P_vec`` is the vector unit's peak
  at the kernel's format (epilogues, softmax, norms, reductions).
* ``busy_k`` (seconds) = ``min(t_k, W_k)``, the engine-seconds of the hardware FLOPs kernel ``k``
  executes, each at its own engine's peak: ``W_k = padded_k / P_k + vector_k / P_vec`` for GEMM-
  and attention-like kernels (padded multiply-add FLOPs, recompute and masked halves included) and
  ``W_k = flops_k / P_vec`` for the rest. (``min`` because two engines of one kernel can overlap.)
* ``credit_k`` (seconds) = ``min(busy_k, m_k / max(P_model, P_k))`` with ``m_k`` the kernel's
  model (multiply-add, unpadded) FLOPs. A kernel run slower than the model's format (an fp32
  override on the vector unit) is credited ``m_k / P_model``, exactly the PaLM definition; one run
  in a *faster* format (an fp8 override of a bf16 model) is credited at its own peak, so a
  faster format never makes MFU exceed its hardware work.

Then::

    MFU = sum_k credit_k / T   (= model FLOPs / (T x P_model) whenever no kernel outruns P_model)
    HFU = sum_k busy_k / T
    MBU = off-chip bytes moved / (T x sustained off-chip bandwidth B/s)

and ``credit_k <= busy_k <= t_k`` gives ``0 <= MFU <= HFU <= 1``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from workbench._format import fmt_peak
from workbench.cost.model import Cost
from workbench.hw.schema import Hardware
from workbench.lowering.formats import engine_for
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["busy_s", "credit_s", "engine_peak", "model_peak", "utilisation"]


class _Mapped(Protocol):
    @property
    def kernel(self) -> Kernel: ...
    @property
    def tiling(self) -> Tiling: ...
    @property
    def cost(self) -> Cost: ...


def model_peak(hw: Hardware, dtype: str) -> tuple[float, str]:
    """``P_model``: the peak (FLOP/s) of the engine the model's GEMMs run on at ``dtype``, named.

    >>> from workbench.hw import load_hardware
    >>> peak, name = model_peak(load_hardware("h100-sxm"), "bf16")
    >>> round(peak / 1e12), name.split(" peak")[0]
    (989, 'h100-sxm matrix engine bf16')
    """
    engine, _, wider = engine_for(hw, dtype)
    if engine == "matrix":
        fmt = wider or dtype
        peak = hw.peak_flops(fmt)
        name = f"{hw.name} matrix engine {fmt} peak {fmt_peak(peak, fmt)}"
        return peak, name + (f" ({dtype} runs as {fmt} there)" if fmt != dtype else "")
    have = hw.vector_unit.peak_flops_per_s
    vfmt = dtype if dtype in have else "fp32" if "fp32" in have else max(have, key=have.__getitem__)
    peak = hw.vector_flops(vfmt)
    return peak, (
        f"{hw.name} vector unit {vfmt} peak {fmt_peak(peak, vfmt)} (the matrix engine has no "
        f"{dtype}: the model's GEMMs run on the vector unit)"
    )


def engine_peak(kernel: Kernel, hw: Hardware) -> float:
    """``P_k``: peak FLOP/s of the kernel's own engine at its own format."""
    if kernel.engine == "matrix" and hw.supports(kernel.compute_dtype):
        return hw.peak_flops(kernel.compute_dtype)
    return hw.vector_flops(kernel.compute_dtype)


def busy_s(k: _Mapped, hw: Hardware) -> float:
    """``busy_k``: engine-seconds of the FLOPs the kernel executes at its engines' peaks, s."""
    kern = k.kernel
    vec = hw.vector_flops(kern.compute_dtype)
    if kern.gemm is not None or kern.attention is not None:
        work = k.tiling.padded_flops / engine_peak(kern, hw) + kern.vector_flops / vec
    else:
        work = max(kern.flops, kern.vector_flops) / vec
    return max(0.0, min(k.cost.total_s, work))


def credit_s(k: _Mapped, hw: Hardware, p_model: float) -> float:
    """``credit_k``: model FLOPs at ``max(P_model, P_k)``, capped at the busy time, seconds."""
    if not k.kernel.matmul_flops or p_model <= 0:
        return 0.0
    own = engine_peak(k.kernel, hw)
    return min(busy_s(k, hw), k.kernel.matmul_flops / max(p_model, own))


def utilisation(
    kernels: Iterable[_Mapped], hw: Hardware, p_model: float, time_s: float
) -> tuple[float, float]:
    """(MFU, HFU) of a step of ``time_s`` seconds, both 0..1, MFU <= HFU (module docstring)."""
    if time_s <= 0:
        return 0.0, 0.0
    credit = busy = 0.0
    for k in kernels:
        credit += credit_s(k, hw, p_model)
        busy += busy_s(k, hw)
    return credit / time_s, busy / time_s
