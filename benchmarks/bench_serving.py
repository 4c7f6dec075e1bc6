"""Speed of the serving simulation: 100,000 requests per batching mode (goal: < 2 s each, 1 core).

    python benchmarks/bench_serving.py [--requests N]

Prints wall time (best of 3) for continuous and static batching on a Poisson workload with the
production-like length mix, near saturation, with and without runtime variance.
"""

from __future__ import annotations

import argparse
import time

from workbench.hw.schema import RuntimeVariance
from workbench.serving import AnalyticStepTime, LogNormalLengths, TableStepTime, poisson_arrivals
from workbench.serving import simulate as run_simulation

GOAL_S = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()
    analytic = AnalyticStepTime()
    table = TableStepTime.from_functions(
        analytic.prefill_time,
        analytic.decode_time,
        batches=(1, 8, 32, 64),
        prompt_tokens=(64, 512, 2048, 8192),
        contexts=(0, 1024, 4096, 10240),
    )
    workload = poisson_arrivals(
        8.0,
        args.requests,
        LogNormalLengths(median=600, p99=6000, maximum=8192),
        LogNormalLengths(median=150, p99=1500, maximum=2048),
        seed=1,
    )
    noisy = RuntimeVariance(launch_jitter_s=1e-4, slow_step_probability=0.01, slow_step_factor=3)
    print(f"{args.requests:,} requests, offered {workload.offered_rate_per_s:.1f}/s, max_batch 64")
    for batching in ("continuous", "static"):
        for label, model, variance in (
            ("analytic", analytic, None),
            ("table", table, None),
            ("table+variance", table, noisy),
        ):
            best, result = float("inf"), None
            for _ in range(3):
                t0 = time.perf_counter()
                result = run_simulation(
                    workload, model, batching=batching, max_batch=64, variance=variance
                )
                best = min(best, time.perf_counter() - t0)
            verdict = "ok" if best < GOAL_S else "OVER GOAL"
            print(
                f"  {batching:10s} {label:15s} {best:6.2f} s ({verdict}; "
                f"achieved {result.achieved_rate_per_s:5.2f} req/s, "
                f"p99 e2e {result.e2e.p99_s:8.1f} s, mean batch {result.mean_batch:4.1f})"
            )


if __name__ == "__main__":
    main()
