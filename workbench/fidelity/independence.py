"""What leave-one-source-out cannot see: the headline's independence figures (issue 27, point 4).

Leave-one-source-out re-solves every fit without the held-out publication, but a publication that
holds no fitted row changes nothing, and a hand-chosen figure or option (a stack's figure that
cites the publication, an attention class, which row a fit prefers) is not re-decided. So beside
the LOSO and in-sample medians this module reports, overall and per category:

* ``changed``: rows whose prediction moves at all between in-sample and LOSO;
* ``uninformed``: the LOSO median over the rows of publications that informed no figure or
  option and fit nothing (:mod:`workbench.fidelity.provenance`), beside the rest (``informed``);
* ``first contact``: the median over the rows of publications recorded when they entered the
  corpus, before any change they motivated (``data/first_contact.json``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from workbench.fidelity.provenance import FirstContact, first_contact_medians, publication
from workbench.fidelity.runner import CorpusReport, RowResult
from workbench.fidelity.schema import CATEGORIES

__all__ = ["Figure", "Independence", "count_publications", "independence"]

#: Relative move of a prediction below which LOSO "changes nothing" (float noise).
_SAME = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """A median |error| and how many rows it is over (``median`` None: no row)."""

    median: float | None
    rows: int

    def cell(self) -> str:
        """``12.3% (45)``, or ``-`` with no row."""
        return "-" if self.median is None else f"{self.median:.1%} ({self.rows})"


def _fig(values: Iterable[float]) -> Figure:
    v = list(values)
    return Figure(median=statistics.median(v) if v else None, rows=len(v))


@dataclass(frozen=True, slots=True, kw_only=True)
class Independence:
    """The independence figures, overall (key ``all``) and per category.

    Attributes:
        changed: Category -> (rows whose LOSO prediction differs from the in-sample one, rows).
        uninformed: Category -> LOSO median over rows of publications that informed nothing.
        informed: Category -> LOSO median over the other rows.
        first_contact: Category -> median over the first-contact rows (recorded errors).
        first_contact_now: The same rows' LOSO median today (after the changes they motivated).
        uninformed_publications: Names of the publications that informed nothing.
        first_contact_publications: Names of the publications with a first-contact record.
    """

    changed: Mapping[str, tuple[int, int]]
    uninformed: Mapping[str, Figure]
    informed: Mapping[str, Figure]
    first_contact: Mapping[str, Figure]
    first_contact_now: Figure
    uninformed_publications: tuple[str, ...]
    first_contact_publications: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: every figure by category (``all`` first)."""
        return {
            "rows_changed": {c: list(v) for c, v in self.changed.items()},
            "uninformed_loso": {c: [f.median, f.rows] for c, f in self.uninformed.items()},
            "informed_loso": {c: [f.median, f.rows] for c, f in self.informed.items()},
            "first_contact": {c: [f.median, f.rows] for c, f in self.first_contact.items()},
            "first_contact_rows_now": [self.first_contact_now.median, self.first_contact_now.rows],
            "uninformed_publications": list(self.uninformed_publications),
            "first_contact_publications": list(self.first_contact_publications),
        }

    def summary_lines(self) -> list[str]:
        """The independence part of the headline, in words."""
        n, total = self.changed["all"]
        un, inf, fc = self.uninformed["all"], self.informed["all"], self.first_contact["all"]
        return [
            f"rows whose prediction changes between in-sample and leave-one-source-out: {n} of "
            f"{total} (the others' publications fit nothing)",
            f"publications that informed no figure or option ({len(self.uninformed_publications)}"
            f"): median |error| {un.cell()}; the rest {inf.cell()} (LOSO, rows in brackets)",
            "first contact (each publication's rows at the commit it entered the corpus, "
            f"{count_publications(len(self.first_contact_publications))}): median |error| "
            f"{fc.cell()}; the same rows today {self.first_contact_now.cell()}",
            "by category, informed nothing / first contact / rows changed: "
            + ", ".join(
                f"{c} {self.uninformed[c].cell()} / {self.first_contact[c].cell()} / "
                f"{self.changed[c][0]} of {self.changed[c][1]}"
                for c in self.changed
                if c != "all"
            ),
        ]


def count_publications(n: int) -> str:
    """``1 publication``, ``3 publications``."""
    return f"{n} publication{'' if n == 1 else 's'}"


def _moved(a: RowResult, b: RowResult) -> bool:
    return abs(a.predicted / b.predicted - 1.0) > _SAME


def independence(
    loso: CorpusReport,
    in_sample: CorpusReport,
    informed_by: Mapping[str, tuple[str, ...]],
    contacts: Mapping[str, FirstContact],
) -> Independence:
    """The independence figures of one cross-validation.

    Args:
        loso: Every row predicted without its own publication.
        in_sample: Every row predicted by the shipped model (same row order).
        informed_by: Publication -> what it informed (empty: nothing); a publication not in it
            counts as informed.
        contacts: Publication -> its first-contact record.

    Returns:
        The :class:`Independence`.
    """
    ins = {r.id: r for r in in_sample.rows}
    cats = ("all", *(c for c in CATEGORIES if any(r.category == c for r in loso.rows)))

    def rows(c: str) -> list[RowResult]:
        return [r for r in loso.rows if c in ("all", r.category)]

    def nothing(r: RowResult) -> bool:
        return informed_by.get(publication(r.source_key)) == ()

    _, fc_cats = first_contact_medians(contacts)
    every_fc = [abs(e) for rec in contacts.values() for _, e in rec.rows.values()]
    fc = {c: Figure(median=fc_cats[c][0], rows=fc_cats[c][1]) for c in fc_cats}
    fc["all"] = _fig(every_fc)
    return Independence(
        changed={c: (sum(_moved(r, ins[r.id]) for r in rows(c)), len(rows(c))) for c in cats},
        uninformed={c: _fig(r.abs_error for r in rows(c) if nothing(r)) for c in cats},
        informed={c: _fig(r.abs_error for r in rows(c) if not nothing(r)) for c in cats},
        first_contact={c: fc.get(c, Figure(median=None, rows=0)) for c in cats},
        first_contact_now=_fig(
            r.abs_error for r in loso.rows if any(r.id in rec.rows for rec in contacts.values())
        ),
        uninformed_publications=tuple(p for p, v in informed_by.items() if not v),
        first_contact_publications=tuple(contacts),
    )
