"""``workbench validate --published``: the published-measurement corpus, printed and charted."""

from __future__ import annotations

from workbench.errors import WorkbenchError

__all__ = ["validate_published"]


def validate_published(split: str, fmt: str, chart: str | None) -> int:
    """Reproduce the corpus and print it as ``fmt``; write a chart when asked.

    Args:
        split: ``calibration``, ``heldout`` or ``all``.
        fmt: ``table``, ``json`` or ``csv``.
        chart: A ``.html``, ``.svg`` or ``.png`` path, or None.

    Returns:
        Exit status 0 (errors raise :class:`WorkbenchError`, which the CLI prints with exit 2).
    """
    from workbench.fidelity import run_corpus

    if chart is not None and not chart.lower().endswith((".html", ".svg", ".png")):
        raise WorkbenchError(f"--chart {chart}: use a .html, .svg or .png file")
    report = run_corpus(split=split)
    if not report.rows:
        raise WorkbenchError(f"--split {split}: no rows in the corpus")
    if fmt == "json":
        print(report.to_json())
    elif fmt == "csv":
        print(report.to_csv(), end="")
    else:
        print(report.table())
    if chart is not None:
        from workbench.report.charts.fidelity import fidelity_chart
        from workbench.report.export import save_chart

        try:
            path = save_chart(fidelity_chart(report), chart)
        except OSError as exc:
            raise WorkbenchError(f"--chart {chart}: cannot write ({exc.strerror})") from None
        if fmt == "table":
            print(f"chart written to {path}")
    return 0
