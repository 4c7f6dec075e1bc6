"""Leave-one-source-out cross-validation of the published corpus (issue 19's headline figure).

For every publication (a row's ``source_key``; keys that differ only by a trailing version,
``trt-bert-demo-10-4`` and ``trt-bert-demo-10-11``, are one publication), every fitted figure
(:data:`workbench.fidelity.fits.FITS`) is re-solved from the corpus without that publication's
rows, and that publication's rows are predicted with the re-solved figures. A publication that
holds none of the rows a figure is fitted to changes no fit: its rows are predicted by the
shipped model, so its cross-validated error is its in-sample one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.fidelity.fits import FITS, FitState, applied, check_stack_rows, solve_fits
from workbench.fidelity.independence import Independence, count_publications, independence
from workbench.fidelity.provenance import (
    informed,
    load_first_contact,
    load_publications,
    publication,
)
from workbench.fidelity.runner import (
    GOAL_CATEGORY_LOSO,
    GOAL_MEDIAN_LOSO,
    CorpusReport,
    RowResult,
    _result,
    run_corpus,
)
from workbench.fidelity.schema import Corpus, CorpusError, PublishedRow, load_corpus
from workbench.hw import load_hardware
from workbench.hw.schema import Hardware

__all__ = ["CrossValidation", "Fold", "cross_validate", "publication"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fold:
    """One left-out publication.

    Attributes:
        publication: The group's name (:func:`publication`).
        rows: Ids of its rows.
        refitted: None when it holds no fit row (the shipped model predicts it), else the
            fold's :class:`FitState` (figures solved without it).
    """

    publication: str
    rows: tuple[str, ...]
    refitted: FitState | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossValidation:
    """Leave-one-source-out predictions beside the in-sample report.

    Attributes:
        loso: Every row predicted by the model fitted without its publication (corpus order).
        in_sample: The ordinary report (shipped fits).
        folds: One per publication.
        independence: What LOSO cannot see: rows changed, publications that informed nothing,
            first contact (:mod:`workbench.fidelity.independence`).
    """

    loso: CorpusReport
    in_sample: CorpusReport
    folds: tuple[Fold, ...]
    independence: Independence

    def errors(self) -> dict[str, tuple[float, float]]:
        """Row id -> (cross-validated |error|, in-sample |error|)."""
        ins = {r.id: r.abs_error for r in self.in_sample.rows}
        return {r.id: (r.abs_error, ins[r.id]) for r in self.loso.rows}

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: per-row cross-validated and in-sample errors, medians, re-fitted folds."""
        return {
            "median_abs_error": self.loso.median("all"),
            "category_median_abs_error": self.loso.category_medians("all"),
            "in_sample_heldout_median_abs_error": self.in_sample.median("heldout"),
            "independence": self.independence.as_dict(),
            "fit_row_choices": self.row_choices(),
            "rows": {
                r.id: {"error": r.error, "abs_error": r.abs_error, "predicted": r.predicted}
                for r in self.loso.rows
            },
            "folds": [
                {
                    "publication": f.publication,
                    "rows": list(f.rows),
                    "refitted": None
                    if f.refitted is None
                    else {n: [v, f.refitted.origin[n]] for n, v in f.refitted.values.items()},
                }
                for f in self.folds
            ],
        }

    def markdown(self) -> str:
        """The headline as the README prints it: two Markdown tables, percentages to 0.1.

        ``workbench validate --published --format md`` prints this text, and a test checks that
        the README holds it verbatim, so the README's fidelity figures are the code's.
        """
        ins, loso, ind = self.in_sample, self.loso, self.independence
        n_cal = sum(r.split == "calibration" for r in ins.rows)
        n_held = len(ins.rows) - n_cal
        held = ins.median("heldout") or 0.0
        gap = (loso.median("all") or 0.0) - held
        un, inf, fc = ind.uninformed["all"], ind.informed["all"], ind.first_contact["all"]
        lines = [
            "| figure | rows | median \\|error\\| |",
            "|---|---|---|",
            f"| **leave-one-source-out, all rows** | {len(loso.rows)} | "
            f"**{loso.median('all') or 0.0:.1%}** |",
            f"| leave-one-source-out, held-out rows | {n_held} | "
            f"{loso.median('heldout') or 0.0:.1%} |",
            f"| in-sample held-out | {n_held} | {held:.1%} (gap {gap:+.1%}) |",
            f"| in-sample calibration | {n_cal} | {ins.median('calibration') or 0.0:.1%} |",
            f"| **publications that informed nothing** ({len(ind.uninformed_publications)}), "
            f"LOSO | {un.rows} | **{_pct(un.median)}** |",
            f"| publications that informed a figure or option, LOSO | {inf.rows} | "
            f"{_pct(inf.median)} |",
            f"| **first contact** ({count_publications(len(ind.first_contact_publications))}, "
            f"errors when each entered) | {fc.rows} | **{_pct(fc.median)}** |",
            f"| the first-contact rows today | {ind.first_contact_now.rows} | "
            f"{_pct(ind.first_contact_now.median)} |",
            f"| rows whose prediction changes in LOSO | {ind.changed['all'][0]} of "
            f"{ind.changed['all'][1]} | - |",
            "",
            "| category, median \\|error\\| | leave-one-source-out | in-sample held-out "
            "| informed nothing (rows) | first contact (rows) | rows changed |",
            "|---|---|---|---|---|---|",
        ]
        held_cats = ins.category_medians("heldout")
        for cat, v in loso.category_medians("all").items():
            h = f"{held_cats[cat]:.1%}" if cat in held_cats else "-"
            lines.append(
                f"| {_CATEGORY_NAMES.get(cat, cat)} | {v:.1%} | {h} | "
                f"{ind.uninformed[cat].cell()} | {ind.first_contact[cat].cell()} | "
                f"{ind.changed[cat][0]} of {ind.changed[cat][1]} |"
            )
        return "\n".join(lines) + "\n"

    def summary_lines(self) -> list[str]:
        """The headline: LOSO median and categories, the in-sample held-out figure and the gap."""
        loso = self.loso.median("all") or 0.0
        held = self.in_sample.median("heldout") or 0.0
        cats = self.loso.category_medians("all")
        held_cats = self.in_sample.category_medians("heldout")
        refit = [f for f in self.folds if f.refitted is not None]
        rows_refit = sum(len(f.rows) for f in refit)
        out = [
            f"leave-one-source-out (headline, {len(self.folds)} publications, every row predicted "
            f"without its own publication): median |error| {loso:.1%} over "
            f"{len(self.loso.rows)} rows ({self.loso.median('heldout') or 0.0:.1%} over the "
            f"held-out rows alone); in-sample held-out {held:.1%}; gap {loso - held:+.1%}",
            "leave-one-source-out by category, median |error| (in-sample held-out): "
            + ", ".join(
                f"{c} {v:.1%} ({held_cats[c]:.1%})" if c in held_cats else f"{c} {v:.1%} (-)"
                for c, v in cats.items()
            ),
            f"re-fitted folds: {len(refit)} of {len(self.folds)} publications hold a row that a "
            f"figure is fitted to ({rows_refit} rows); the other publications fit nothing, so "
            "their cross-validated error equals their in-sample one",
        ]
        for f in refit:
            assert f.refitted is not None
            moved = [
                f"{name} {'-' if v is None else f'{v:.3g}'} ({f.refitted.origin[name]})"
                for name, v in f.refitted.values.items()
                if f.refitted.origin[name] != (_fit_rows(name) or ("pooled",))[0]
            ]
            out.append(f"  without {f.publication}: " + ("; ".join(moved) or "no figure moves"))
        out.append(self._choice_line())
        out.extend(self.independence.summary_lines())
        worst = max(cats.values()) if cats else 0.0
        ok = loso <= GOAL_MEDIAN_LOSO and worst <= GOAL_CATEGORY_LOSO
        out.append(
            f"cross-validated goal (LOSO median <= {GOAL_MEDIAN_LOSO:.0%}, every category <= "
            f"{GOAL_CATEGORY_LOSO:.0%}): {'met' if ok else 'NOT met'} (median {loso:.1%}, "
            f"worst category {worst:.1%})"
        )
        return out

    def row_choices(self) -> dict[str, int]:
        """How the re-fitted folds chose among a fit's candidate rows (fits.py ``_choose_row``).

        ``choices``: fits with two or more candidate rows, over the re-fitted folds; ``judged``:
        of those, chosen by the fold's own rows; ``other_than_listed``: judged choices that
        picked another row than the one listed first.
        """
        picks = [j for f in self.folds if f.refitted for j in f.refitted.judged.values()]
        by_data = [j for j in picks if j[0] > 0]
        return {
            "choices": len(picks),
            "judged": len(by_data),
            "other_than_listed": sum(1 for j in by_data if not j[1]),
        }

    def _choice_line(self) -> str:
        c = self.row_choices()
        return (
            f"a fit's row re-decided per fold: {c['choices']} choice(s) between two or more "
            f"candidate rows in the re-fitted folds, {c['judged']} judged by the fold's own rows "
            f"(median |error| over at least 3 rows of the same chips, category and format width; "
            f"{c['other_than_listed']} picked another row than the listed first), "
            f"{c['choices'] - c['judged']} left to the listed order (too few rows to judge)"
        )


