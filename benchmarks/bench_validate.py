"""Predicted vs measured on this host, five runs side by side: median error and its spread.

Run: ``python benchmarks/bench_validate.py`` (about three minutes on 2 cores; ``--runs N``
and ``--rounds N`` change the work). Each run is one ``workbench validate`` with its defaults
(rates re-measured next to every kernel, best of 5 samples per kernel per round, one BLAS
thread); the last run's table is printed first, then one line per run: the median absolute
error over the kernels, the spread of the rounds' medians, the median per-kernel IQR, the
per-kind medians and the worst kernels.
"""

from __future__ import annotations

import argparse
import statistics

from workbench.tuning.validate import validate


def main() -> None:
    """Run validate ``--runs`` times and print the figures side by side."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    reports = [
        validate(backend="numpy", progress=False, rounds=args.rounds, repeats=args.repeats)
        for _ in range(args.runs)
    ]
    print(reports[-1].table())
    print()
    kinds = sorted({k.kind for r in reports for k in r.kernels})
    head = f"{'run':>3} {'median':>7} {'rounds':>11} {'IQR':>5}  " + " ".join(
        f"{kind[:9]:>9}" for kind in kinds
    )
    print(head + "  worst")
    for i, r in enumerate(reports, 1):
        rm = r.round_medians_pct
        by = r.by_kind()
        worst = ", ".join(f"{k.name} {k.abs_pct_error:.0f}%" for k in r.worst(3))
        print(
            f"{i:3d} {r.median_abs_pct_error:6.1f}% {min(rm):4.1f}-{max(rm):4.1f}% "
            f"{r.median_error_iqr_pct:5.1f}  "
            + " ".join(f"{by.get(kind, float('nan')):8.1f}%" for kind in kinds)
            + f"  {worst}"
        )
    medians = [r.median_abs_pct_error for r in reports]
    print(
        f"median abs error over {len(reports)} runs: {min(medians):.1f}-{max(medians):.1f}% "
        f"(median {statistics.median(medians):.1f}%), {len(reports[0].kernels)} kernels each; "
        f"short kernels (< 1 ms): {sorted({n for r in reports for n in r.short_kernels})}"
    )


if __name__ == "__main__":
    main()
