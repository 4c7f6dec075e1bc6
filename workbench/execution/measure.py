"""Time a mapped kernel on a backend: warm-up, repeats, median and spread.

On a shared CPU one timed run says little: a descheduled BLAS thread turns a tile's 40 µs into
20 ms (:mod:`workbench.execution.threads`). So every measurement pins the BLAS thread pools (one
thread by default, as ``workbench calibrate`` and ``validate`` do), repeats, and reports its
p10-p90 interval; two measurements are ranked only when their intervals do not overlap
(:func:`distinguishable`). Anything closer is within the noise and is reported as a tie.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.execution.backend import Backend, resolve_backend, sync
from workbench.execution.errors import ExecutionError
from workbench.execution.run import execute, make_inputs
from workbench.execution.threads import DEFAULT_BLAS_THREADS, blas_threads
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["Measurement", "distinguishable", "measure", "timed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """Wall times of repeated executions of one kernel (seconds).

    Attributes:
        median_s: Median time, seconds.
        p10_s: 10th percentile, seconds.
        p90_s: 90th percentile, seconds.
        samples: Every timed run, seconds, in order.
    """

    median_s: float
    p10_s: float
    p90_s: float
    samples: tuple[float, ...]

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: the relative spread of the samples."""
        return (self.p90_s - self.p10_s) / self.median_s if self.median_s else 0.0

    def interval_text(self, scale: float = 1e3, unit: str = "ms") -> str:
        """``median X ms (p10-p90 a-b ms, n runs)``, in ``unit`` (seconds x ``scale``)."""
        return (
            f"median {self.median_s * scale:.3g} {unit} (p10-p90 {self.p10_s * scale:.3g}-"
            f"{self.p90_s * scale:.3g} {unit}, {len(self.samples)} runs)"
        )

    @classmethod
    def of(cls, samples: list[float] | tuple[float, ...]) -> Measurement:
        """Summarise raw samples (seconds)."""
        arr = np.asarray(samples, dtype=float)
        if arr.size == 0:
            raise ExecutionError("measure: no samples")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ExecutionError("measure: a sample is negative or not finite")
        p10, med, p90 = np.percentile(arr, (10, 50, 90))
        return cls(
            median_s=float(med),
            p10_s=float(p10),
            p90_s=float(p90),
            samples=tuple(float(s) for s in arr),
        )


def distinguishable(a: Measurement, b: Measurement) -> bool:
    """Whether two measurements differ by more than their spread (p10-p90 intervals apart).

    >>> fast = Measurement.of([1.0, 1.1, 1.2])
    >>> distinguishable(fast, Measurement.of([2.0, 2.1, 2.2]))
    True
    >>> distinguishable(fast, Measurement.of([1.15, 1.3, 1.4]))
    False
    """
    return a.p90_s < b.p10_s or b.p90_s < a.p10_s


def timed(
    run: Callable[[], object],
    *,
    warmup: int = 1,
    repeats: int = 5,
    threads: int | None = DEFAULT_BLAS_THREADS,
    clock: Callable[[], float] = time.perf_counter,
    settle: Callable[[], object] = lambda: None,
) -> Measurement:
    """Run ``run`` ``warmup + repeats`` times with the BLAS pools pinned; time the repeats.

    Args:
        run: The work to time (no arguments).
        warmup: Untimed runs first.
        repeats: Timed runs (at least 1).
        threads: BLAS threads while running (None: leave the library's setting).
        clock: The timer, seconds.
        settle: Called before and after each timed run (a device synchronisation).

    Returns:
        The :class:`Measurement` (seconds).
    """
    if repeats < 1 or warmup < 0:
        raise ExecutionError(f"measure: repeats {repeats} must be >= 1 and warmup {warmup} >= 0")
    samples = []
    with blas_threads(threads):
        for _ in range(warmup):
            run()
        for _ in range(repeats):
            settle()
            t0 = clock()
            run()
            settle()
            samples.append(clock() - t0)
    return Measurement.of(samples)


def measure(
    kernel: Kernel,
    tiling: Tiling,
    *,
    backend: Backend | str | None = None,
    graph: Graph | None = None,
    inputs: dict[str, Any] | None = None,
    warmup: int = 1,
    repeats: int = 5,
    seed: int = 0,
    clock: Callable[[], float] = time.perf_counter,
    threads: int | None = DEFAULT_BLAS_THREADS,
) -> Measurement:
    """Execute ``kernel`` with ``tiling`` ``warmup + repeats`` times and time the repeats.

    Inputs are made once (not timed); each run is synchronised on the device before and after.

    Args:
        kernel: The kernel.
        tiling: The tiling to run.
        backend: Backend, backend name or None (automatic).
        graph: The graph the kernel came from (fused epilogues, conv shapes).
        inputs: Arrays as :func:`~workbench.execution.run.make_inputs` names them, or None.
        warmup: Untimed runs first.
        repeats: Timed runs (at least 1).
        seed: Seed for random inputs.
        clock: The timer, seconds (default wall time; ``time.thread_time`` leaves out the time
            other processes hold the core, exact for single-threaded NumPy only).
        threads: BLAS threads while timing (default one; None leaves the library's setting).

    Returns:
        The :class:`Measurement` (seconds).
    """
    bk = resolve_backend(backend)
    if inputs is None:
        inputs = make_inputs(kernel, seed, bk, graph=graph)
    return timed(
        lambda: execute((kernel, tiling), inputs, graph=graph, backend=bk),
        warmup=warmup,
        repeats=repeats,
        threads=threads,
        clock=clock,
        settle=lambda: sync(bk),
    )
