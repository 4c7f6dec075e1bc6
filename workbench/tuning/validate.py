"""Predicted vs measured on this machine: map a suite of small kernels, run them, compare.

Every kernel of every suite graph is mapped on the host profile (``workbench calibrate``, with
the engine probe), run tile by tile exactly as mapped on the backend, timed (one warm-up, then
the median of repeats), and set beside the cost model's ``total_s``. The error of one kernel is
``|predicted - measured| / measured``. Calibration and measurement run with the same BLAS thread
count (:mod:`workbench.execution.threads`).

The measured bottleneck class comes from the measurement and the calibrated micro-benchmark
figures, never from the cost model's choices:

* ``overhead`` when the fixed software cost (the profile's kernel launch plus the tile steps the
  execution issued x ``tile_issue_s``) is at least half the measured time;
* otherwise ``bandwidth`` when moving the kernel's off-chip bytes at the calibrated copy rate of
  the slowest level takes at least half of the remaining (work) time;
* otherwise ``compute``.

A kernel's class is wrong when the predicted class's family (``bandwidth:<level>`` counts as
``bandwidth``) differs from the measured one.
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from typing import Any

from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.measure import measure
from workbench.execution.run import execute, make_inputs
from workbench.execution.threads import DEFAULT_BLAS_THREADS, blas_threads
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.mapper import KernelMapping, map_model
from workbench.tuning._suite import suite
from workbench.tuning.autotune import progress_bar

__all__ = ["KernelCheck", "ValidationReport", "host_profile", "measured_class", "validate"]


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
        measured_bottleneck: The class from the measurement (module docstring).
        class_match: The two classes' families agree.
    """

    name: str
    kind: str
    tile: str
    tiles: int
    predicted_s: float
    measured_s: float
    abs_pct_error: float
    predicted_bottleneck: str
    measured_bottleneck: str
    class_match: bool

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {f: getattr(self, f) for f in self.__slots__}


def _pct(pred: float, meas: float) -> float:
    return 100.0 * abs(pred - meas) / meas if meas > 0 else float("inf")


