"""Time a mapped kernel on a backend: warm-up, repeats, median and spread."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.execution.backend import Backend, resolve_backend, sync
from workbench.execution.errors import ExecutionError
from workbench.execution.run import execute, make_inputs
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["Measurement", "measure"]


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

    @classmethod
    def of(cls, samples: list[float] | tuple[float, ...]) -> Measurement:
        """Summarise raw samples (seconds)."""
        arr = np.asarray(samples, dtype=float)
        if arr.size == 0:
            raise ExecutionError("measure: no samples")
        p10, med, p90 = np.percentile(arr, (10, 50, 90))
        return cls(
            median_s=float(med),
            p10_s=float(p10),
            p90_s=float(p90),
            samples=tuple(float(s) for s in arr),
        )


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

    Returns:
        The :class:`Measurement` (seconds).
    """
    if repeats < 1 or warmup < 0:
        raise ExecutionError(f"measure: repeats {repeats} must be >= 1 and warmup {warmup} >= 0")
    bk = resolve_backend(backend)
    if inputs is None:
        inputs = make_inputs(kernel, seed, bk, graph=graph)
    for _ in range(warmup):
        execute((kernel, tiling), inputs, graph=graph, backend=bk)
    samples = []
    for _ in range(repeats):
        sync(bk)
        t0 = clock()
        execute((kernel, tiling), inputs, graph=graph, backend=bk)
        sync(bk)
        samples.append(clock() - t0)
    return Measurement.of(samples)
