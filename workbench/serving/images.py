"""Discrete-event simulation of a non-LLM serving replica (one request = one image).

Dynamic batching as in Triton Inference Server's dynamic batcher: when the replica is free, the
next batch starts once ``max_batch`` requests wait, or ``max_wait_s`` after the oldest waiting
request arrived, whichever is first, and takes every waiting request up to ``max_batch``. A batch
of ``b`` images takes ``batch_time(b)`` seconds (with the runtime-variance noise on top).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.hw.schema import RuntimeVariance
from workbench.serving._common import check_positive, form_batch
from workbench.serving._errors import ServingError
from workbench.serving._noise import StepNoise, coerce_variance
from workbench.serving.result import SimResult, _Run, summarise
from workbench.serving.workload import Workload

__all__ = ["simulate_batches"]


def simulate_batches(
    workload: Workload | np.ndarray,
    batch_time: Callable[[int], float],
    *,
    max_batch: int = 32,
    max_wait_s: float = 0.005,
    variance: RuntimeVariance | None = None,
    seed: int = 0,
) -> SimResult:
    """Simulate one replica serving single-image requests with dynamic batching.

    Args:
        workload: The requests (only arrival times are used), or an array of arrival times, s.
        batch_time: ``batch -> seconds`` for one batch (e.g. from the mapper).
        max_batch: Largest batch, images.
        max_wait_s: Longest the oldest waiting request waits for the batch to fill, seconds.
        variance: Launch jitter and slow steps (the hardware profile's ``runtime_variance``).
        seed: Seed of the variance draws.

    Returns:
        A result whose ``achieved_rate_per_s`` is images/s and whose ``e2e`` is the latency;
        ``ttft`` and ``tpot`` are None.

    Example:
        >>> from workbench.serving import poisson_arrivals
        >>> r = simulate_batches(poisson_arrivals(100.0, 500, seed=0), lambda b: 2e-3 + 1e-4 * b)
        >>> r.n_requests, r.ttft is None
        (500, True)
    """
    if not isinstance(workload, Workload):
        arr = np.asarray(workload, dtype=np.float64)
        ones = np.ones(arr.size, dtype=np.int64)
        workload = Workload(arrival_s=arr, prompt_tokens=ones, output_tokens=ones, name="images")
    check_positive("max_batch", max_batch, integer=True)
    check_positive("max_wait_s", max_wait_s + 1e-300)
    noise = StepNoise(coerce_variance(variance), np.random.default_rng(seed))
    times = [0.0] + [float(batch_time(b)) for b in range(1, max_batch + 1)]
    if not all(x > 0 for x in times[1:]):
        raise ServingError("simulate_batches: batch_time must return positive seconds")
    run = _dynamic(workload.arrival_s, times, noise, max_batch, max_wait_s)
    return summarise(
        workload.name, "dynamic", workload.arrival_s, None, workload.offered_rate_per_s, run
    )


def _dynamic(
    arr: np.ndarray, times: list[float], noise: StepNoise, max_batch: int, max_wait_s: float
) -> _Run:
    n = arr.size
    finish = np.empty(n)
    t, i, step = 0.0, 0, 0
    area = area_wait = area_batch = busy = 0.0
    while i < n:
        launch, j = form_batch(arr, i, t, max_batch, max_wait_s)
        b = j - i
        end = launch + noise.one(times[b], step)
        step += 1
        finish[i:j] = end
        waited = float((launch - arr[i:j]).sum())
        area_wait += waited
        area += waited + b * (end - launch)
        area_batch += b * (end - launch)
        busy += end - launch
        t, i = end, j
    return _Run(
        first_s=finish,
        finish_s=finish,
        area_in_system=area,
        area_waiting=area_wait,
        area_batch=area_batch,
        busy_s=busy,
    )
