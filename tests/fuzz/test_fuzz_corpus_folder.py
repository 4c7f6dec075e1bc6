"""Entries of the published corpus folder (``published.d``) that are no small regular YAML file.

A named pipe, a link to a device, a huge (sparse) file, a folder named ``*.yaml``, a dangling
link, bytes that are no UTF-8 or no corpus: ``validate --published`` exits 2 at once with one
line naming the entry (issue 30), never blocks and never reads past the size cap.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from fuzz_contract import assert_contract, fresh, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench.fidelity.schema as corpus_schema

#: The smallest shipped row file stands in for ``published.yaml`` (the check runs per file).
SMALL = corpus_schema.EXTRA_DIR / "ukri-babelstream.yaml"
KINDS = ("fifo", "dev-zero", "dev-null", "huge", "folder", "dangling", "bytes", "duplicate")


def _entry(path: Path, kind: str, data: bytes) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("dev-zero", "dev-null"):
        path.symlink_to(f"/dev/{kind.removeprefix('dev-')}")
    elif kind == "huge":
        with path.open("wb") as f:
            f.truncate(corpus_schema.MAX_CORPUS_FILE_BYTES + 1 + len(data))
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(path.with_name("missing"))
    elif kind == "duplicate":
        path.write_bytes(SMALL.read_bytes() + data[:0])
    else:
        path.write_bytes(b"\xff" + data)


def _timeout(*_: object) -> None:
    raise TimeoutError("validate --published blocked on a corpus entry")


@settings(max_examples=16, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=3),
    data=st.binary(max_size=64),
)
def test_corpus_folder_entries_are_one_line_and_never_block(tmp_path, monkeypatch, kinds, data):
    folder = fresh(tmp_path, "published.d")
    folder.mkdir()
    for i, kind in enumerate(kinds):
        _entry(folder / f"{i}-{kind}.yaml", kind, data)
    monkeypatch.setattr(corpus_schema, "DEFAULT_PATH", SMALL)
    monkeypatch.setattr(corpus_schema, "EXTRA_DIR", folder)
    previous = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(20)
    try:
        outcome = assert_contract(
            run_cli("validate", "--published"), names=tuple(f"{i}-{k}" for i, k in enumerate(kinds))
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert outcome.code == 2
