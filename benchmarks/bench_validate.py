"""Predicted vs measured on this host: the validation suite's table and median error.

Run: ``python benchmarks/bench_validate.py`` (about ten seconds on 2 cores). Calibration and
measurement use one BLAS thread (see ``workbench.execution.threads``).
"""

from workbench.tuning.validate import validate


def main() -> None:
    """Print the suite's table, per-kind medians, and class mismatches."""
    report = validate(backend="numpy", progress=False, repeats=3, rounds=5)
    print(report.table())
    print(f"median_abs_pct_error {report.median_abs_pct_error:.1f}%")
    print(f"class_mismatches {len(report.class_mismatches)}: {', '.join(report.class_mismatches)}")


if __name__ == "__main__":
    main()
