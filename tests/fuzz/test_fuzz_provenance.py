"""Mutants of the provenance records (issue 27): ``first_contact.json`` and ``publications.yaml``.

Each mutant either loads into sane records (finite errors above -100%, known categories, a
40-digit commit) or is refused with one :class:`CorpusError` line naming the file; never a
traceback, never a NaN taken for an error.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from fuzz_contract import fresh, hostile_values
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.fidelity import CATEGORIES, CorpusError
from workbench.fidelity.provenance import (
    FIRST_CONTACT_PATH,
    PUBLICATIONS_PATH,
    load_first_contact,
    load_publications,
)

CONTACTS = json.loads(FIRST_CONTACT_PATH.read_text(encoding="utf-8"))
DECLARED = yaml.safe_load(PUBLICATIONS_PATH.read_text(encoding="utf-8"))
PUB = next(iter(CONTACTS["publications"]))
ROW = next(iter(CONTACTS["publications"][PUB]["rows"]))
#: Where a hostile value goes in the first-contact record (a path of keys).
SPOTS = (
    ("schema_version",),
    ("publications",),
    ("publications", PUB),
    ("publications", PUB, "commit"),
    ("publications", PUB, "date"),
    ("publications", PUB, "rows"),
    ("publications", PUB, "rows", ROW),
    ("publications", PUB, "rows", ROW, "error"),
    ("publications", PUB, "rows", ROW, "category"),
)


def _set(doc: Any, spot: tuple[str, ...], value: Any, delete: bool) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in spot[:-1]:
        node = node[key]
    if delete:
        node.pop(spot[-1], None)
    else:
        node[spot[-1]] = value
    return doc


def _one_line(err: CorpusError, path: Path) -> None:
    assert "\n" not in str(err)
    assert str(path) in str(err)


@settings(max_examples=60, deadline=None)
@given(spot=st.sampled_from(SPOTS), value=hostile_values, delete=st.booleans())
def test_first_contact_mutants_load_sanely_or_are_one_line(tmp_path, spot, value, delete):
    path = fresh(tmp_path, "first_contact.json")
    try:
        text = json.dumps(_set(CONTACTS, spot, value, delete), allow_nan=True)
    except (TypeError, ValueError):
        return  # NOTE: not representable as JSON: no such file can exist
    path.write_text(text, encoding="utf-8")
    try:
        records = load_first_contact(path)
    except CorpusError as err:
        _one_line(err, path)
        return
    for rec in records.values():
        assert len(rec.commit) == 40
        for cat, error in rec.rows.values():
            assert cat in CATEGORIES
            assert math.isfinite(error)
            assert error > -1.0


@settings(max_examples=40, deadline=None)
@given(
    field=st.sampled_from(("cited_as", "informed", "colour")),
    value=st.one_of(hostile_values, st.lists(hostile_values, max_size=3)),
)
def test_publication_mutants_load_or_are_one_line(tmp_path, field, value):
    doc = json.loads(json.dumps(DECLARED))
    name = next(iter(doc["publications"]))
    doc["publications"][name][field] = value
    path = fresh(tmp_path, "publications.yaml")
    try:
        path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    except (UnicodeEncodeError, yaml.YAMLError):
        return
    try:
        entries = load_publications(path)
    except CorpusError as err:
        _one_line(err, path)
        return
    assert all(isinstance(s, str) for s in entries[name].informed)
    assert all(isinstance(s, str) for s in entries[name].cited_as)
