"""Wall time of a 1,000-point analytical design sweep: one core vs a 2-worker Dask LocalCluster.

    python benchmarks/bench_sweep.py [--points 1000]

The grid: 5 hardware profiles x 2 models x 5 batches x 5 sequence lengths x 4 dtypes = 1,000
points (each maps a GPT-2 or BERT-base prefill graph with the cost model; no execution).
On the 2-core dev box (2025): one core 19.3 s, 2-worker LocalCluster 21.9 s: the scheduler and
the writer share the two cores with the workers, and each worker starts with cold mapper caches.
Both runs write a fresh results file in a temporary folder; the figures are printed side by side.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from workbench.platform.sweep import grid, run_sweep

HARDWARE = ("h100-sxm", "a100-80gb", "mi300x", "l4", "tpu-v5e")
MODELS = ("gpt2", "bert-base")
BATCHES = (1, 2, 4, 8, 16)
SEQS = (64, 128, 256, 384, 512)
DTYPES = ("bf16", "fp8", "int8", "fp16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    args = parser.parse_args()
    points = grid(HARDWARE, MODELS, batches=BATCHES, seqs=SEQS, dtypes=DTYPES)[: args.points]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        one = run_sweep(points, Path(tmp) / "one.jsonl", workers=1)
        t_one = time.perf_counter() - t0

        from distributed import Client, LocalCluster

        with (
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            t0 = time.perf_counter()
            two = run_sweep(points, Path(tmp) / "dask.jsonl", scheduler=client)
            t_two = time.perf_counter() - t0
    print(f"{'backend':<28} {'points':>7} {'wall s':>8} {'points/s':>9}")
    # NOTE: points evaluated = done + failed (a dtype a platform lacks is a failed point).
    n_one, n_two = one.done + one.failed, two.done + two.failed
    print(f"{'one core (in-process)':<28} {n_one:>7} {t_one:8.2f} {n_one / t_one:9.1f}")
    print(f"{'Dask LocalCluster, 2 workers':<28} {n_two:>7} {t_two:8.2f} {n_two / t_two:9.1f}")
    print(
        f"speed-up {t_one / t_two:.2f}x (cluster start-up excluded; mapper caches are per process)"
    )


if __name__ == "__main__":
    main()