def _family(cls: str) -> str:
    return cls.split(":")[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    """The suite's result.

    Attributes:
        hardware: Profile name.
        backend: Backend name.
        blas_threads: BLAS threads of the run (None: left as the library set it).
        tile_issue_s: The profile's per-step issue time, seconds.
        kernels: One :class:`KernelCheck` per kernel.
    """

    hardware: str
    backend: str
    blas_threads: int | None
    tile_issue_s: float
    kernels: tuple[KernelCheck, ...]

    @property
    def median_abs_pct_error(self) -> float:
        """Median of the kernels' absolute percentage errors."""
        return float(statistics.median(k.abs_pct_error for k in self.kernels))

    @property
    def class_mismatches(self) -> tuple[str, ...]:
        """Names of the kernels whose predicted class family is not the measured one."""
        return tuple(k.name for k in self.kernels if not k.class_match)

    def by_kind(self) -> dict[str, float]:
        """Median absolute percentage error per kernel kind."""
        kinds = sorted({k.kind for k in self.kernels})
        return {
            kind: float(statistics.median(k.abs_pct_error for k in self.kernels if k.kind == kind))
            for kind in kinds
        }

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the ``workbench validate --format json`` object."""
        return {
            "median_abs_pct_error": self.median_abs_pct_error,
            "median_abs_pct_error_by_kind": self.by_kind(),
            "class_mismatches": list(self.class_mismatches),
            "backend": self.backend,
            "hardware": self.hardware,
            "blas_threads": self.blas_threads,
            "tile_issue_s": self.tile_issue_s,
            "kernels": [k.as_dict() for k in self.kernels],
        }

    def table(self) -> str:
        """A fixed-width text table, one kernel per line, medians at the end."""
        head = (
            f"{'kernel':44} {'kind':11} {'tile':13} {'tiles':>6} {'predicted':>11} "
            f"{'measured':>11} {'error':>8}  predicted / measured class"
        )
        lines = [head, "-" * len(head)]
        for k in self.kernels:
            mark = "" if k.class_match else "  <- class differs"
            lines.append(
                f"{k.name[:44]:44} {k.kind:11} {k.tile:13} {k.tiles:6d} "
                f"{k.predicted_s * 1e3:9.4f}ms {k.measured_s * 1e3:9.4f}ms "
                f"{k.abs_pct_error:7.0f}%  {k.predicted_bottleneck} / {k.measured_bottleneck}"
                f"{mark}"
            )
        per_kind = ", ".join(f"{kind} {e:.0f}%" for kind, e in self.by_kind().items())
        lines.append(f"median abs error by kind: {per_kind}")
        lines.append(
            f"median abs error {self.median_abs_pct_error:.1f}% over {len(self.kernels)} "
            f"kernels ({self.backend}, {self.hardware}, BLAS threads {self.blas_threads}); "
            f"class mismatches: {len(self.class_mismatches)}"
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


def _issued_steps(km: KernelMapping, calls: int) -> int:
    """Tile steps an execution issued: GEMM K-step calls plus one store per output tile."""
    if km.kernel.gemm is not None and km.kernel.kind == "gemm":
        return calls + km.tiling.tiles
    return calls * max(1, km.tiling.passes)


def measured_class(kernel: Kernel, hw: Hardware, measured_s: float, steps: int) -> str:
    """The bottleneck class of a measurement (see the module docstring).

    Args:
        kernel: The kernel measured.
        hw: The calibrated host profile.
        measured_s: Its median measured time, seconds.
        steps: Tile steps the execution issued.

    Returns:
        ``overhead``, ``bandwidth`` or ``compute``.
    """
    fixed = hw.overheads.kernel_launch_s + steps * hw.overheads.tile_issue_s
    if fixed >= 0.5 * measured_s:
        return "overhead"
    work = measured_s - fixed
    slowest = min(hw.memory, key=lambda m: m.bandwidth_bytes_per_s)
    if kernel.bytes / slowest.bandwidth_bytes_per_s >= 0.5 * work:
        return "bandwidth"
    return "compute"


def validate(
    hw: Hardware | None = None,
    *,
    backend: Backend | str | None = None,
    quick: bool = False,
    repeats: int = 5,
    progress: bool = True,
    threads: int | None = DEFAULT_BLAS_THREADS,
) -> ValidationReport:
    """Predict and measure the suite on ``hw`` (default: this host, calibrated quickly).

    Args:
        hw: Hardware profile of this machine (a calibrated host profile).
        backend: Backend, backend name or None (automatic).
        quick: Six tiny kernels instead of the full suite (for tests).
        repeats: Timed runs per kernel (after one warm-up); the median is kept.
        progress: Show a progress bar when the suite takes over a second.
        threads: BLAS threads for calibration and measurement (None: as the library set them).

    Returns:
        The :class:`ValidationReport`.
    """
    with blas_threads(threads):
        hw = hw or host_profile()
        bk = resolve_backend(backend)
        checks: list[KernelCheck] = []
        cases = suite(quick)
        with progress_bar(len(cases), "validate", progress) as bar:
            for case, build, options in cases:
                graph = build()
                kernels = map_model(graph, hw, options).kernels
                for km in kernels:
                    name = case if len(kernels) == 1 else f"{case}: {km.kernel.name}"
                    checks.append(_check(name, graph, km, hw, bk, repeats))
                bar.update()
    return ValidationReport(
        hardware=hw.name,
        backend=bk.name,
        blas_threads=threads,
        tile_issue_s=hw.overheads.tile_issue_s,
        kernels=tuple(checks),
    )


def _check(name, graph, km: KernelMapping, hw: Hardware, bk: Backend, repeats: int) -> KernelCheck:
    k = km.kernel
    inputs = make_inputs(k, 0, bk, graph=graph)
    ran = execute(km, inputs, graph=graph, backend=bk)
    m = measure(k, km.tiling, backend=bk, graph=graph, inputs=inputs, repeats=repeats)
    meas_cls = measured_class(k, hw, m.median_s, _issued_steps(km, ran.tiles))
    pred_cls = km.cost.bottleneck
    return KernelCheck(
        name=name,
        kind=k.kind,
        tile=km.tiling.shape,
        tiles=ran.tiles,
        predicted_s=km.cost.total_s,
        measured_s=m.median_s,
        abs_pct_error=_pct(km.cost.total_s, m.median_s),
        predicted_bottleneck=pred_cls,
        measured_bottleneck=meas_cls,
        class_match=_family(pred_cls) == meas_cls,
    )
