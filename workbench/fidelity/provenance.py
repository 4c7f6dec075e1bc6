"""Which publications informed the model, and each new publication's first-contact error.

Two records beside the corpus (issue 27, points 4 and 5):

* ``data/publications.yaml`` (written by hand): for every publication of the corpus, the strings
  that cite its source document (``cited_as``) and what hand-chosen figure or option it
  informed (``informed``; empty: nothing). A publication also *informed* the model when a fit
  (:data:`workbench.fidelity.fits.FITS`) is solved from one of its rows; that part is computed,
  not declared. :func:`citations` finds where a publication's ``cited_as`` strings or row ids
  appear in the model's data and code, so a test can refuse a publication declared to have
  informed nothing that a profile, stack or mechanism cites.
* ``data/first_contact.json`` (written by :func:`record_first_contact`, once per publication):
  the error of each of a new publication's rows at the commit it entered the corpus, before any
  change it motivates. The median over these rows is the "first contact" figure: the one
  nothing was tuned to.
"""

from __future__ import annotations

import datetime
import json
import re
import statistics
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from workbench._files import read_text_bounded, write_text_safely
from workbench.errors import WorkbenchError, first_invalid
from workbench.fidelity._input import CorpusError, StrictModel, check_data
from workbench.fidelity.runner import RowResult
from workbench.fidelity.schema import CATEGORIES, PublishedRow
from workbench.hw._yaml import StrictYamlError, load_strict

__all__ = [
    "FIRST_CONTACT_PATH",
    "PUBLICATIONS_PATH",
    "UNDECLARED",
    "FirstContact",
    "PublicationEntry",
    "citations",
    "first_contact_medians",
    "informed",
    "load_first_contact",
    "load_publications",
    "model_commit",
    "publication",
    "record_first_contact",
]

_DATA = Path(__file__).with_name("data")
#: What a publication missing from ``publications.yaml`` is counted as having informed.
UNDECLARED = "undeclared in data/publications.yaml (counted as informed)"
PUBLICATIONS_PATH = _DATA / "publications.yaml"
FIRST_CONTACT_PATH = _DATA / "first_contact.json"
#: Largest record file read, bytes (the shipped ones are a few KiB).
_MAX_BYTES = 1 << 20
_REPO = Path(__file__).resolve().parents[2]
#: Where the model's hand-chosen figures and options live: a citation here informs the model.
MODEL_PLACES = ("hardware", "stacks", "workbench/cost", "workbench/hw", "workbench/lowering",
                "workbench/scheduling", "workbench/platform", "workbench/mapper.py")  # fmt: skip


def publication(source_key: str) -> str:
    """The publication a source key belongs to: the key without a trailing version.

    >>> publication("trt-bert-demo-10-11"), publication("fa2-paper")
    ('trt-bert-demo', 'fa2-paper')
    """
    return re.sub(r"(-\d+)+$", "", source_key)


class PublicationEntry(StrictModel):
    """One publication in ``data/publications.yaml``."""

    cited_as: tuple[str, ...] = Field(
        default=(),
        description="Strings that name its source document where the model cites it (a "
        "repository path, an arXiv id); its row ids are searched for too.",
    )
    informed: tuple[str, ...] = Field(
        default=(),
        description="Each hand-chosen figure or option it informed, with where it lives; "
        "empty: nothing (fits solved from its rows are added by the code).",
    )


class _PublicationsFile(StrictModel):
    schema_version: Literal[1] = Field(description="Version of this file's schema.")
    publications: dict[str, PublicationEntry] = Field(
        description="Publication name (source key without its version) -> entry."
    )


def load_publications(path: Path = PUBLICATIONS_PATH) -> dict[str, PublicationEntry]:
    """The declared publications (default: the shipped ``data/publications.yaml``).

    Raises:
        CorpusError: Unreadable file or invalid content, in one line naming the file.
    """
    try:
        data = load_strict(read_text_bounded(path, _MAX_BYTES, what="publications file"))
        check_data(data)
        return dict(_PublicationsFile.model_validate(data).publications)
    except (CorpusError, StrictYamlError) as exc:
        raise CorpusError(f"{path}: {exc}") from None
    except ValidationError as exc:
        raise CorpusError(f"{path}: {first_invalid(exc)}".replace("\n", " ")) from None
    except WorkbenchError as exc:
        raise CorpusError(str(exc)) from None


def informed(
    rows: Iterable[PublishedRow],
    fit_rows: Mapping[str, Iterable[str]],
    entries: Mapping[str, PublicationEntry],
) -> dict[str, tuple[str, ...]]:
    """Publication -> what it informed (declared figures, then the fits solved from its rows).

    Args:
        rows: The corpus rows.
        fit_rows: Fit name -> the row ids it may be solved from.
        entries: The declared publications (:func:`load_publications`).

    Returns:
        Every publication of ``rows``; an empty tuple: it informed nothing. A publication that
        ``publications.yaml`` does not declare counts as informed (``undeclared``) until it is,
        so that rows added elsewhere flow through (a golden test asks for the declaration).
    """
    pub_of = {r.id: publication(r.source_key) for r in rows}
    out: dict[str, list[str]] = {}
    for pub in dict.fromkeys(pub_of.values()):
        entry = entries.get(pub)
        out[pub] = list(entry.informed) if entry is not None else [UNDECLARED]
    for name, ids in fit_rows.items():
        for pub in dict.fromkeys(pub_of[i] for i in ids if i in pub_of):
            out[pub].append(f"fit {name}")
    return {p: tuple(v) for p, v in out.items()}


