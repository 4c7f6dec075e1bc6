"""Mutants of the files the workbench reads back: run records, plan caches, sweep results.

A mutated file is refused in one line (exit 2), or ignored with one warning line, or read as
valid; it never raises a traceback, never hangs, and a failed command leaves its output as it
was (issue 13).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from fuzz_contract import HOSTILE_VALUES, assert_contract, fresh, hostile_values, run_cli
from hypothesis import given
from hypothesis import strategies as st

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.review.records.store import _lock
from workbench.tuning._plan_check import mapspace_problem
from workbench.tuning.cache import PlanCache


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):
            out += _leaves(value, (*path, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = dict(doc) if isinstance(doc, dict) else list(doc)
    doc[path[0]] = _replace(doc[path[0]], path[1:], value)
    return doc


def _dump(doc: Any) -> str | None:
    try:  # NaN and Infinity are written as the non-standard literals a careless tool writes
        return json.dumps(doc)
    except (ValueError, OverflowError, TypeError):
        return None


# --- run records ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def record(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("records") / "base.json"
    outcome = run_cli("run", "--model", "mlp", "--hardware", "teaching", "--record", str(path))
    assert outcome.code == 0, outcome.err
    return path, json.loads(path.read_text())


RECORD_PATHS: list[tuple[Any, ...]] = []


@given(data=st.data(), relock=st.booleans(), value=hostile_values)
def test_record_mutants(tmp_path, record, data, relock, value):
    base_path, base = record
    paths = _leaves({k: v for k, v in base.items() if k != "lock"})
    path = data.draw(st.sampled_from(paths), label="field")
    doc = _replace(base, path, value)
    if relock:  # a forger who recomputes the unkeyed hash: the physics checks must still hold
        body = {k: v for k, v in doc.items() if k != "lock"}
        with contextlib.suppress(Exception):
            doc = {**body, "lock": _lock(body)}
    text = _dump(doc)
    if text is None:
        return
    cand = fresh(tmp_path, "cand.json")
    cand.write_text(text)
    assert_contract(
        run_cli("triage", str(base_path), str(cand)), names=(cand.name,), allowed=(0, 1, 2)
    )


@pytest.mark.parametrize("bad", [b"", b"{", b"[" * 100_000, b"\xff", b'{"time_s": NaN}', b"null"])
def test_record_text_mutants(tmp_path, record, bad):
    cand = tmp_path / "cand.json"
    cand.write_bytes(bad)
    outcome = assert_contract(run_cli("triage", str(record[0]), str(cand)), names=("cand.json",))
    assert outcome.code == 2


#: Text a forger puts in a tag: escapes, bells, OSC titles, bidi overrides, surrogates.
TAG_TEXT = st.one_of(
    st.sampled_from(("\x1b[2J", "\x07", "\x1b]0;pwn\x07", "\u202eevil", "a\nb", "\udcff", "x")),
    st.text(alphabet=st.characters(codec=None, categories=("Cc", "Cf", "Zl", "Zs")), max_size=4),
)
TAG_FIELDS = (
    ("compiler", "git_commit"), ("compiler", "search"), ("runtime", "backend"),
    ("hardware", "profile"), ("workload", "model"), ("workload", "dtype"),
    ("workload", "extra"), ("workload", "tp"),
)  # fmt: skip


@given(field=st.sampled_from(TAG_FIELDS), text=TAG_TEXT, where=st.sampled_from(("cand", "file")))
def test_forged_tags_and_file_names_never_reach_the_terminal_raw(
    tmp_path, record, field, text, where
):
    """A re-locked record with hostile tag text, or a hostile file name: one line or escaped."""
    import os

    base_path, base = record
    doc = json.loads(json.dumps(base))
    group, key = field
    if key == "tp":
        doc["tags"]["workload"]["extra"] = [["tensor_parallel", text or "x"]]
    elif key == "extra":
        doc["tags"]["workload"]["extra"] = [[text, text]]
    else:
        doc["tags"][group][key] = str(doc["tags"][group][key]) + text
    body = {k: v for k, v in doc.items() if k != "lock"}
    doc = {**body, "lock": _lock(body)}
    name = f"{len(os.listdir(tmp_path))}-c" + (text if where == "file" else "") + ".json"
    cand = Path(os.fsdecode(bytes(tmp_path) + b"/" + os.fsencode(name.replace("/", "_"))))
    try:
        cand.write_text(json.dumps(doc), encoding="utf-8")
    except (ValueError, OSError):  # NOTE: a NUL is no file name
        return
    pack = str(fresh(tmp_path, "p.md"))
    triage = ("triage", str(base_path), str(cand))
    for argv in (triage, ("review", *triage[1:], "--out", pack)):
        outcome = assert_contract(run_cli(*argv), allowed=(0, 1, 2))
        for stream in (outcome.out, outcome.err):
            raw = [ch for ch in ("\x1b", "\x07", "\u202e", "\udcff") if ch in stream]
            assert not raw, stream
            stream.encode("utf-8")


# --- plan caches ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    hw = load_hardware("teaching")
    mapping = map_model(build_graph("mlp"), hw)
    km = next(k for k in mapping.kernels if k.kernel.engine == "matrix")
    path = tmp_path_factory.mktemp("plans") / "plans.json"
    PlanCache(path).put("key", km.tiling, 1e-3, label=km.kernel.name)
    return path, json.loads(path.read_text()), km, hw


@given(data=st.data(), value=hostile_values)
def test_plan_cache_mutants(tmp_path, plan, data, value):
    _, base, km, hw = plan
    field = data.draw(st.sampled_from(_leaves(base)), label="field")
    text = _dump(_replace(base, field, value))
    if text is None:
        return
    path = fresh(tmp_path, "plans.json")
    path.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hit = PlanCache(path).lookup("key", km.kernel, hw)
    for w in caught:
        assert "\n" not in str(w.message)
    if hit is not None:  # a trusted entry is a point the search could have chosen
        assert mapspace_problem(km.kernel, hw, hit[0]) == ""
        assert hit[1] > 0


# --- sweep results ----------------------------------------------------------------------------
SWEEP = ("sweep", "--hardware", "teaching", "--model", "mlp", "--batch", "1,2", "--workers", "1")


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("sweep") / "results.jsonl"
    outcome = run_cli(*SWEEP, "--out", str(path))
    assert outcome.code == 0, outcome.err
    return path.read_bytes()


@given(
    line=st.integers(0, 2),
    value=st.one_of(
        st.sampled_from([v for v in HOSTILE_VALUES if isinstance(v, str)]), st.binary(max_size=20)
    ),
    cut=st.integers(0, 400),
    how=st.sampled_from(("replace_line", "truncate", "append")),
)
def test_sweep_state_mutants(tmp_path, sweep_file, line, value, cut, how):
    lines = sweep_file.split(b"\n")
    text = value.encode() if isinstance(value, str) else value
    if how == "replace_line" and line < len(lines):
        lines[line] = text
        data = b"\n".join(lines)
    elif how == "truncate":
        data = sweep_file[: min(cut, len(sweep_file))]
    else:
        data = sweep_file + text + b"\n"
    path = fresh(tmp_path, "results.jsonl")
    path.write_bytes(data)
    outcome = assert_contract(run_cli(*SWEEP, "--out", str(path)), names=(path.name,))
    if outcome.code == 2:
        assert path.read_bytes() == data  # a refused resume leaves the file alone
