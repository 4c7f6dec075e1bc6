"""Lesson 09, section 3: the autotuner on this host, like compared with like.

A ranking is checked against measurements taken on the machine it was made for. On a host
without a GPU that machine is this CPU running NumPy, so the candidates are ranked by the
*calibrated host profile* (``workbench calibrate --quick``, one BLAS thread: the same setting as
the measurements) and timed on NumPy with one BLAS thread, repeated, each summarised as a median
with its p10-p90 interval (:mod:`workbench.execution.measure`). Two candidates whose intervals
overlap are not ranked against each other (:func:`workbench.tuning._rank.resolved_ranks`).

The H100 profile's predictions for the same tiles are shown beside them, for the pitfall: an H100
cost model's ranking says what an H100 does, and NumPy on a CPU cannot confirm or refute it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from workbench.cost.model import Cost
from workbench.cost.search import rank
from workbench.execution.backend import resolve_backend
from workbench.execution.measure import measure
from workbench.execution.run import make_inputs
from workbench.execution.threads import DEFAULT_BLAS_THREADS, blas_threads
from workbench.exercises._shared import hardware
from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions, TileOverride
from workbench.scheduling.tiling import Tiling
from workbench.tuning import TuneResult
from workbench.tuning.autotune import host_clock, tune_result
from workbench.tuning.validate import host_profile

__all__ = ["HostTune", "candidates_frame", "gemm_products", "host", "host_autotune", "host_kernel"]

#: Predicted-time steps (x the best) at which the runners-up after the model's top two are taken.
SPREAD_STEPS = (1.5, 3.0)


def host() -> Hardware:
    """This machine, calibrated once per process (quick, engine probe, one BLAS thread)."""
    with blas_threads(DEFAULT_BLAS_THREADS):
        return host_profile(1)


def host_kernel(model: str, *, seq: int, kernel: str) -> tuple[Kernel, Graph]:
    """``kernel`` of ``model``'s prefill at ``seq`` tokens in fp32 (NumPy's native format)."""
    graph = build_graph(model, phase="prefill", seq=seq, dtype="fp32")
    return map_model(graph, host()).kernel(kernel).kernel, graph


def gemm_products(kernel: Kernel, tiling: Tiling) -> int:
    """Small matrix products the host engine issues: ``ceil(M/tm) ceil(N/tn) ceil(K/tk)``."""
    g = kernel.gemm
    if g is None:
        raise ValueError(f"{kernel.name} is not a GEMM")
    return (
        math.ceil(g.m / tiling.tile_m)
        * math.ceil(g.n / tiling.tile_n)
        * math.ceil(g.k / tiling.tile_k)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class HostTune:
    """A measured autotune on this host, with the H100 profile's view of the same tiles.

    Attributes:
        result: Candidates ranked by the host profile, timed on NumPy (ties within the spread).
        kernel: The kernel timed.
        gpu: The GPU profile the same tiles are predicted on.
        gpu_s: Each candidate's predicted seconds on ``gpu``, tile forced, in candidate order.
    """

    result: TuneResult
    kernel: Kernel
    gpu: str
    gpu_s: tuple[float, ...]


def _candidates(kernel: Kernel, hw: Hardware, k: int) -> list[tuple[Tiling, Cost]]:
    """The model's top two distinct fitting shapes, then ones predicted x1.5 and x3 slower.

    Where no shape is predicted that much slower, the slowest one stands in.
    """
    seen: set[tuple[int, int, int]] = set()
    ranked = []
    for tiling, cost in rank(kernel, hw, MapOptions(), k=4096):
        shape = (tiling.tile_m, tiling.tile_n, tiling.tile_k)
        if shape not in seen and tiling.fits:
            seen.add(shape)
            ranked.append((tiling, cost))
    chosen = ranked[:2]
    best = ranked[0][1].total_s
    for step in SPREAD_STEPS[: max(0, k - 2)]:
        slower = [r for r in ranked if r[1].total_s >= step * best]
        pick = slower[0] if slower else ranked[-1]  # NOTE: none that slow: the slowest
        if pick not in chosen:
            chosen.append(pick)
    return chosen[:k]


def _gpu_seconds(
    model: str, kernel: str, gpu: str, seq: int, tilings: list[Tiling]
) -> tuple[float, ...]:
    km = map_model(build_graph(model, phase="prefill", seq=seq), hardware(gpu)).kernel(kernel)
    out = []
    for t in tilings:
        forced = TileOverride(pattern=kernel, m=t.tile_m, n=t.tile_n, k=t.tile_k)
        _, cost = rank(km.kernel, hardware(gpu), MapOptions(tiles=(forced,)), k=1)[0]
        out.append(cost.total_s)
    return tuple(out)


def host_autotune(
    model: str = "gpt2",
    *,
    seq: int = 64,
    kernel: str = "layers.0.mlp.up_proj",
    k: int = 4,
    repeats: int = 7,
    gpu: str = "h100-sxm",
) -> HostTune:
    """Rank ``kernel``'s tiles on the calibrated host profile and time them on NumPy.

    Candidates: the host model's two best distinct tile shapes (often predicted within a percent
    of each other: a tie the measurement should refuse to break) and the first shapes it predicts
    x1.5 and x3 slower. Each runs once untimed, then ``repeats`` times with one BLAS thread, timed
    in this thread's CPU time.

    Args:
        model: Preset name.
        seq: Tokens (the GEMM's M).
        kernel: Kernel name.
        k: Candidates (2 to 4).
        repeats: Timed runs per candidate.
        gpu: The GPU profile the same tiles are also predicted on (for comparison only).

    Returns:
        The :class:`HostTune`.
    """
    hw = host()
    kern, graph = host_kernel(model, seq=seq, kernel=kernel)
    ranked = _candidates(kern, hw, k)
    bk = resolve_backend("numpy")
    inputs = make_inputs(kern, 0, bk, graph=graph)
    clock = host_clock(bk.name, DEFAULT_BLAS_THREADS)
    times = [
        measure(kern, t, backend=bk, graph=graph, inputs=inputs, repeats=repeats, clock=clock)
        for t, _ in ranked
    ]
    result = tune_result(kern.name, bk.name, ranked, times)
    tilings = [c.tiling for c in result.candidates]
    return HostTune(
        result=result,
        kernel=kern,
        gpu=gpu,
        gpu_s=_gpu_seconds(model, kernel, gpu, seq, tilings),
    )


def candidates_frame(tune: HostTune) -> pd.DataFrame:
    """One row per candidate: tile, host prediction, measured interval, ranks, GPU prediction."""
    rows = []
    for c, g in zip(tune.result.candidates, tune.gpu_s, strict=True):
        m = c.measured
        rows.append(
            {
                "tile": c.tiling.shape,
                "host_predicted_ms": round(c.predicted_s * 1e3, 3),
                "measured_ms": round(m.median_s * 1e3, 3),
                "p10_ms": round(m.p10_s * 1e3, 3),
                "p90_ms": round(m.p90_s * 1e3, 3),
                "predicted_rank": c.predicted_rank,
                "measured_rank": c.measured_rank,
                f"{tune.gpu}_predicted_us": round(g * 1e6, 2),
            }
        )
    return pd.DataFrame(rows)
