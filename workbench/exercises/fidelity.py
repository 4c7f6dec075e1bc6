"""Lesson 02's last section: the cost model against published measurements (H1's corpus).

The corpus (``workbench.fidelity``) holds published, measured results with their sources; each
row is reproduced through the mapper. These helpers give the lesson its table, chart and the
sentence that reads them, all computed from the same run.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from workbench.exercises._claims import Claim
from workbench.exercises._figures import Figure
from workbench.exercises._text import LessonText
from workbench.fidelity import CorpusReport, run_corpus
from workbench.report.charts.fidelity import fidelity_chart

__all__ = ["fidelity_claim", "fidelity_figure", "fidelity_report", "fidelity_table"]

#: The sentence belongs to lesson 02's text file (this is lesson 02's last section).
_TEXT = LessonText("lesson02")


@lru_cache(maxsize=2)
def fidelity_report(split: str = "all") -> CorpusReport:
    """Reproduce the published corpus once per session (about 16 s of CPU time)."""
    return run_corpus(split=split)


def fidelity_table(report: CorpusReport, split: str = "heldout") -> pd.DataFrame:
    """Median error per category on ``split``: absolute, and signed (+ = optimistic).

    Returns:
        A frame indexed by category with ``rows``, ``median_abs_error`` and
        ``median_optimism`` (percent; positive when the prediction is faster than measured).
    """
    signed = report.signed_medians(split)
    rows = []
    for cat, err in report.category_medians(split).items():
        n = sum(1 for r in report.rows if r.category == cat and split in ("all", r.split))
        rows.append(
            {
                "category": cat,
                "rows": n,
                "median_abs_error_pct": round(100 * err, 1),
                "median_optimism_pct": round(100 * signed.get(cat, 0.0), 1),
            }
        )
    return pd.DataFrame(rows).set_index("category")


def fidelity_figure(report: CorpusReport) -> Figure:
    """Predicted against measured, log-log, y = x with a +-15 % band (a static SVG figure)."""
    return Figure(fidelity_chart(report, width=440, height=360))


def fidelity_claim(report: CorpusReport, split: str = "heldout") -> Claim:
    """What the comparison says, read from ``report``.

    Returns:
        Markdown: rows and sources, the median absolute error on ``split``, the best and worst
        category, and the categories where the model is optimistic by more than 15 %.
    """
    table = fidelity_table(report, split)
    if table.empty:
        return _TEXT.claim("fidelity_empty", split=split)
    med = report.median(split)
    best = table["median_abs_error_pct"].idxmin()
    worst = table["median_abs_error_pct"].idxmax()
    return _TEXT.claim(
        "fidelity",
        rows=int(table["rows"].sum()),
        split=split,
        sources=len(report.sources),
        median_pct=100 * (med or 0),
        best=best,
        best_pct=table.loc[best, "median_abs_error_pct"],
        worst=worst,
        worst_pct=table.loc[worst, "median_abs_error_pct"],
        # NOTE: the 15 % the sentence names is this threshold
        optimistic=[c for c in table.index if table.loc[c, "median_optimism_pct"] > 15],
    )
