"""What each publication informed, first contact, and the independence figures (issue 27).

Data: workbench/fidelity/data/publications.yaml (declared by hand, checked against where the
model cites each publication) and data/first_contact.json (written by
``workbench validate --published --record-first-contact PUBLICATION``).
"""

import datetime
import json
import subprocess

import pytest

from workbench.cli import main
from workbench.fidelity import CorpusError, load_corpus, parse_corpus, run_corpus
from workbench.fidelity.fits import FITS
from workbench.fidelity.independence import independence
from workbench.fidelity.provenance import (
    UNDECLARED,
    PublicationEntry,
    citations,
    informed,
    load_first_contact,
    load_publications,
    model_commit,
    publication,
    record_first_contact,
)

ROW = """
- id: gemm.{key}.{n}
  category: gemm
  split: heldout
  source: "Example paper, Table 1, row {n}"
  source_key: {key}
  source_tag: V
  hardware: h100-sxm
  stack: cublas
  setup: {{kind: gemm, m: 4096, n: 4096, k: {k}, dtype: bf16, software: cuBLAS}}
  measured: {measured}
  unit: TFLOP/s
  expected_bottleneck: compute
  approximation: "One Linear through the mapper."
"""
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _corpus(*rows):
    text = "".join(
        ROW.format(key=k, n=i, k=4096 * (i + 1), measured=m) for i, (k, m) in enumerate(rows)
    )
    return parse_corpus("schema_version: 1\nrows:\n" + text)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def small():
    c = _corpus(("paper-a", 700), ("paper-a", 650), ("paper-b-2", 500))
    return run_corpus(c)


# --- the shipped declarations ---------------------------------------------------------------
def test_every_publication_is_declared_and_no_declaration_is_stale(corpus):
    declared = load_publications()
    pubs = {publication(r.source_key) for r in corpus.rows}
    assert not pubs - set(declared), "declare them in workbench/fidelity/data/publications.yaml"
    assert not set(declared) - pubs, "declared publications with no corpus row"


def test_a_publication_that_informed_nothing_is_cited_nowhere_in_the_model(corpus):
    declared = load_publications()
    by_pub = informed(corpus.rows, {f.name: f.rows for f in FITS}, declared)
    nothing = [p for p, v in by_pub.items() if not v]
    assert nothing, "no publication informs nothing: the headline's key figure would be empty"
    for pub in nothing:
        ids = [r.id for r in corpus.rows if publication(r.source_key) == pub]
        assert not citations(declared[pub], ids), f"{pub} is cited: say what it informed"
    # a publication a fit is solved from informed that fit, whatever it declares
    assert any(v.startswith("fit ") for v in by_pub["pytorch-benchmark-sdpa"])


def test_a_cited_publication_must_say_what_it_informed(tmp_path):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "x.yaml").write_text("source: 'Example paper, Table 1'\n")
    entry = PublicationEntry(cited_as=("Example paper",))
    assert citations(entry, [], tmp_path) == ["stacks/x.yaml"]
    assert citations(PublicationEntry(), ["gemm.paper-a.0"], tmp_path) == []


def test_an_undeclared_publication_counts_as_informed(small):
    rows = _corpus(("paper-a", 700), ("paper-b-2", 500)).rows
    got = informed(rows, {"f": ("gemm.paper-a.0",)}, {"paper-b": PublicationEntry()})
    assert got == {"paper-a": (UNDECLARED, "fit f"), "paper-b": ()}


def test_a_bad_publications_file_is_one_line(tmp_path):
    bad = tmp_path / "publications.yaml"
    for text, said in (
        ("schema_version: 1\npublications:\n  a: {informed: [x], colour: red}\n", "colour"),
        ("schema_version: 2\npublications: {}\n", "schema_version"),
        ("schema_version: 1\npublications:\n  a: {}\n  a: {}\n", "duplicate"),
    ):
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(CorpusError, match=said) as err:
            load_publications(bad)
        assert "\n" not in str(err.value)
        assert str(bad) in str(err.value)


