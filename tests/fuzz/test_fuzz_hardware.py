"""Mutants of a hardware profile: one field replaced, removed or added (issue 13).

Each mutant is written as YAML and mapped by the CLI in-process: either the map succeeds with
finite, sane figures, or the command exits 2 with one line naming the file, and writes nothing.
"""

from __future__ import annotations

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
from hypothesis import given
from hypothesis import strategies as st

from workbench.hw.loader import builtin_dir

BASE = yaml.safe_load((builtin_dir() / "teaching.yaml").read_text())


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in the document (mappings, lists and scalars alike)."""
    out = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _leaves(value, (*path, i))
    return out


PATHS = _leaves(BASE)


def _mutate(doc: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        doc = dict(doc)
        if not rest and action == "delete":
            doc.pop(head, None)
        elif not rest and action == "add":
            doc[f"{head}_extra"] = value
        else:
            doc[head] = _mutate(doc[head], rest, action, value)
    else:
        doc = list(doc)
        if not rest and action == "delete":
            doc.pop(head)
        else:
            doc[head] = _mutate(doc[head], rest, action, value)
    return doc


mutants = st.tuples(
    st.sampled_from(PATHS), st.sampled_from(("replace", "replace", "delete", "add")), hostile_values
)


def _check(tmp_path: Path, doc: Any) -> None:
    try:
        text = yaml.safe_dump(doc, sort_keys=False)
    except (yaml.YAMLError, RecursionError):
        return  # not representable as YAML: nothing to feed the loader
    profile = fresh(tmp_path, "chip.yaml")
    profile.write_text(text)
    out = fresh(tmp_path, "map.json")
    argv = ("map", "--model", "mlp", "--hardware", str(profile), "--format", "json")
    outcome = assert_contract(
        run_cli(*argv, "--output", str(out)), names=(profile.name,), outputs=(out,)
    )
    if outcome.code == 0:
        assert_sane_mapping(read_json(out))


@given(mutant=mutants)
def test_one_field_mutants(tmp_path, mutant):
    path, action, value = mutant
    _check(tmp_path, _mutate(BASE, path, action, value))


@given(mutants=st.lists(mutants, min_size=2, max_size=5))
def test_several_field_mutants(tmp_path, mutants):
    doc = BASE
    for path, action, value in mutants:
        try:
            doc = _mutate(doc, path, action, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced the parent
    _check(tmp_path, doc)


def test_known_bad_profiles(tmp_path):
    sram = next(i for i, m in enumerate(BASE["memory"]) if m["kind"] == "sram")
    for path, value in (
        (("matrix_engine", "peak_flops_per_s", "bf16"), float("nan")),
        (("memory", 3, "latency_s"), float("inf")),
        (("matrix_engine", "cores"), True),
        (("matrix_engine", "cores"), "16"),
        (("memory", 3, "capacity_bytes"), 10**400),
        (("matrix_engine", "peak_flops_per_s"), {}),
        (("matrix_engine", "dataflows"), []),
        (("memory", sram, "capacity_bytes"), 1),
    ):
        profile = fresh(tmp_path, "chip.yaml")
        profile.write_text(yaml.safe_dump(_mutate(BASE, path, "replace", value)))
        outcome = run_cli("map", "--model", "mlp", "--hardware", str(profile))
        assert_contract(outcome, names=(profile.name,))
        assert outcome.code == 2, (path, value, outcome.out[:200])
