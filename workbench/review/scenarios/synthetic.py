"""Synthetic profiler traces from a mapping, for lessons and tests (clearly not measurements).

:func:`synthetic_kernels` lays a mapping's kernels out as Kineto-style GPU activities: each
iteration runs every sheet kernel in order for its predicted time, scaled by a seeded log-normal
jitter (default 3 %), with a fixed launch gap between kernels. Kernel names are library-style
names per kind (``sm90_xmma_gemm_bf16bf16_bf16f32``, ``flash_fwd_kernel`` ...), repeated as in a
real trace, so the trace reader classifies them by its name rules and the matcher
(:func:`workbench.review.join.matching.match_kernels`) pairs them with sheet rows by order and kind.
:func:`write_synthetic_trace` writes them with :func:`workbench.evidence.write_kineto_trace`
(or the Nsight Systems SQLite writer). Everything here is generated: a lesson that uses it says so.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.evidence import MeasuredKernel, write_kineto_trace, write_nsys_sqlite
from workbench.mapper import ModelMapping

__all__ = ["TracePair", "synthetic_kernels", "synthetic_scenario_traces", "write_synthetic_trace"]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class TracePair:
    """Synthetic traces of a scenario's baseline and candidate, with the mappings behind them.

    Attributes:
        scenario: The scenario name.
        changed: The tag group the scenario changes.
        baseline_trace, candidate_trace: The trace files written.
        baseline_mapping, candidate_mapping: The mappings the traces were generated from (and
            that the measured kernels are matched against).
    """

    scenario: str
    changed: str
    baseline_trace: Path
    candidate_trace: Path
    baseline_mapping: ModelMapping
    candidate_mapping: ModelMapping


def synthetic_scenario_traces(
    scenario: str, folder: str | os.PathLike[str] | None = None, *, fmt: str = "kineto"
) -> TracePair:
    """Write synthetic profiler traces of a practice scenario's two runs (seeds 1 and 2).

    Args:
        scenario: A name of :data:`workbench.review.SCENARIOS`.
        folder: Where to write ``baseline`` and ``candidate`` traces (default: a new temporary
            folder).
        fmt: ``kineto`` (``.json.gz``) or ``nsys`` (``.sqlite``).

    Returns:
        The :class:`TracePair`.
    """
    from workbench.hw.loader import load_hardware
    from workbench.review.scenarios.build import get_scenario, scenario_mappings

    s = get_scenario(scenario)
    out = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="wb-traces-"))
    device = load_hardware(s.hardware).name
    maps = scenario_mappings(scenario)
    suffix = ".sqlite" if fmt == "nsys" else ".json.gz"
    paths = [
        write_synthetic_trace(m, out / f"{side}{suffix}", fmt=fmt, device=device, seed=seed)
        for m, side, seed in zip(maps, ("baseline", "candidate"), (1, 2), strict=True)
    ]
    return TracePair(
        scenario=s.name,
        changed=s.changed,
        baseline_trace=paths[0],
        candidate_trace=paths[1],
        baseline_mapping=maps[0],
        candidate_mapping=maps[1],
    )
