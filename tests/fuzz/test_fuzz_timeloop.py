"""Mutants of Timeloop's spec files (arch, problem, mapping, ERT, constraints) under the CLI.

One line of a shipped exercise file is replaced by a hostile value, deleted or repeated: the
``dataflow`` command either models it (exit 0, finite figures) or exits 2 with one line naming
the file or what was wrong, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from fuzz_contract import (
    assert_contract,
    assert_sane_numbers,
    fresh,
    hostile_values,
    read_json,
    run_cli,
)
from hypothesis import given
from hypothesis import strategies as st

DATA = Path(__file__).parents[1] / "data" / "timeloop"
EX04 = DATA / "04-model-conv1d+oc-3levelspatial"
EX05 = DATA / "05-mapper-conv1d+oc-3level"
MODEL_FILES = {
    "arch": EX04 / "arch/3levelspatial.arch.yaml",
    "problem": EX04 / "prob/conv1d+oc+ic.prob.yaml",
    "mapping": EX04 / "map/conv1d+oc+ic-3levelspatial-kp-ws.map.yaml",
    "ert": EX04 / "ref-output/kp/timeloop-model.ERT.yaml",
    "art": EX04 / "ref-output/kp/timeloop-model.ART.yaml",
}
SEARCH_FILES = {
    "arch": EX05 / "arch/3level.arch.yaml",
    "problem": EX05 / "prob/conv1d+oc.prob.yaml",
    "constraints": EX05 / "constraints/conv1d+oc-3level-freebypass.constraints.yaml",
    "ert": EX05 / "ref-output/freebypass/timeloop-mapper.ERT.yaml",
}


def _scalar(value: object) -> str:
    """``value`` as YAML flow text (what a careless hand might type there)."""
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True)
    return text.replace("\n...\n", "").strip().replace("\n", " ")


def _mutant(text: str, line: int, action: str, value: object) -> str:
    lines = text.splitlines()
    i = line % len(lines)
    if action == "delete":
        del lines[i]
    elif action == "repeat":
        lines.insert(i, lines[i])
    elif ":" in lines[i]:
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: {_scalar(value)}"
    else:
        lines[i] = f"{lines[i].split('-')[0]}- {_scalar(value)}"
    return "\n".join(lines) + "\n"


def _argv(files: dict[str, Path], which: str, path: Path) -> list[str]:
    args = []
    for kind, original in files.items():
        args += [f"--{kind}", str(path if kind == which else original)]
    return args


@given(
    which=st.sampled_from(sorted(MODEL_FILES)),
    line=st.integers(min_value=0, max_value=400),
    action=st.sampled_from(("replace", "replace", "delete", "repeat")),
    value=hostile_values,
)
def test_model_mutants_model_or_fail_in_one_line(tmp_path, which, line, action, value) -> None:
    """``dataflow model`` on a mutated file: exit 0 with finite figures, or one line."""
    path = fresh(tmp_path, f"{which}.yaml")
    path.write_text(_mutant(MODEL_FILES[which].read_text(), line, action, value))
    out = fresh(tmp_path, "out.json")
    argv = ["dataflow", "model", *_argv(MODEL_FILES, which, path), "--format", "json"]
    outcome = assert_contract(
        run_cli(*argv, "--output", str(out)),
        names=(str(path), "mapping", "ERT", "model"),
        outputs=(out,),
    )
    if outcome.code == 0:
        doc = read_json(out)
        assert_sane_numbers(doc)
        assert doc["cycles"] > 0
        assert doc["energy_pj"] >= 0


@given(
    which=st.sampled_from(sorted(SEARCH_FILES)),
    line=st.integers(min_value=0, max_value=400),
    action=st.sampled_from(("replace", "delete", "repeat")),
    value=hostile_values,
)
def test_search_mutants_search_or_fail_in_one_line(tmp_path, which, line, action, value) -> None:
    """``dataflow search`` on a mutated file: exit 0 with finite figures, or one line."""
    _search_mutant(
        tmp_path, SEARCH_FILES, which, _mutant_text(SEARCH_FILES, which, line, action, value), 40
    )


def _mutant_text(files: dict, which: str, line: int, action: str, value: str) -> str:
    """``files[which]``'s text with one line replaced, deleted or repeated."""
    return _mutant(files[which].read_text(), line, action, value)


def _search_mutant(tmp_path, files: dict, which: str, text: str, budget: int) -> None:
    """``dataflow search`` with ``files[which]`` replaced by ``text``: the bad-input contract."""
    path = fresh(tmp_path, f"{which}.yaml")
    path.write_text(text)
    out = fresh(tmp_path, "out.json")
    argv = ["dataflow", "search", *_argv(files, which, path), "--budget", str(budget)]
    outcome = assert_contract(
        run_cli(*argv, "--format", "json", "--output", str(out)),
        names=(str(path), "constraints", "ERT", "model", "objective"),
        outputs=(out,),
    )
    if outcome.code == 0:
        assert_sane_numbers(read_json(out))


DESIGN = DATA.parent / "timeloop_designs"
MESH_FILES = {
    "arch": DESIGN / "simple_output_stationary/arch.yaml",
    "problem": DESIGN / "_include/default_problem.yaml",
    "ert": DESIGN / "simple_output_stationary/ref_outputs/default_problem/timeloop-mapper.ERT.yaml",
}


@given(
    which=st.sampled_from(sorted(MESH_FILES)),
    line=st.integers(min_value=0, max_value=400),
    action=st.sampled_from(("replace", "delete", "repeat")),
    value=hostile_values,
)
def test_mesh_design_mutants_search_or_fail_in_one_line(
    tmp_path, which, line, action, value
) -> None:
    """A 16 x 16 mesh design (split constraint, !Parallel registers, a problem with keys
    Timeloop ignores) mutated: ``dataflow search`` exits 0 with finite figures, or one line."""
    _search_mutant(
        tmp_path, MESH_FILES, which, _mutant_text(MESH_FILES, which, line, action, value), 30
    )


TLA = DATA.parent / "timeloop_accelergy"
TLA_FILES = {
    "arch": TLA / "arch/arch.yaml",
    "problem": TLA / "prob/prob.yaml",
    "mapping": TLA / "ref-output/intmac/timeloop-mapper.map.yaml",
    "ert": TLA / "ref-output/intmac/timeloop-mapper.ERT.yaml",
}
TLA_VALUES = ("mac_class=intmac", "input_weight_datawidth=8", "psum_datawidth=16")


@given(
    line=st.integers(min_value=0, max_value=120),
    action=st.sampled_from(("replace", "replace", "delete", "repeat")),
    value=hostile_values | st.sampled_from(("{{ x }}", "{% if 1 %}", "WIDE * 0", "max(", "1/0")),
)
def test_templated_arch_mutants_model_or_fail_in_one_line(tmp_path, line, action, value) -> None:
    """The templated arch (variables, {{ }}, arithmetic) mutated: model it, or one line."""
    path = fresh(tmp_path, "arch.yaml")
    path.write_text(_mutant(TLA_FILES["arch"].read_text(), line, action, value))
    out = fresh(tmp_path, "out.json")
    values = [arg for v in TLA_VALUES for arg in ("--var", v)]
    argv = ["dataflow", "model", *_argv(TLA_FILES, "arch", path), *values, "--format", "json"]
    outcome = assert_contract(
        run_cli(*argv, "--output", str(out)),
        names=(str(path), "mapping", "ERT", "model"),
        outputs=(out,),
    )
    if outcome.code == 0:
        assert_sane_numbers(read_json(out))
