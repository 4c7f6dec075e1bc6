"""Runtime autotuning: the cost model's top-k tilings, timed on the backend, fastest kept.

Triton's autotuner is the model: rank candidates with the cost model, benchmark only the top-k,
cache the winner under a key that includes the library versions. The Spearman rank correlation
of predicted against measured order says how far the cost model can be trusted on this machine.

Timings are noise unless shown otherwise: each candidate runs with the BLAS pools pinned (one
thread), repeated, timed in this thread's CPU time on NumPy with one thread (the time other
processes hold the core is not the candidate's), and summarised as a median with its p10-p90
interval. Candidates whose intervals overlap are not ranked against each other: they share a
measured rank, and when the fastest group holds several, the cost model's pick among them is
kept (the measurement could not overrule it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.cost.search import rank
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.errors import ExecutionError
from workbench.execution.measure import Measurement, measure
from workbench.execution.run import make_inputs
from workbench.execution.threads import DEFAULT_BLAS_THREADS
from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.options import MapOptions
from workbench.scheduling.tiling import Tiling
from workbench.tuning._rank import resolved_ranks, spearman
from workbench.tuning.cache import PlanCache, plan_key

__all__ = ["Candidate", "TuneResult", "autotune", "host_clock", "progress_bar", "tune_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One timed candidate.

    Attributes:
        tiling: The tiling.
        predicted_s: Cost-model time, seconds.
        measured: Timed runs on the backend.
        predicted_rank: 1 = the cost model's best.
        measured_rank: 1 = fastest measured; candidates whose p10-p90 intervals overlap share
            the mean of their ranks (the measurement cannot order them).
    """

    tiling: Tiling
    predicted_s: float
    measured: Measurement
    predicted_rank: int
    measured_rank: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneResult:
    """The outcome of autotuning one kernel.

    Attributes:
        kernel: Kernel name.
        backend: Backend name.
        candidates: Timed candidates in predicted order (empty on a cache hit).
        best_tiling: The fastest tiling measured; when several tie within their spread, the
            cost model's pick among them (or the cached one).
        best_s: Its median time, seconds.
        spearman: Rank correlation of predicted vs measured time, or None.
        spearman_note: Why ``spearman`` is None (empty otherwise).
        from_cache: The result came from the plan cache, nothing was timed.
    """

    kernel: str
    backend: str
    candidates: tuple[Candidate, ...]
    best_tiling: Tiling
    best_s: float
    spearman: float | None
    spearman_note: str = ""
    from_cache: bool = False

    @property
    def tied_best(self) -> tuple[Candidate, ...]:
        """The candidates the measurement cannot tell from the fastest (its best rank group)."""
        if not self.candidates:
            return ()
        top = min(c.measured_rank for c in self.candidates)
        return tuple(c for c in self.candidates if c.measured_rank == top)

    @property
    def resolved(self) -> bool:
        """True when one candidate is measurably the fastest (no tie within the spread)."""
        return len(self.tied_best) == 1

    @property
    def gain_over_model(self) -> float:
        """Measured time of the cost model's pick / that of the winner (1 when they tie)."""
        if not self.candidates or self.candidates[0] in self.tied_best:
            return 1.0
        return self.candidates[0].measured.median_s / self.best_s if self.best_s else 1.0


