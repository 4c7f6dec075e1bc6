"""MappingExplorer update latency for Llama-2-7B (goal < 100 ms, Python side), vs a cold map.

Run: python benchmarks/bench_widgets.py
"""

import statistics
import time

from workbench.hw import load_hardware
from workbench.mapper import clear_cache, map_model
from workbench.models import build_graph
from workbench.ui import MappingExplorer


def main() -> None:
    hw = load_hardware("h100-sxm")
    clear_cache()
    t0 = time.perf_counter()
    map_model(build_graph("llama2-7b", seq=2048), hw)
    cold = time.perf_counter() - t0
    explorer = MappingExplorer(model="llama2-7b", seq=2048)
    _ = explorer.widget  # create the live JupyterCharts, so updates resend their specs
    samples = []
    for batch in (2, 4, 8, 1) * 5:
        t0 = time.perf_counter()
        explorer.controls["batch"].value = batch
        samples.append(time.perf_counter() - t0)
    warm = samples[4:]  # every batch value seen once: the schedule cache is warm
    print(f"cold map_model llama2-7b prefill seq 2048: {cold * 1e3:.1f} ms")
    print(
        "explorer update (control change -> new charts assigned), warm: "
        f"median {statistics.median(warm) * 1e3:.1f} ms, max {max(warm) * 1e3:.1f} ms "
        f"over {len(warm)} changes (goal < 100 ms)"
    )
    first = [round(s * 1e3, 1) for s in samples[:4]]
    print(f"first changes (cold schedules per batch), ms: {first}")


if __name__ == "__main__":
    main()
