"""Predicted vs measured on this machine: map a suite of small kernels, run them, compare.

Every kernel of every suite graph is mapped on the host profile (``workbench calibrate``), run
tile by tile exactly as mapped on the backend, timed (median of repeats), and set beside the
cost model's ``total_s``. The error of one kernel is ``|predicted - measured| / measured``.

Beside the cost model's figure the report carries ``with_dispatch_s``: the prediction plus the
tiles executed x the host's measured per-tile dispatch time (a Python/NumPy call per tile). The
cost model has no such term; the two medians side by side show what it would be worth.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.execution.backend import Backend, resolve_backend, sync
from workbench.execution.measure import measure
from workbench.execution.run import execute, make_inputs, tiled_gemm
from workbench.hw.schema import Hardware
from workbench.mapper import map_model
from workbench.scheduling.tiling import Tiling
from workbench.tuning._suite import suite
from workbench.tuning.autotune import progress_bar

__all__ = ["KernelCheck", "ValidationReport", "dispatch_seconds", "host_profile", "validate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelCheck:
    """One kernel predicted and measured (seconds).

    Attributes:
        name: Suite case (and kernel when a case has several).
        kind: Kernel kind.
        tile: Tiling that ran, ``MxNxK``.
        tiles: Tile calls executed (GEMM: K-steps).
        predicted_s: Cost-model total, seconds.
        measured_s: Median measured time, seconds.
        abs_pct_error: ``100 |predicted - measured| / measured``.
        predicted_bottleneck: The cost model's class.
        with_dispatch_s: ``predicted_s + tiles x dispatch_s``, seconds.
    """

    name: str
    kind: str
    tile: str
    tiles: int
    predicted_s: float
    measured_s: float
    abs_pct_error: float
    predicted_bottleneck: str
    with_dispatch_s: float

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {f: getattr(self, f) for f in self.__slots__}  # type: ignore[attr-defined]


def _pct(pred: float, meas: float) -> float:
    return 100.0 * abs(pred - meas) / meas if meas > 0 else float("inf")


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    """The suite's result.

    Attributes:
        hardware: Profile name.
        backend: Backend name.
        dispatch_s: Measured per-tile dispatch time on this host, seconds.
        kernels: One :class:`KernelCheck` per kernel.
    """

    hardware: str
    backend: str
    dispatch_s: float
    kernels: tuple[KernelCheck, ...]

    @property
    def median_abs_pct_error(self) -> float:
        """Median of the kernels' absolute percentage errors (cost model as is)."""
        return float(statistics.median(k.abs_pct_error for k in self.kernels))

    @property
    def median_with_dispatch_pct_error(self) -> float:
        """The same median with the per-tile dispatch term added to every prediction."""
        return float(statistics.median(_pct(k.with_dispatch_s, k.measured_s) for k in self.kernels))

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the ``workbench validate --format json`` object."""
        return {
            "median_abs_pct_error": self.median_abs_pct_error,
            "median_with_dispatch_pct_error": self.median_with_dispatch_pct_error,
            "dispatch_s": self.dispatch_s,
            "backend": self.backend,
            "hardware": self.hardware,
            "kernels": [k.as_dict() for k in self.kernels],
        }

    def table(self) -> str:
        """A fixed-width text table, one kernel per line, medians at the end."""
        head = (
            f"{'kernel':44} {'kind':11} {'tile':13} {'tiles':>6} {'predicted':>11} "
            f"{'measured':>11} {'error':>8}  bottleneck"
        )
        lines = [head, "-" * len(head)]
        for k in self.kernels:
            lines.append(
                f"{k.name[:44]:44} {k.kind:11} {k.tile:13} {k.tiles:6d} "
                f"{k.predicted_s * 1e3:9.4f}ms {k.measured_s * 1e3:9.4f}ms "
                f"{k.abs_pct_error:7.0f}%  {k.predicted_bottleneck}"
            )
        lines.append(
            f"median abs error {self.median_abs_pct_error:.1f}% over {len(self.kernels)} "
            f"kernels ({self.backend}, {self.hardware}); with a per-tile dispatch term of "
            f"{self.dispatch_s * 1e6:.2f} us: {self.median_with_dispatch_pct_error:.1f}%"
        )
        return "\n".join(lines)


@functools.cache
def host_profile() -> Hardware:
    """This host measured by ``calibrate(quick=True)`` with the engine probe, once per process.

    Call it inside the same :func:`~workbench.execution.threads.blas_threads` block as the
    measurements it is compared with.
    """
    from workbench.execution.probe import probe_engine
    from workbench.hw.calibrate import calibrate

    return calibrate(quick=True, progress=False, engine=probe_engine)


def dispatch_seconds(backend: Backend | str | None = None, *, repeats: int = 5) -> float:
    """Per-tile dispatch time of the tiled GEMM on ``backend``, seconds.

    Times the adapter's tiled GEMM at 64^3 as 512 K-steps of 8x8x8 and as one; the difference
    per extra K-step is the cost of issuing it from Python (slicing, a matmul call, the store).
    """
    bk = resolve_backend(backend)
    a = bk.xp.asarray(np.random.default_rng(0).standard_normal((64, 64), dtype=np.float32))

    def best(tile: int) -> float:
        times = []
        for _ in range(repeats):
            sync(bk)
            t0 = time.perf_counter()
            tiled_gemm(a, a, Tiling(tile_m=tile, tile_n=tile, tile_k=tile), backend=bk)
            sync(bk)
            times.append(time.perf_counter() - t0)
        return min(times)

    best(8)
    return max(0.0, (best(8) - best(64)) / (512 - 1))


def validate(
    hw: Hardware | None = None,
    *,
    backend: Backend | str | None = None,
    quick: bool = False,
    repeats: int = 3,
    progress: bool = True,
) -> ValidationReport:
    """Predict and measure the suite on ``hw`` (default: this host, calibrated quickly).

    Args:
        hw: Hardware profile of this machine (a calibrated host profile).
        backend: Backend, backend name or None (automatic).
        quick: Six tiny kernels instead of the full suite (for tests).
        repeats: Timed runs per kernel (after one warm-up).
        progress: Show a progress bar when the suite takes over a second.

    Returns:
        The :class:`ValidationReport`.
    """
    hw = hw or host_profile()
    bk = resolve_backend(backend)
    dispatch = dispatch_seconds(bk)
    checks: list[KernelCheck] = []
    cases = suite(quick)
    with progress_bar(len(cases), "validate", progress) as bar:
        for case, build, options in cases:
            graph = build()
            mapping = map_model(graph, hw, options)
            for km in mapping.kernels:
                k = km.kernel
                inputs = make_inputs(k, 0, bk, graph=graph)
                ran = execute(km, inputs, graph=graph, backend=bk)
                m = measure(k, km.tiling, backend=bk, graph=graph, inputs=inputs, repeats=repeats)
                name = case if len(mapping.kernels) == 1 else f"{case}: {k.name}"
                pred = km.cost.total_s
                checks.append(
                    KernelCheck(
                        name=name,
                        kind=k.kind,
                        tile=km.tiling.shape,
                        tiles=ran.tiles,
                        predicted_s=pred,
                        measured_s=m.median_s,
                        abs_pct_error=_pct(pred, m.median_s),
                        predicted_bottleneck=km.cost.bottleneck,
                        with_dispatch_s=pred + ran.tiles * dispatch,
                    )
                )
            bar.update()
    return ValidationReport(
        hardware=hw.name, backend=bk.name, dispatch_s=dispatch, kernels=tuple(checks)
    )
