"""Probe the execution engine's own costs, for ``workbench calibrate``.

The cost model of a software-scheduled host needs three figures that only the engine can give:

* ``tile_issue_s``: the time to issue one tile step from Python (one K-step: two slices, a
  matmul call, the accumulate; or one output tile's epilogue and store). Timed as the adapter's
  tiled GEMM at 64^3 with 8x8x8 tiles (the arithmetic is negligible) divided by its
  ``tiles x (K-steps + 1)`` steps.
* ``kernel_launch_s``: the fixed cost of one :func:`~workbench.execution.execute` call (input
  preparation, fused-step lookup, output rounding), timed on a one-tile 8x8x8 GEMM kernel, less
  its two issued steps.
* ``vector_flops_per_s``: the effective rate of the engine's row and elementwise kernels under
  the library's FLOP convention (``Kernel.flops`` per second), the median over five calibration
  kernels (layernorm, rmsnorm, softmax, a GELU and an add-ReLU chain) run as one tile each after
  their fixed costs are taken off. NumPy runs one pass per ufunc, so the rate folds the passes
  per FLOP of these kernels into one figure; it is not an ALU peak.

These are calibration micro-benchmarks: their shapes are not the validation suite's.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.execution.backend import Backend, resolve_backend, sync
from workbench.execution.run import execute, make_inputs, tiled_gemm
from workbench.hw.schema import Hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.options import MapOptions
from workbench.scheduling.tiling import Tiling

__all__ = ["VECTOR_PROBES", "probe_engine"]

_F = "fp32"


def _best_time(fn: Callable[[], object], bk: Backend, repeats: int) -> float:
    """Best wall time of ``fn`` over ``repeats`` runs after one warm-up, seconds.

    The best, not the median: other processes on the machine only ever add time.
    """
    fn()
    times = []
    for _ in range(repeats):
        sync(bk)
        t0 = time.perf_counter()
        fn()
        sync(bk)
        times.append(time.perf_counter() - t0)
    return min(times)


def _issue_s(bk: Backend, repeats: int) -> float:
    a = bk.xp.asarray(np.random.default_rng(0).standard_normal((64, 64), dtype=np.float32))
    tiny = Tiling(tile_m=8, tile_n=8, tile_k=8)
    t = _best_time(lambda: tiled_gemm(a, a, tiny, backend=bk), bk, repeats)
    return t / (64 * (8 + 1))


def _one_tile(graph: Graph, hw: Hardware) -> list[tuple[Any, Tiling]]:
    """Each kernel of ``graph`` with a tiling that covers it in one tile."""
    out = []
    for km in map_model(graph, hw, MapOptions(dtype=_F)).kernels:
        k = km.kernel
        if k.gemm is not None:
            g = k.gemm
            tiling = Tiling(tile_m=g.m, tile_n=g.n, tile_k=g.k)
        else:
            rows = k.rows
            assert rows is not None
            tiling = Tiling(tile_m=rows.rows, tile_n=rows.cols, tile_k=1)
        out.append((k, tiling))
    return out


def _launch_s(hw: Hardware, bk: Backend, issue: float, repeats: int) -> float:
    graph = Graph(
        name="probe",
        ops=(
            O.Linear(
                name="fc", inputs=("x",), tokens=(8,), in_features=8, out_features=8, dtype=_F
            ),
        ),
    )
    ((kernel, tiling),) = _one_tile(graph, hw)
    inputs = make_inputs(kernel, 0, bk, graph=graph)
    t = _best_time(lambda: execute((kernel, tiling), inputs, graph=graph, backend=bk), bk, repeats)
    return max(t - 2 * issue, 0.1 * t)


def _row(kind: str, rows: int, cols: int) -> Graph:
    cls = {"layernorm": O.LayerNorm, "rmsnorm": O.RMSNorm, "softmax": O.Softmax}[kind]
    return Graph(name=kind, ops=(cls(name=kind, inputs=("x",), shape=(rows, cols), dtype=_F),))


def _chain(rows: int, cols: int, kinds: tuple[str, ...]) -> Graph:
    ops: list[O.Op] = []
    prev = "x"
    for i, kind in enumerate(kinds):
        inputs = (prev, "y") if kind in ("add", "mul") else (prev,)
        ops.append(
            O.Elementwise(name=f"e{i}", inputs=inputs, op=kind, shape=(rows, cols), dtype=_F)
        )
        prev = f"e{i}"
    return Graph(name="chain", ops=tuple(ops))


#: The calibration kernels of the vector rate: (name, graph builder). Not the suite's shapes.
VECTOR_PROBES: tuple[tuple[str, Callable[[], Graph]], ...] = (
    ("layernorm 96x1536", lambda: _row("layernorm", 96, 1536)),
    ("rmsnorm 192x640", lambda: _row("rmsnorm", 192, 640)),
    ("softmax 160x512", lambda: _row("softmax", 160, 512)),
    ("gelu 320x320", lambda: _chain(320, 320, ("gelu",))),
    ("add+relu 224x448", lambda: _chain(224, 448, ("add", "relu"))),
)


def _vector_rates(
    hw: Hardware, bk: Backend, launch: float, issue: float, repeats: int
) -> dict[str, float]:
    rates = {}
    for name, build in VECTOR_PROBES:
        graph = build()
        for kernel, tiling in _one_tile(graph, hw):
            inputs = make_inputs(kernel, 0, bk, graph=graph)
            run = functools.partial(execute, (kernel, tiling), inputs, graph=graph, backend=bk)
            t = _best_time(run, bk, repeats)
            rates[name] = kernel.flops / max(t - launch - issue, 0.1 * t)
    return rates


def probe_engine(
    hw: Hardware, quick: bool = False, *, backend: Backend | str | None = None
) -> dict[str, Any]:
    """Measure the engine's tile issue, kernel launch and vector figures (module docstring).

    Args:
        hw: The host profile measured so far (used to lower the calibration kernels).
        quick: Fewer repeats.
        backend: Backend, backend name or None (automatic).

    Returns:
        ``tile_issue_s`` and ``kernel_launch_s`` (seconds), ``vector_flops_per_s`` (FLOP/s) and
        ``notes`` (one line per figure saying how it was measured), as
        :func:`workbench.hw.calibrate.calibrate` takes them.
    """
    bk = resolve_backend(backend)
    repeats = 5 if quick else 15
    issue = _issue_s(bk, repeats)
    launch = _launch_s(hw, bk, issue, repeats)
    rates = _vector_rates(hw, bk, launch, issue, repeats)
    vector = statistics.median(rates.values())
    per = ", ".join(f"{k} {v / 1e9:.3g}" for k, v in rates.items())
    return {
        "tile_issue_s": issue,
        "kernel_launch_s": launch,
        "vector_flops_per_s": vector,
        "notes": (
            f"tile issue {issue * 1e6:.3g} us: the engine's tiled GEMM at 64^3 with 8x8x8 "
            f"tiles ({bk.name}), best of {repeats} / (64 tiles x (8 K-steps + 1 store))",
            f"kernel launch {launch * 1e6:.3g} us: execute() of a one-tile 8x8x8 GEMM kernel "
            "less two issued steps",
            f"vector rate {vector / 1e9:.3g} GFLOP/s: median effective rate (Kernel.flops / "
            f"time less launch and issue) of the engine's row kernels, one tile each ({per})",
        ),
    }
