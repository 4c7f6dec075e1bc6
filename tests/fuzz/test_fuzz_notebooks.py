"""Hostile lesson notebooks for ``workbench grade`` (issue 28).

A notebook a student hands in can be truncated, re-typed by hand or from another tool. Grading
either reports (exit 0) or refuses in one line naming the file (exit 2), and writes nothing on a
refusal. Stubs stay unattempted here, so nothing is executed; ``attempted`` is fuzzed alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from fuzz_contract import HOSTILE_VALUES, assert_contract, fresh, hostile_values, run_cli
from hypothesis import given
from hypothesis import strategies as st

from workbench.exercises.grading import attempted

LESSON = Path(__file__).resolve().parents[2] / "lessons" / "03-tiling-and-wave-quantization.ipynb"
DOC = json.loads(LESSON.read_text())
N = len(DOC["cells"])

# The exercise stubs and their check cells: a value written over their source may read as an
# answer, which grading runs (slow, and not this test's subject: ``attempted`` is fuzzed alone).
STUBS = {i for i, c in enumerate(DOC["cells"]) if "exercise" in c["metadata"].get("tags", [])}
STUBS |= {next(j for j in range(i + 1, N) if DOC["cells"][j]["cell_type"] == "code") for i in STUBS}

# where a hostile value goes: (cell index or None for the top level, key)
PLACES = st.one_of(
    st.tuples(st.none(), st.sampled_from(("nbformat", "nbformat_minor", "metadata", "cells"))),
    st.tuples(
        st.integers(0, N - 1),
        st.sampled_from(("cell_type", "metadata", "outputs", "id", "execution_count")),
    ),
    st.tuples(st.sampled_from(sorted(set(range(N)) - STUBS)), st.just("source")),
)


@given(places=st.lists(st.tuples(PLACES, hostile_values), min_size=1, max_size=3))
def test_hostile_fields_are_graded_or_refused_in_one_line(tmp_path, places):
    doc = json.loads(json.dumps(DOC))
    for (cell, key), value in places:
        cells = doc.get("cells")
        target = doc
        if cell is not None and isinstance(cells, list) and cells:
            pick = cells[cell % len(cells)]
            target = pick if isinstance(pick, dict) else doc
        target[key] = value
    path = fresh(tmp_path, "student.ipynb")
    path.write_text(json.dumps(doc, default=str))
    out = fresh(tmp_path, "grades.json")
    outcome = assert_contract(
        run_cli("grade", str(path), "--format", "json", "--output", str(out)),
        names=(str(path),),
        outputs=(out,),
    )
    if outcome.code == 0:
        report = json.loads(out.read_text())
        assert all(t["output"] == "not attempted" for t in report["tests"])


BODY = LESSON.read_bytes().rstrip()  # NOTE: cutting only the final newline leaves valid JSON


@given(cut=st.integers(0, len(BODY) - 1))
def test_truncated_notebooks_are_refused_in_one_line(tmp_path, cut):
    path = fresh(tmp_path, "cut.ipynb")
    path.write_bytes(BODY[:cut])
    assert assert_contract(run_cli("grade", str(path)), names=(str(path),)).code == 2


@given(stub=st.one_of(st.text(max_size=60), st.sampled_from([str(v) for v in HOSTILE_VALUES])),
       check=st.text(max_size=40))  # fmt: skip
def test_attempted_reads_any_text(stub, check):
    assert attempted(stub, check) in (True, False)
