"""The matrix engine's math rate, with the efficiency derate counted once.

A profile's ``matrix_engine.efficiency`` is a measured large-GEMM rate over peak (e.g. the
maximum achievable matmul FLOP/s, MAMF). That measurement already includes everything the tile
model adds on top of the math: wave quantization, K-step overhead, pipeline prologue and
epilogue, loads from the cache. Applying the derate to the math *and* adding those losses counts
them twice. When the profile records the shape of the measurement
(``matrix_engine.efficiency_shape``), the math rate is solved so that the whole model reproduces
the measured rate at that shape::

    e_math <- e_math x (efficiency x peak) / modelled rate(e_math)      (a few fixed-point steps)

starting from ``e_math = efficiency`` and capped at 1. Without a shape the derate is used as is.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.hw.schema import Hardware
from workbench.lowering.kernel import GemmProblem, Kernel, elem_bytes

__all__ = ["math_efficiency", "reference_kernel"]

_SOLVED: dict[int, tuple[Hardware, float]] = {}
_STEPS = 3


def reference_kernel(hw: Hardware) -> Kernel | None:
    """The GEMM the profile's efficiency was measured at (bf16 where the engine has it)."""
    shape = hw.matrix_engine.efficiency_shape
    if not shape:
        return None
    m, n, k = shape
    peaks = hw.matrix_engine.peak_flops_per_s
    dtype = "bf16" if "bf16" in peaks else next(iter(peaks))
    eb = elem_bytes(dtype)
    flops = 2 * m * n * k
    return Kernel(
        name="efficiency_reference",
        ops=(),
        kind="gemm",
        layer_type="mlp",
        engine="matrix",
        engine_reason="the profile's efficiency measurement",
        dtype=dtype,
        gemm=GemmProblem(batch=1, m=m, n=n, k=k, a_bytes=eb, b_bytes=eb, c_bytes=eb),
        flops=flops,
        matmul_flops=flops,
        bytes_read=round((m * k + k * n) * eb),
        bytes_written=round(m * n * eb),
    )


def math_efficiency(hw: Hardware, exec_s: Callable[[Kernel, Hardware], float]) -> float:
    """The engine's math rate over peak, 0..1 (see the module docstring).

    Args:
        hw: The profile.
        exec_s: Costs a kernel on ``hw`` (device seconds) with the math efficiency known so far.

    Returns:
        The solved math efficiency (``matrix_engine.efficiency`` when no shape is recorded or
        the profile is a software-scheduled host).
    """
    me = hw.matrix_engine
    hit = _SOLVED.get(id(hw))
    if hit is not None and hit[0] is hw:
        return hit[1]
    e = me.efficiency
    ref = reference_kernel(hw)
    _SOLVED[id(hw)] = (hw, e)  # NOTE: provisional, so costing the reference does not recurse
    if ref is None or hw.overheads.tile_issue_s > 0:
        return e
    target = me.efficiency * hw.peak_flops(ref.dtype)
    for _ in range(_STEPS):
        rate = ref.matmul_flops / exec_s(ref, hw)
        e = min(1.0, e * target / rate)
        _SOLVED[id(hw)] = (hw, e)
    return e
