"""Measure a capped sample of a mapping's kernels on this host (``workbench run --execute``).

Full-size kernels of a large model would take minutes on a CPU, so the sample is bounded: the
GEMM and conv-as-GEMM kernels of the first layer that has any, each scaled down to at most
``m <= 256, n <= 1024, k <= 1024`` with its mapped tile (clipped to the scaled shape) and without
its fused epilogue, timed by :func:`workbench.execution.measure.measure` (median of the repeats
after a warm-up). The record says exactly this in its ``measurement.method``; a measured time is
the scaled kernel's, not the full kernel's.
"""

from __future__ import annotations

import dataclasses
import time

from workbench.execution.backend import get_backend
from workbench.execution.errors import ExecutionError
from workbench.execution.measure import measure
from workbench.mapper import KernelMapping, ModelMapping
from workbench.review.records.store import Measurement

__all__ = ["CAP_K", "CAP_M", "CAP_N", "measure_sample"]

CAP_M, CAP_N, CAP_K = 256, 1024, 1024
_BUDGET_S = 20.0
_REPEATS = 3


def _layer(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def _scaled(km: KernelMapping) -> KernelMapping:
    k, t = km.kernel, km.tiling
    g = k.gemm
    assert g is not None
    m, n, kk = min(g.m, CAP_M), min(g.n, CAP_N), min(g.k, CAP_K)
    gemm = dataclasses.replace(g, batch=1, m=m, n=n, k=kk, epilogue_bytes=0)
    kernel = dataclasses.replace(k, kind="gemm", gemm=gemm, ops=(), fusion=(), layout="row-major")
    tiling = dataclasses.replace(
        t, tile_m=min(t.tile_m, m), tile_n=min(t.tile_n, n), tile_k=min(t.tile_k, kk), split_k=1
    )
    return KernelMapping(kernel=kernel, tiling=tiling, cost=km.cost)


def measure_sample(
    mapping: ModelMapping, backend: str | None = None
) -> tuple[Measurement, dict[str, float], tuple[tuple[str, str], ...]]:
    """Measure the capped sample (see the module docstring).

    Args:
        mapping: The mapping whose kernels to sample.
        backend: ``"numpy"``, ``"cupy"`` or None (automatic).

    Returns:
        ``(measurement, measured seconds per kernel name, backend versions)``.
    """
    bk = get_backend(backend)
    gemms = [
        k
        for k in mapping.kernels
        if k.kernel.gemm is not None
        and k.kernel.kind in ("gemm", "conv")
        and k.kernel.gemm.batch == 1
    ]
    first = _layer(gemms[0].kernel.name) if gemms else ""
    chosen = [k for k in gemms if _layer(k.kernel.name) == first]
    measured: dict[str, float] = {}
    shapes = []
    start = time.perf_counter()
    for km in chosen:
        if time.perf_counter() - start > _BUDGET_S:
            break
        s = _scaled(km)
        g = s.kernel.gemm
        assert g is not None
        try:
            result = measure(s.kernel, s.tiling, backend=bk, warmup=1, repeats=_REPEATS)
        except ExecutionError:
            continue
        measured[km.kernel.name] = result.median_s
        shapes.append((km.kernel.name, f"{g.m}x{g.n}x{g.k} tile {s.tiling.shape}"))
    wall = time.perf_counter() - start
    method = (
        f"GEMM/conv kernels of {first or 'no layer'} ({len(measured)} of {len(chosen)}), "
        f"scaled to m<={CAP_M}, n<={CAP_N}, k<={CAP_K} with the mapped tile clipped to the shape, "
        f"epilogue not fused; median of {_REPEATS} runs after 1 warm-up on {bk.name} "
        f"({bk.device}); times are of the scaled kernels"
    )
    m = Measurement(
        method=method,
        backend=bk.name,
        kernels=tuple(measured),
        shapes=tuple(shapes),
        repeats=_REPEATS,
        wall_s=wall,
    )
    return m, measured, bk.versions
