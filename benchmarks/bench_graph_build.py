"""Median time to build preset graphs after import (goal: under 20 ms each).

Usage: python benchmarks/bench_graph_build.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from workbench.ir import Graph
from workbench.models import build_graph, resnet50_graph

CASES: dict[str, Callable[[], Graph]] = {
    "llama2-70b prefill b1 s2048": lambda: build_graph("llama2-70b", "prefill", batch=1, seq=2048),
    "llama2-70b decode b1 c2048": lambda: build_graph(
        "llama2-70b", "decode", batch=1, context=2048
    ),
    "llama2-70b prefill tp8": lambda: build_graph("llama2-70b", seq=2048, tensor_parallel=8),
    "resnet50 b1 224": lambda: resnet50_graph(batch=1),
}
GOAL_S = 0.020


def _median(fn: Callable[[], Graph], repeat: int) -> tuple[float, Graph]:
    graph = fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        graph = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), graph


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed builds per case")
    args = parser.parse_args()
    print(f"{'graph':32} {'ops':>6} {'median ms':>10}  goal < {GOAL_S * 1e3:.0f} ms")
    for name, fn in CASES.items():
        t, graph = _median(fn, args.repeat)
        mark = "ok" if t < GOAL_S else "SLOW"
        print(f"{name:32} {len(graph.ops):6d} {t * 1e3:10.2f}  {mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