#: How the README names each category.
_CATEGORY_NAMES = {
    "gemm": "GEMM",
    "attention": "attention",
    "llm_decode": "LLM decode",
    "llm_prefill_ttft": "LLM prefill / TTFT",
    "serving_throughput": "serving throughput",
    "cnn": "CNN",
    "training": "training",
    "collective": "collective",
    "encoder": "encoder",
    "ratio": "ratio",
}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _fit_rows(name: str) -> tuple[str, ...]:
    return next(f.rows for f in FITS if f.name == name)


def _profiles(rows: tuple[PublishedRow, ...]) -> dict[str, Hardware]:
    out: dict[str, Hardware] = {}
    for name in sorted({r.hardware for r in rows} | {t for f in FITS for t in f.targets}):
        try:
            out[name] = load_hardware(name)
        except WorkbenchError:
            continue  # NOTE: a fit target that is no profile (a class, a stack) is no hardware
    return out


def _predict(
    rows: tuple[PublishedRow, ...], state: FitState, profiles: Mapping[str, Hardware]
) -> list[RowResult]:
    with applied(state, profiles) as fitted:
        out = []
        for row in rows:
            try:
                out.append(_result(row, fitted[row.hardware]))
            except WorkbenchError as exc:
                raise CorpusError(f"row {row.id!r} (leave-one-source-out): {exc}") from None
        return out


