"""Execution engine benchmarks, side by side in one run (figures printed, never asserted).

1. The autotuned tiled GEMM at 2048^3 fp32 (the cost model's top-k tilings on this host's
   calibrated profile, timed, fastest kept, run through ``execute``) against numpy.matmul.
   Goal: >= 90% of numpy's speed. A few hand-picked tilings are shown beside it.
2. Fused (flash-style) against unfused attention at seq 8192, head dim 128, one head.
   Goals: peak memory (tracemalloc) >= 10x lower for fused, time <= 1.3x unfused.
3. The validation suite's median error (predicted vs measured on this host; the full table is
   ``benchmarks/bench_validate.py``).

Run: python benchmarks/bench_execution.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from workbench.execution import attention_fused, attention_unfused, gemm, get_backend


def _peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def _interleaved(fn_a: Callable[[], object], fn_b: Callable[[], object], repeats: int):
    """Median times of two functions run alternately (so machine load drifts hit both) (s)."""
    fn_a(), fn_b()
    ta, tb = [], []
    for _ in range(repeats):
        for fn, acc in ((fn_a, ta), (fn_b, tb)):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def bench_gemm(size: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    tilings = [(512, 512, size), (1024, 1024, size), (size, 1024, size), (256, 256, 512)]
    rows = []
    for tm, tn, tk in tilings:

        def tiled(tm: int = tm, tn: int = tn, tk: int = tk) -> object:
            return gemm(a, b, tile_m=tm, tile_n=tn, tile_k=tk, backend="numpy")

        t, t_np = _interleaved(tiled, lambda: np.matmul(a, b), repeats)
        rows.append(
            {"tile": [tm, tn, tk], "time_s": t, "numpy_s": t_np, "speed_vs_numpy": t_np / t}
        )
        print(f"  gemm {size}^3 tile {tm}x{tn}x{tk}: {t * 1e3:8.1f} ms, numpy.matmul "
              f"{t_np * 1e3:8.1f} ms -> {t_np / t:6.1%} of numpy's speed")  # fmt: skip
    best = max(rows, key=lambda r: r["speed_vs_numpy"])
    return {"size": size, "tilings": rows, "best": best}


def bench_autotuned_gemm(size: int, repeats: int) -> dict:
    """Autotune the mapped fp32 GEMM kernel on the host profile, then time it against numpy."""
    from workbench.execution.run import execute, make_inputs
    from workbench.ir import ops as O
    from workbench.ir.graph import Graph
    from workbench.mapper import map_model
    from workbench.options import MapOptions
    from workbench.tuning import autotune
    from workbench.tuning.validate import host_profile

    hw = host_profile(1)
    graph = Graph(
        name="gemm",
        ops=(
            O.Linear(
                name="fc",
                inputs=("x",),
                tokens=(size,),
                in_features=size,
                out_features=size,
                dtype="fp32",
            ),
        ),
    )
    opts = MapOptions(dtype="fp32")
    (km,) = map_model(graph, hw, opts).kernels
    tuned = autotune(km.kernel, hw, opts, k=4, backend="numpy", repeats=2, progress=False)
    tiling = tuned.best_tiling
    inputs = make_inputs(km.kernel, 0, "numpy", graph=graph)
    a, b = inputs["a"], inputs["b"]

    def run() -> object:
        return execute((km.kernel, tiling), inputs, graph=graph, backend="numpy")

    t, t_np = _interleaved(run, lambda: np.matmul(a, b), repeats)
    err = float(np.abs(np.asarray(run().output) - np.matmul(a, b)).max())
    print(f"  autotuned gemm {size}^3 tile {tiling.shape} split-K {tiling.split_k} "
          f"(cost model's pick {tuned.candidates[0].tiling.shape}, Spearman "
          f"{tuned.spearman if tuned.spearman is None else round(tuned.spearman, 2)}): "
          f"{t * 1e3:8.1f} ms, numpy.matmul {t_np * 1e3:8.1f} ms -> {t_np / t:6.1%} of numpy's "
          f"speed; max |diff| {err:.1e}")  # fmt: skip
    return {"size": size, "tile": tiling.shape, "split_k": tiling.split_k, "time_s": t,
            "numpy_s": t_np, "speed_vs_numpy": t_np / t, "spearman": tuned.spearman,
            "candidates": [c.tiling.shape for c in tuned.candidates]}  # fmt: skip


def bench_validation(quick: bool) -> dict:
    """Median error of the validation suite (quick: the six-kernel smoke suite)."""
    from workbench.tuning.validate import validate

    report = validate(backend="numpy", progress=False, quick=quick, repeats=3, rounds=2)
    print(f"  validation ({len(report.kernels)} kernels): median abs error "
          f"{report.median_abs_pct_error:.1f}%, class mismatches {len(report.class_mismatches)}"
          " (full table: benchmarks/bench_validate.py)")  # fmt: skip
    return {
        "median_abs_pct_error": report.median_abs_pct_error,
        "by_kind": report.by_kind(),
        "class_mismatches": list(report.class_mismatches),
    }


def bench_attention(seq: int, head_dim: int, q_tile: int, kv_tile: int) -> dict:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, seq, head_dim)).astype(np.float32) for _ in range(3))

    def fused() -> object:
        return attention_fused(q, k, v, q_tile=q_tile, kv_tile=kv_tile, backend="numpy")

    def unfused() -> object:
        return attention_unfused(q, k, v, backend="numpy")

    t_f, t_u = _interleaved(fused, unfused, 3)
    m_f, m_u = _peak_bytes(fused), _peak_bytes(unfused)
    err = float(np.abs(fused() - unfused()).max())
    print(f"  attention seq {seq} d {head_dim}: fused {t_f:.2f} s, unfused {t_u:.2f} s "
          f"(time ratio {t_f / t_u:.2f}x); peak memory fused {m_f / 2**20:.1f} MiB, "
          f"unfused {m_u / 2**20:.1f} MiB (ratio {m_u / m_f:.1f}x lower); "
          f"max |diff| {err:.1e}")  # fmt: skip
    return {"seq": seq, "head_dim": head_dim, "q_tile": q_tile, "kv_tile": kv_tile,
            "fused_s": t_f, "unfused_s": t_u, "time_ratio": t_f / t_u,
            "fused_peak_bytes": m_f, "unfused_peak_bytes": m_u, "memory_ratio": m_u / m_f,
            "max_abs_diff": err}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    args = parser.parse_args()
    bk = get_backend("numpy")
    print(f"backend: {bk.name} on {bk.device}; versions {dict(bk.versions)}")
    size, seq, reps = (512, 1024, 2) if args.quick else (2048, 8192, 5)
    tuned = bench_autotuned_gemm(size, reps)
    g = bench_gemm(size, reps)
    att = bench_attention(seq, 128, q_tile=512, kv_tile=1024)
    val = bench_validation(args.quick)
    summary = {
        "autotuned_gemm_speed_vs_numpy": tuned["speed_vs_numpy"],
        "autotuned_gemm_tile": tuned["tile"],
        "gemm_best_speed_vs_numpy": g["best"]["speed_vs_numpy"],
        "gemm_best_tile": g["best"]["tile"],
        "attention_memory_ratio": att["memory_ratio"],
        "attention_time_ratio": att["time_ratio"],
        "validation_median_abs_pct_error": val["median_abs_pct_error"],
        "validation_class_mismatches": len(val["class_mismatches"]),
        "goals": {"gemm": ">= 0.90", "attention_memory": ">= 10", "attention_time": "<= 1.3",
                  "validation_median": "<= 15", "validation_class_mismatches": "0"},
    }  # fmt: skip
    out = {"summary": summary, "autotuned_gemm": tuned, "gemm": g, "attention": att,
           "validation": val}  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