def _distinct(ranked: list[tuple[Tiling, Any]], k: int) -> list[tuple[Tiling, Any]]:
    """The first ``k`` candidates that execute differently (stages and dataflow do not here)."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for tiling, cost in ranked:
        key = (tiling.tile_m, tiling.tile_n, tiling.tile_k, tiling.split_k, tiling.raster)
        if key not in seen:
            seen.add(key)
            out.append((tiling, cost))
    return out[:k]


def progress_bar(total: int, desc: str, enabled: bool, unit: str = "cand") -> Any:
    """A tqdm.auto bar that appears only after a second (``TQDM_DISABLE=1`` hides it)."""
    from tqdm.auto import tqdm

    # NOTE: pass `disable` only when asked to, so TQDM_DISABLE in the environment still works.
    kwargs: dict[str, Any] = {} if enabled else {"disable": True}
    return tqdm(total=total, desc=desc, unit=unit, delay=1.0, leave=False, **kwargs)


def host_clock(backend: str, threads: int | None) -> Callable[[], float]:
    """The timer for a measurement: this thread's CPU time on NumPy with one BLAS thread.

    CPU time leaves out the time other processes hold the core (exact for single-threaded work
    only); with more threads or on a GPU it is wall time.
    """
    return time.thread_time if backend == "numpy" and threads == 1 else time.perf_counter


def autotune(
    kernel: Kernel,
    hw: Hardware,
    options: MapOptions | None = None,
    *,
    k: int = 5,
    backend: Backend | str | None = None,
    warmup: int = 1,
    repeats: int = 7,
    cache: PlanCache | None = None,
    progress: bool = True,
    graph: Graph | None = None,
    seed: int = 0,
) -> TuneResult:
    """Time the cost model's top-``k`` tilings of ``kernel`` and keep the fastest.

    Args:
        kernel: The kernel (from :func:`workbench.lowering.lower` or a mapping).
        hw: The hardware profile the cost model ranks on.
        options: Mapping options (None: defaults).
        k: Candidates to time.
        backend: Backend, backend name or None (automatic).
        warmup: Untimed runs per candidate.
        repeats: Timed runs per candidate (one BLAS thread; median and p10-p90 kept).
        cache: A plan cache to read first and write the winner to, or None. An entry that is
            not a fitting point of the kernel's mapspace is ignored with a warning and the
            kernel is tuned again.
        progress: Show a progress bar when the search takes over a second.
        graph: The kernel's graph (fused epilogues and conv shapes run as mapped).
        seed: Seed of the random inputs.

    Returns:
        The :class:`TuneResult`; ``spearman`` is None with a reason for fewer than 3 candidates.
    """
    if k < 1:
        raise ExecutionError(f"autotune: k must be >= 1, got {k}")
    bk = resolve_backend(backend)
    key = plan_key(kernel, hw, bk)
    hit = cache.lookup(key, kernel, hw) if cache is not None else None
    if hit is not None:
        tiling, seconds = hit
        return TuneResult(
            kernel=kernel.name,
            backend=bk.name,
            candidates=(),
            best_tiling=tiling,
            best_s=seconds,
            spearman=None,
            spearman_note="plan cache hit: nothing timed",
            from_cache=True,
        )
    ranked = _distinct(rank(kernel, hw, options or MapOptions(), k=8 * k), k)
    inputs = make_inputs(kernel, seed, bk, graph=graph)
    times = []
    with progress_bar(len(ranked), f"autotune {kernel.name}", progress) as bar:
        for tiling, _ in ranked:
            times.append(
                measure(
                    kernel,
                    tiling,
                    backend=bk,
                    graph=graph,
                    inputs=inputs,
                    warmup=warmup,
                    repeats=repeats,
                    clock=host_clock(bk.name, DEFAULT_BLAS_THREADS),
                )
            )
            bar.update()
    result = tune_result(kernel.name, bk.name, ranked, times)
    if cache is not None:
        cache.put(key, result.best_tiling, result.best_s, label=kernel.name)
    return result


def tune_result(
    kernel: str,
    backend: str,
    ranked: Sequence[tuple[Tiling, Any]],
    times: Sequence[Measurement],
) -> TuneResult:
    """Assemble a :class:`TuneResult` from cost-ranked candidates and their measurements.

    Args:
        kernel: The kernel's name.
        backend: The backend the candidates were timed on.
        ranked: ``(tiling, cost)`` in the cost model's order (fastest predicted first).
        times: One measurement per candidate, in the same order.

    Returns:
        Candidates with predicted and measured ranks (ties within the spread share a rank),
        the measured best, and Spearman's rho over those ranks.
    """
    predicted = [c.total_s for _, c in ranked]
    m_ranks = resolved_ranks(
        [m.median_s for m in times], [m.p10_s for m in times], [m.p90_s for m in times]
    )
    rho, note = spearman(predicted, list(m_ranks))
    cands = tuple(
        Candidate(tiling=t, predicted_s=p, measured=m, predicted_rank=i + 1, measured_rank=float(r))
        for i, ((t, _), p, m, r) in enumerate(zip(ranked, predicted, times, m_ranks, strict=True))
    )
    # NOTE: among candidates tied with the fastest, the cost model's order decides (cands are
    # in predicted order), so a tie never overrules the model on noise.
    best = min(cands, key=lambda c: c.measured_rank)
    return TuneResult(
        kernel=kernel,
        backend=backend,
        candidates=cands,
        best_tiling=best.tiling,
        best_s=best.measured.median_s,
        spearman=rho,
        spearman_note=note,
    )