# --- first contact --------------------------------------------------------------------------
def test_first_contact_is_recorded_once_and_reads_back(tmp_path, small):
    path = tmp_path / "first_contact.json"
    assert load_first_contact(path) == {}
    day = datetime.date(2026, 1, 2)
    rec = record_first_contact("paper-a", small.rows, COMMIT, path, today=day)
    assert set(rec.rows) == {"gemm.paper-a.0", "gemm.paper-a.1"}
    back = load_first_contact(path)
    assert back["paper-a"].commit == COMMIT
    assert back["paper-a"].date == "2026-01-02"
    errs = {r.id: r.error for r in small.rows}
    assert back["paper-a"].rows["gemm.paper-a.0"] == ("gemm", pytest.approx(errs["gemm.paper-a.0"]))
    record_first_contact("paper-b", small.rows, COMMIT, path, today=day)
    assert set(load_first_contact(path)) == {"paper-a", "paper-b"}
    with pytest.raises(CorpusError, match="recorded once"):
        record_first_contact("paper-a", small.rows, COMMIT, path, today=day)
    with pytest.raises(CorpusError, match="no corpus row"):
        record_first_contact("paper-z", small.rows, COMMIT, path, today=day)


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"schema_version": 2, "publications": {}}',
        '{"schema_version": 1, "publications": {"a": {"commit": "xyz", "date": "d", "rows": {}}}}',
        '{"schema_version": 1, "publications": {"a": {"commit": "' + COMMIT + '", "date": "d", '
        '"rows": {"r": {"category": "gemm", "error": "nan"}}}}}',
        '{"schema_version": 1, "publications": {"a": {"commit": "' + COMMIT + '", "date": "d", '
        '"rows": {"r": {"category": "speed", "error": 0.1}}}}}',
    ],
)
def test_a_corrupt_first_contact_record_is_one_line(tmp_path, text):
    path = tmp_path / "first_contact.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError) as err:
        load_first_contact(path)
    assert "\n" not in str(err.value)
    assert str(path) in str(err.value)


def test_the_shipped_first_contacts_name_corpus_rows_and_finite_errors(corpus):
    ids = {r.id: r for r in corpus.rows}
    records = load_first_contact()
    assert records, "at least one publication's first contact is recorded"
    for pub, rec in records.items():
        for rid, (cat, err) in rec.rows.items():
            assert rid in ids, rid
            assert publication(ids[rid].source_key) == pub
            assert ids[rid].category == cat
            assert -1.0 < err < 100.0


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_model_commit_refuses_uncommitted_model_changes(tmp_path):
    with pytest.raises(CorpusError, match="git"):
        model_commit(tmp_path)
    _git(tmp_path, "init", "-q")
    data = tmp_path / "workbench" / "fidelity" / "data"
    data.mkdir(parents=True)
    (data / "rows.yaml").write_text("a\n")
    (tmp_path / "model.py").write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m")
    head = model_commit(tmp_path)
    assert len(head) == 40
    (data / "rows.yaml").write_text("b\n")  # a new row: allowed
    assert model_commit(tmp_path) == head
    (tmp_path / "model.py").write_text("x = 2\n")
    with pytest.raises(CorpusError, match=r"model\.py differs"):
        model_commit(tmp_path)


def test_cli_records_a_first_contact(tmp_path, capsys, monkeypatch, small):
    import workbench.fidelity.crossval as crossval
    import workbench.fidelity.provenance as provenance

    class _CV:
        loso = small

    path = tmp_path / "first_contact.json"
    monkeypatch.setattr(provenance, "FIRST_CONTACT_PATH", path)
    monkeypatch.setattr(provenance, "model_commit", lambda: COMMIT)
    monkeypatch.setattr(provenance, "record_first_contact", _bound(record_first_contact, path))
    monkeypatch.setattr(crossval, "cross_validate", lambda: _CV)
    assert main(["validate", "--published", "--record-first-contact", "paper-a"]) == 0
    out = capsys.readouterr().out
    assert "first contact of paper-a at 0123456789ab: 2 rows" in out
    assert set(json.loads(path.read_text())["publications"]) == {"paper-a"}
    assert main(["validate", "--published", "--record-first-contact", "paper-a"]) == 2
    assert "recorded once" in capsys.readouterr().err
    assert main(["validate", "--record-first-contact", "paper-a"]) == 2
    assert "--published" in capsys.readouterr().err


def _bound(fn, path):
    return lambda pub, rows, commit: fn(pub, rows, commit, path)


# --- the independence figures ----------------------------------------------------------------
def test_independence_counts_moved_rows_and_splits_the_informed(small):
    moved = run_corpus(_corpus(("paper-a", 700), ("paper-a", 650), ("paper-b-2", 500)))
    rows = list(moved.rows)
    rows[0] = type(rows[0])(**{**_asdict(rows[0]), "predicted": rows[0].predicted * 1.1})
    loso = type(moved)(rows=tuple(rows), sources=moved.sources)
    ind = independence(loso, small, {"paper-a": ("fit f",), "paper-b": ()}, {})
    assert ind.changed["all"] == (1, 3)
    assert ind.changed["gemm"] == (1, 3)
    assert ind.uninformed["all"].rows == 1
    assert ind.uninformed["all"].median == pytest.approx(small.rows[2].abs_error)
    assert ind.informed["all"].rows == 2
    assert ind.first_contact["all"].median is None
    assert ind.first_contact["all"].cell() == "-"
    assert ind.uninformed_publications == ("paper-b",)


def _asdict(r):
    from dataclasses import asdict

    return asdict(r)
