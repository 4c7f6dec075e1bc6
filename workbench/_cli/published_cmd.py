"""``workbench validate --published``: the published-measurement corpus, printed and charted."""

from __future__ import annotations

import json

from workbench.errors import WorkbenchError

__all__ = ["record_first_contact", "validate_published"]


def validate_published(split: str, fmt: str, chart: str | None) -> int:
    """Reproduce the corpus and print it as ``fmt``; write a chart when asked.

    Args:
        split: ``calibration``, ``heldout`` or ``all``.
        fmt: ``table``, ``json``, ``csv`` or ``md`` (the cross-validated headline as the
            README's Markdown tables; ``--split all`` only).
        chart: A ``.html``, ``.svg`` or ``.png`` path, or None.

    Returns:
        Exit status 0 (errors raise :class:`WorkbenchError`, which the CLI prints with exit 2).
    """
    from workbench.fidelity import run_corpus
    from workbench.fidelity.crossval import cross_validate

    if chart is not None and not chart.lower().endswith((".html", ".svg", ".png")):
        raise WorkbenchError(f"--chart {chart}: use a .html, .svg or .png file")
    # NOTE: the cross-validated headline needs every row (each fold re-fits on the others), so
    # it is computed for the whole corpus only.
    if fmt == "md" and split != "all":
        raise WorkbenchError("--format md prints the cross-validated headline: use --split all")
    cv = cross_validate() if split == "all" else None
    report = cv.in_sample if cv is not None else run_corpus(split=split)
    if not report.rows:
        raise WorkbenchError(f"--split {split}: no rows in the corpus")
    if fmt == "json":
        doc = report.as_dict()
        if cv is not None:
            doc["cross_validation"] = cv.as_dict()
        print(json.dumps(doc, indent=1))
    elif fmt == "md":
        assert cv is not None
        print(cv.markdown(), end="")
    elif fmt == "csv":
        print(report.to_csv(), end="")
    else:
        print(report.table())
        if cv is not None:
            print(
                "\n".join(
                    [
                        "",
                        "== headline: leave-one-source-out cross-validation ==",
                        *cv.summary_lines(),
                    ]
                )
            )
        else:
            print("(leave-one-source-out cross-validation runs with --split all only)")
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


def record_first_contact(pub: str) -> int:
    """Record publication ``pub``'s rows' leave-one-source-out errors at the model's commit.

    Returns:
        Exit status 0 (errors raise :class:`WorkbenchError`, printed with exit 2).
    """
    from workbench.fidelity.crossval import cross_validate
    from workbench.fidelity.provenance import FIRST_CONTACT_PATH, model_commit
    from workbench.fidelity.provenance import record_first_contact as record

    commit = model_commit()
    rec = record(pub, cross_validate().loso.rows, commit)
    errs = sorted(abs(e) for _, e in rec.rows.values())
    mid = errs[len(errs) // 2] if len(errs) % 2 else sum(errs[len(errs) // 2 - 1 :][:2]) / 2
    print(
        f"first contact of {pub} at {commit[:12]}: {len(errs)} rows, median |error| {mid:.1%}; "
        f"recorded in {FIRST_CONTACT_PATH}"
    )
    return 0
