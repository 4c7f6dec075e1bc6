"""Predicted vs measured on this host: the validation suite's table and median error.

Run: ``python benchmarks/bench_validate.py`` (about a minute on 2 cores).
"""

from workbench.tuning.validate import validate


def main() -> None:
    """Print the suite's table and its median absolute percentage error."""
    report = validate(backend="numpy")
    print(report.table())
    print(f"median_abs_pct_error {report.median_abs_pct_error:.1f}%")


if __name__ == "__main__":
    main()
