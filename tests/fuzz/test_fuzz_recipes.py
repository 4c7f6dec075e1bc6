"""Mutants of a training recipe (``workbench/platform/recipes/*.yaml``): one field replaced or
dropped.

A mutant either costs a training step with finite, sane figures (every kernel time positive, MFU
<= HFU <= 1), or ``workbench train`` exits 2 with one line naming the recipe file, writing
nothing.
"""

from __future__ import annotations

from typing import Any

import yaml
from fuzz_contract import assert_contract, fresh, hostile_values, read_json, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.platform.recipe import TrainingRecipe, list_recipes, recipes_dir

BASES = {n: yaml.safe_load((recipes_dir() / f"{n}.yaml").read_text()) for n in list_recipes()}
EXTRA = (0, 1, 2, 3, 7, 64, 1 << 40, True, "none", "full", "selective", "fp8", "attention_core",
         {"tensor": 2}, {"data": 3}, {"data": True}, [], ["a"])  # fmt: skip
NESTED = {
    "parallelism": ("tensor", "pipeline", "data", "interleave", "sequence_parallel"),
    "overlap": ("tensor", "pipeline", "data"),
    "optimizer": ("name", "clip_grad_norm"),
}
FIELDS = sorted(TrainingRecipe.model_fields) + [f"{k}.{v}" for k, vs in NESTED.items() for v in vs]


def _mutant(name: str, field: str, value: Any, delete: bool) -> dict[str, Any]:
    doc = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASES[name].items()}
    head, _, leaf = field.partition(".")
    target = doc
    if leaf:
        target = doc.setdefault(head, {}) if isinstance(doc.get(head, {}), dict) else {}
        head = leaf
    if delete:
        target.pop(head, None)
    else:
        target[head] = value
    return doc


@settings(max_examples=int(__import__("os").environ.get("FUZZ_N", "15")), deadline=None)
@given(
    name=st.sampled_from(sorted(BASES)),
    field=st.sampled_from(FIELDS),
    value=st.one_of(hostile_values, st.sampled_from(EXTRA)),
    delete=st.booleans(),
)
def test_recipe_mutants_cost_a_step_or_fail_in_one_line(tmp_path, name, field, value, delete):
    path = fresh(tmp_path, f"{name}.yaml")
    doc = _mutant(name, field, value, delete)
    if field != "name":  # NOTE: a recipe file carries its own stem as its name
        doc["name"] = path.stem
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = fresh(tmp_path, "sheet.json")
    argv = ["train", "--model", "gpt2", "--hardware", "a100-80gb", "--seq", "128", "--recipe",
            str(path), "--format", "json", "--output", str(out)]  # fmt: skip
    outcome = assert_contract(run_cli(*argv), names=(path.name,), outputs=(out,))
    if outcome.code == 0:
        doc = read_json(out)
        assert all(k["time_s"] > 0 and k["calls"] > 0 for k in doc["kernels"]), doc["kernels"]
        u = doc["utilisation"]
        assert 0 < u["mfu"] <= u["hfu"] <= 1, u


def test_a_plan_the_model_cannot_take_names_the_recipe(tmp_path):
    doc = _mutant("fsdp-selective", "parallelism.pipeline", 40, delete=False)
    doc["parallelism"]["data"], doc["global_batch"] = 1, 1
    path = fresh(tmp_path, "deep.yaml")
    doc["name"] = path.stem
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    outcome = run_cli("train", "--model", "gpt2", "--seq", "128", "--recipe", str(path))
    assert_contract(outcome, names=(path.name,))
    assert outcome.code == 2
