"""Synthetic profiler traces from a mapping, for lessons and tests (clearly not measurements).

:func:`synthetic_kernels` lays a mapping's kernels out as Kineto-style GPU activities: each
iteration runs every sheet kernel in order for its predicted time, scaled by a seeded log-normal
jitter (default 3 %), with a fixed launch gap between kernels. Kernel names are library-style
names per kind (``sm90_xmma_gemm_bf16bf16_bf16f32``, ``flash_fwd_kernel`` ...), repeated as in a
real trace, so the trace reader classifies them by its name rules and the matcher
(:func:`workbench.review.matching.match_kernels`) pairs them with sheet rows by order and kind.
:func:`write_synthetic_trace` writes them with :func:`workbench.evidence.write_kineto_trace`
(or the Nsight Systems SQLite writer). Everything here is generated: a lesson that uses it says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from workbench.evidence import MeasuredKernel, write_kineto_trace, write_nsys_sqlite
from workbench.mapper import ModelMapping

__all__ = ["synthetic_kernels", "write_synthetic_trace"]

#: Sheet kernel kind -> a library-style kernel name the trace reader classifies as that kind.
_NAMES = {
    "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
    "conv": "sm90_xmma_fprop_implicit_gemm_bf16",
    "attention": "flash_fwd_kernel",
    "row": "layer_norm_fwd_kernel",
    "elementwise": "vectorized_elementwise_kernel<4, GeluFunctor>",
    "gather": "indexSelectLargeIndex",
    "collective": "ncclKernel_AllReduce_RING_LL_Sum_bf16",
    "layout": "elementwise_copy_kernel",
}


def synthetic_kernels(
    mapping: ModelMapping,
    *,
    iterations: int = 8,
    jitter: float = 0.03,
    gap_s: float = 2e-6,
    seed: int = 0,
) -> list[MeasuredKernel]:
    """Every kernel of ``mapping`` for ``iterations`` iterations, with seeded jitter.

    Args:
        mapping: The mapping whose kernels to lay out.
        iterations: Repeats (``ProfilerStep#1..N``).
        jitter: Log-normal sigma of each kernel's duration around its predicted time.
        gap_s: Idle gap before each kernel, seconds.
        seed: Random seed (the same seed gives the same trace).

    Returns:
        The activities, in start order.
    """
    rng = np.random.default_rng(seed)
    out: list[MeasuredKernel] = []
    t = 0.0
    for it in range(1, iterations + 1):
        for km in mapping.kernels:
            k = km.kernel
            duration = km.cost.total_s * float(np.exp(rng.normal(0.0, jitter)))
            t += gap_s
            out.append(
                MeasuredKernel(
                    name=_NAMES.get(k.kind, "generic_kernel"),
                    category="other",
                    rule="synthetic",
                    start_s=t,
                    duration_s=duration,
                    device=0,
                    stream=7,
                    iteration=it,
                )
            )
            t += duration
        t += 50e-6  # host work between steps
    return out


def write_synthetic_trace(
    mapping: ModelMapping,
    path: str | os.PathLike[str],
    *,
    fmt: str = "kineto",
    device: str = "synthetic",
    **kwargs: float | int,
) -> Path:
    """Write a synthetic trace of ``mapping`` (``fmt`` ``kineto`` or ``nsys``); returns the path.

    ``kwargs`` go to :func:`synthetic_kernels`. The device name is recorded as ``device``.
    """
    kernels = synthetic_kernels(mapping, **kwargs)  # type: ignore[arg-type]
    if fmt == "nsys":
        return write_nsys_sqlite(path, kernels, gpus=[{"id": 0, "name": device, "smCount": 1}])
    props = [{"id": 0, "name": device}]
    return write_kineto_trace(path, kernels, device_properties=props, gz=str(path).endswith(".gz"))
