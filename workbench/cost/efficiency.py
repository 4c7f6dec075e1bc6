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
A format with its own measurement (``matrix_engine.format_efficiency``: FP8 GEMMs reach a lower
share of their doubled peak) is solved the same way at its own shape.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.cost.issue import tile_issue
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import GemmProblem, Kernel, elem_bytes

__all__ = ["math_efficiency", "reference_kernel"]

_SOLVED: dict[tuple[int, str | None], tuple[Hardware, float]] = {}
_STEPS = 3


def _measurement(hw: Hardware, fmt: str | None) -> tuple[str, float, tuple[int, int, int] | None]:
    """(format, measured efficiency, shape) that applies to ``fmt``."""
    me = hw.matrix_engine
    if fmt is not None and fmt in me.format_efficiency:
        f = me.format_efficiency[fmt]
        return fmt, f.efficiency, f.shape
    peaks = me.peak_flops_per_s
    dtype = "bf16" if "bf16" in peaks else next(iter(peaks))
    return dtype, me.efficiency, me.efficiency_shape


def reference_kernel(hw: Hardware, fmt: str | None = None) -> Kernel | None:
    """The GEMM the efficiency that applies to ``fmt`` was measured at, or None."""
    dtype, _, shape = _measurement(hw, fmt)
    if not shape:
        return None
    m, n, k = shape
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


def math_efficiency(
    hw: Hardware, exec_s: Callable[[Kernel, Hardware], float], fmt: str | None = None
) -> float:
    """The engine's math rate over peak for format ``fmt``, 0..1 (see the module docstring).

    Args:
        hw: The profile.
        exec_s: Costs a kernel on ``hw`` (device seconds) with the math efficiency known so far.
        fmt: The format the engine runs (``matrix_engine.format_efficiency`` may measure it).

    Returns:
        The solved math efficiency (the measured figure itself when no shape is recorded or
        the profile is a software-scheduled host).
    """
    key = (id(hw), fmt if fmt in hw.matrix_engine.format_efficiency else None)
    hit = _SOLVED.get(key)
    if hit is not None and hit[0] is hw:
        return hit[1]
    _, e, _ = _measurement(hw, key[1])
    target_share = e
    ref = reference_kernel(hw, key[1])
    _SOLVED[key] = (hw, e)  # NOTE: provisional, so costing the reference does not recurse
    if ref is None or not tile_issue(hw).solves_math_rate:
        return e
    target = target_share * hw.peak_flops(ref.dtype)
    for _ in range(_STEPS):
        rate = ref.matmul_flops / exec_s(ref, hw)
        e = min(1.0, e * target / rate)
        _SOLVED[key] = (hw, e)
    return e