def cross_validate(corpus: Corpus | None = None) -> CrossValidation:
    """Leave-one-source-out predictions of every row of ``corpus`` (default: the shipped one).

    Args:
        corpus: A loaded corpus, or None for :func:`load_corpus`'s default.

    Returns:
        The :class:`CrossValidation`.

    Raises:
        CorpusError: A row that cannot be mapped, in or out of its fold; a stack figure fitted
            to a row the shipped corpus lacks.
    """
    if corpus is None:  # NOTE: the stacks' fitted rows are rows of the shipped corpus
        corpus = load_corpus()
        check_stack_rows({r.id for r in corpus.rows})
    in_sample = run_corpus(corpus)
    by_id = {r.id: r for r in in_sample.rows}
    profiles = _profiles(corpus.rows)
    fit_rows = {i for f in FITS for i in f.rows}
    groups: dict[str, list[PublishedRow]] = {}
    for row in corpus.rows:
        groups.setdefault(publication(row.source_key), []).append(row)
    loso: dict[str, RowResult] = {}
    folds = []
    for pub, rows in groups.items():
        held = tuple(rows)
        if not fit_rows & {r.id for r in held}:
            loso.update({r.id: by_id[r.id] for r in held})
            folds.append(Fold(publication=pub, rows=tuple(r.id for r in held), refitted=None))
            continue
        train = tuple(r for r in corpus.rows if publication(r.source_key) != pub)
        state = solve_fits(train, profiles)
        loso.update({r.id: r for r in _predict(held, state, profiles)})
        folds.append(Fold(publication=pub, rows=tuple(r.id for r in held), refitted=state))
    report = CorpusReport(rows=tuple(loso[r.id] for r in in_sample.rows), sources=in_sample.sources)
    informed_by = informed(corpus.rows, {f.name: f.rows for f in FITS}, load_publications())
    ind = independence(report, in_sample, informed_by, load_first_contact())
    return CrossValidation(loso=report, in_sample=in_sample, folds=tuple(folds), independence=ind)
