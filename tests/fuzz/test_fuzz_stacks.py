"""Mutants of a software stack (``stacks/*.yaml``): one figure replaced, removed or added.

A stack is loaded with the hardware schema's strictness (issue 30): a mutant either maps a decode
step with finite, sane figures, or the command exits 2 with one line naming the stack file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from fuzz_contract import (
    assert_contract,
    assert_sane_mapping,
    fresh,
    hostile_values,
    read_json,
    run_cli,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench.hw.stack as stack_module
from workbench.hw.stack import stacks_dir

NAMES = ("vllm", "tensorrt-llm-0.5", "pytorch-eager")
BASES = {n: yaml.safe_load((stacks_dir() / f"{n}.yaml").read_text()) for n in NAMES}
#: Values a figure's ``value`` or ``rows`` may be given, beyond the fuzz suite's hostile ones.
EXTRA = (1e-300, 5e-324, 1e-4, 0.5, 1.0, True, 1, "last", "fa2", [], ["no-such-row"],
         ["../../etc/passwd"], ["a", "a"], [7])  # fmt: skip
FIGURES = st.one_of(hostile_values, st.sampled_from(EXTRA))


def _folder(tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    """A fresh copy of the shipped stacks with ``name`` replaced by ``doc``."""
    folder = fresh(tmp_path, "stacks")
    folder.mkdir()
    for path in stacks_dir().glob("*.yaml"):
        (folder / path.name).write_bytes(path.read_bytes())
    text = yaml.safe_dump(doc, allow_unicode=True)
    (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder


def _mutant(name: str, field: str, key: str, value: Any, action: str) -> dict[str, Any]:
    doc = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASES[name].items()}
    if action == "delete":
        doc.pop(field, None)
    elif field in ("schema_version", "name", "description", "sources"):
        doc[field] = value
    else:
        figure = dict(doc.get(field) or {"assumption": "a figure the fuzzer added"})
        figure[key] = value
        doc[field] = figure
    return doc


FIELDS = sorted(stack_module.Stack.model_fields)


@settings(max_examples=20, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    field=st.sampled_from(FIELDS),
    key=st.sampled_from(("value", "rows", "fitted", "source")),
    value=FIGURES,
    action=st.sampled_from(("replace", "replace", "delete")),
)
def test_stack_mutants_map_or_fail_in_one_line(
    tmp_path, monkeypatch, name, field, key, value, action
):
    folder = _folder(tmp_path, name, _mutant(name, field, key, value, action))
    monkeypatch.setattr(stack_module, "stacks_dir", lambda: Path(folder))
    out = fresh(tmp_path, "map.json")
    argv = ["map", "--model", "gpt2", "--hardware", "h100-sxm", "--phase", "decode", "--seq",
            "64", "--stack", name, "--format", "json", "--output", str(out)]  # fmt: skip
    outcome = assert_contract(run_cli(*argv), names=(f"{name}.yaml", "stack"), outputs=(out,))
    if outcome.code == 0:
        doc = read_json(out)
        assert_sane_mapping(doc)
        assert doc["totals"]["time_s"] < 10, doc["totals"]  # gpt2 decode: milliseconds


def test_a_tiny_decode_bandwidth_is_refused_not_an_absurd_time(tmp_path, monkeypatch):
    for tiny in (1e-300, 5e-324):
        doc = _mutant("vllm", "decode_bandwidth_fraction", "value", tiny, "replace")
        folder = _folder(tmp_path, "vllm", doc)
        monkeypatch.setattr(stack_module, "stacks_dir", lambda f=folder: Path(f))
        outcome = assert_contract(
            run_cli("map", "--model", "gpt2", "--phase", "decode", "--stack", "vllm"),
            names=("vllm.yaml: decode_bandwidth_fraction.value",),
        )
        assert outcome.code == 2


@settings(max_examples=15, deadline=None)
@given(
    value=st.one_of(FIGURES, st.floats(min_value=-1.0, max_value=2.0)),
    action=st.sampled_from(("replace", "replace", "delete")),
)
def test_a_memory_reserve_mutant_states_a_sane_headroom_or_fails_in_one_line(
    tmp_path, monkeypatch, value, action
):
    """Issue 32: map's memory line holds back the stack's reserve: never NaN, never negative."""
    doc = _mutant("vllm", "memory_reserve_fraction", "value", value, action)
    folder = _folder(tmp_path, "vllm", doc)
    monkeypatch.setattr(stack_module, "stacks_dir", lambda: Path(folder))
    outcome = assert_contract(
        run_cli("map", "--model", "gpt2", "--phase", "decode", "--seq", "64", "--stack", "vllm"),
        names=("vllm.yaml",),
    )
    if outcome.code == 0:
        line = next(x for x in outcome.out.splitlines() if x.startswith("memory"))
        assert not re.search(r"\b(nan|inf)\b", line.lower()), line
        assert not re.search(r"-\d", line), line  # no negative figure
        assert line.endswith(": fits")  # gpt2 fits one H100 with any reserve under 50%