def citations(entry: PublicationEntry, row_ids: Iterable[str], root: Path = _REPO) -> list[str]:
    """Files among :data:`MODEL_PLACES` under ``root`` citing a publication.

    Args:
        entry: Its declaration (the ``cited_as`` strings are searched for).
        row_ids: Its rows' ids (searched for too).
        root: The repository root.

    Returns:
        Paths relative to ``root``, sorted by place.
    """
    needles = [*entry.cited_as, *row_ids]
    out = []
    for place in MODEL_PLACES:
        base = root / place
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for f in files:
            if f.suffix not in (".py", ".yaml", ".json") or not f.is_file():
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            if any(n in text for n in needles):
                out.append(str(f.relative_to(root)))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class FirstContact:
    """One publication's rows at the commit it entered the corpus.

    Attributes:
        commit: The model's commit (40 hex digits) the rows were first predicted at.
        date: UTC date of the record, ISO format.
        rows: Row id -> (category, signed error predicted / measured - 1, leave-one-source-out).
    """

    commit: str
    date: str
    rows: Mapping[str, tuple[str, float]]


def load_first_contact(path: Path = FIRST_CONTACT_PATH) -> dict[str, FirstContact]:
    """Publication -> its :class:`FirstContact` (an absent file: none recorded).

    Raises:
        CorpusError: A corrupt, foreign or newer file, in one line naming it.
    """
    if not path.exists():
        return {}
    try:
        doc = json.loads(read_text_bounded(path, _MAX_BYTES, what="first-contact record"))
    except (WorkbenchError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({exc})".replace("\n", " ")) from None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise CorpusError(f"{path}: not a first-contact record of schema_version 1")
    try:
        return {p: _contact(v) for p, v in doc["publications"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorpusError(f"{path}: malformed record ({type(exc).__name__}: {exc})") from None


def _contact(v: dict[str, Any]) -> FirstContact:
    commit = str(v["commit"])
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ValueError(f"commit {commit!r} is not 40 hex digits")
    rows = {}
    for rid, r in v["rows"].items():
        err = float(r["error"])
        if r["category"] not in CATEGORIES or not (-1.0 < err < 1e6):
            raise ValueError(f"row {rid!r}: bad category or error")
        rows[str(rid)] = (str(r["category"]), err)
    if not rows:
        raise ValueError("no rows")
    return FirstContact(commit=commit, date=str(v["date"]), rows=rows)


def record_first_contact(
    pub: str,
    results: Iterable[RowResult],
    commit: str,
    path: Path = FIRST_CONTACT_PATH,
    today: datetime.date | None = None,
) -> FirstContact:
    """Record publication ``pub``'s rows' errors at ``commit``, once (atomically).

    Args:
        pub: The publication (:func:`publication` of its rows' source keys).
        results: Every row's leave-one-source-out result (the rows of ``pub`` are kept).
        commit: The model's commit, 40 hex digits.
        path: The record file.
        today: Date of the record (default: today, UTC).

    Returns:
        The new record.

    Raises:
        CorpusError: ``pub`` has no rows, is already recorded, or the file is unreadable.
    """
    old = load_first_contact(path)
    if pub in old:
        raise CorpusError(
            f"{path}: {pub!r} was first contacted at {old[pub].commit[:12]}; a first contact is "
            "recorded once"
        )
    mine = [r for r in results if publication(r.source_key) == pub]
    if not mine:
        raise CorpusError(f"--record-first-contact {pub}: no corpus row belongs to it")
    day = (today or datetime.datetime.now(datetime.UTC).date()).isoformat()
    doc: dict[str, Any] = {"schema_version": 1, "publications": {}}
    if path.exists():
        doc = json.loads(read_text_bounded(path, _MAX_BYTES, what="first-contact record"))
    doc["publications"][pub] = {
        "commit": commit,
        "date": day,
        "rows": {
            r.id: {
                "category": r.category,
                "error": r.error,
                "predicted": r.predicted,
                "measured": r.measured,
                "unit": r.unit,
            }
            for r in mine
        },
    }
    entry = _contact(doc["publications"][pub])
    write_text_safely(path, json.dumps(doc, indent=1, sort_keys=True) + "\n", what="record")
    return entry


def first_contact_medians(
    records: Mapping[str, FirstContact],
) -> tuple[float | None, dict[str, tuple[float, int]]]:
    """Median |error| over every first-contact row, and per category (median, rows)."""
    errs: dict[str, list[float]] = {}
    for rec in records.values():
        for cat, err in rec.rows.values():
            errs.setdefault(cat, []).append(abs(err))
    every = [e for v in errs.values() for e in v]
    cats = {c: (statistics.median(errs[c]), len(errs[c])) for c in CATEGORIES if c in errs}
    return (statistics.median(every) if every else None), cats


def model_commit(root: Path = _REPO) -> str:
    """The commit the model is at: ``git rev-parse HEAD``, refused with model changes uncommitted.

    A first contact must name the model that made the predictions, so every tracked file that
    differs from ``HEAD`` must be corpus data (``workbench/fidelity/data/``: the new rows).

    Raises:
        CorpusError: No git checkout, or a tracked file outside the corpus data is modified.
    """
    try:
        head = _git(root, "rev-parse", "HEAD").strip()
        dirty = _git(root, "diff", "--name-only", "HEAD").split()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CorpusError(f"{root}: cannot tell the model's commit with git ({exc})") from None
    model = [f for f in dirty if not f.startswith("workbench/fidelity/data/")]
    if model:
        raise CorpusError(
            f"{model[0]} differs from commit {head[:12]}: commit model changes before recording a "
            "first contact, so that the record names the model that made the predictions"
        )
    return head


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True, timeout=30
    ).stdout
