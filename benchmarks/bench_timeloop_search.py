"""Timeloop mapspace search speed: ``workbench dataflow search`` on ISPASS exercises 05 and 06.

Goal (issue 28): the search finishes in seconds on 2 cores. Printed beside each search, as the
baseline on the same machine and run, one model evaluation of Timeloop's own answer: the search
costs about ``evaluated`` of them (the ratio shows the overhead of the search itself).

    python benchmarks/bench_timeloop_search.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from workbench.scheduling.timeloop import (
    model,
    read_arch,
    read_constraints,
    read_ert,
    read_mapping,
    read_problem,
)
from workbench.scheduling.timeloop.search import search

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "timeloop"
CASES = {
    "05 null": (
        "05-mapper-conv1d+oc-3level", "arch/3level.arch.yaml", "prob/conv1d+oc.prob.yaml",
        "constraints/null.constraints.yaml", "ref-output/null",
    ),
    "06 eyeriss": (
        "06-mapper-convlayer-eyeriss", "arch/eyeriss_like.yaml", "prob/VGG02_layer5.yaml",
        None, "ref-output",
    ),
}  # fmt: skip


def _median(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    """Print search time, evaluations and the ratio to one model evaluation per case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    for name, (folder, a, p, c, ref) in CASES.items():
        d = DATA / folder
        arch, prob = read_arch(d / a), read_problem(d / p)
        cons = read_constraints(d / c) if c else ()
        ert = read_ert(d / ref / "timeloop-mapper.ERT.yaml")
        theirs = read_mapping(d / ref / "timeloop-mapper.map.yaml", arch, prob)
        spec = (arch, prob)
        one = _median(lambda s=spec, m=theirs, e=ert: model(*s, m, e), repeats * 10)
        found = search(arch, prob, cons, "edp", ert)
        took = _median(lambda s=spec, c=cons, e=ert: search(*s, c, "edp", e), repeats)
        print(
            f"{name:<11} search {took:6.2f} s, {found.evaluated} mappings evaluated; "
            f"one model evaluation {one * 1e3:.3f} ms; search / evaluation x{took / one:,.0f} "
            f"(x{took / one / found.evaluated:.2f} per mapping evaluated)"
        )


if __name__ == "__main__":
    main()
