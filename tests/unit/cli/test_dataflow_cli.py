"""``workbench dataflow model|search`` on Timeloop's exercise files: JSON contract, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.scheduling.timeloop.reference import read_stats

DATA = Path(__file__).parents[2] / "data" / "timeloop"
EX04 = DATA / "04-model-conv1d+oc-3levelspatial"
EX05 = DATA / "05-mapper-conv1d+oc-3level"
MODEL = (
    "dataflow", "model",
    "--arch", str(EX04 / "arch/3levelspatial.arch.yaml"),
    "--problem", str(EX04 / "prob/conv1d+oc+ic.prob.yaml"),
    "--mapping", str(EX04 / "map/conv1d+oc+ic-3levelspatial-cp-ws.map.yaml"),
)  # fmt: skip
ERT = ("--ert", str(EX04 / "ref-output/cp/timeloop-model.ERT.yaml"))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_model_json_has_timeloops_figures(capsys) -> None:
    """cycles, utilization, energy_pj and edp_j_cycles as the reference stats print them."""
    code, out, _ = run(capsys, *MODEL, *ERT, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    ref = read_stats(EX04 / "ref-output/cp/timeloop-model.stats.txt")
    assert doc["cycles"] == ref.cycles
    assert doc["utilization"] == pytest.approx(ref.utilization)
    assert doc["energy_pj"] * 1e-6 == pytest.approx(ref.energy_uj, abs=0.006)
    assert doc["edp_j_cycles"] == pytest.approx(ref.edp_j_cycles, rel=0.01)
    glb = next(lv for lv in doc["levels"] if lv["name"] == "GlobalBuffer")
    assert glb["instances"] == 16
    assert glb["accesses"]["Inputs"] == {"reads": 1152, "fills": 36, "updates": 0}


def test_model_without_ert_prints_counts_and_no_energy(capsys) -> None:
    """No ERT: counts and cycles, energy null in JSON and absent from the table."""
    code, out, _ = run(capsys, *MODEL, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["energy_pj"] is None
    assert doc["edp_j_cycles"] is None
    code, out, _ = run(capsys, *MODEL)
    assert code == 0
    assert "cycles       3072" in out
    assert "energy" not in out


def test_search_writes_a_map_that_model_reads_back(capsys, tmp_path) -> None:
    """--write-map is a Timeloop mapping file; modelled, it gives the search's figures."""
    spec = tmp_path / "best.map.yaml"
    arch, prob = str(EX05 / "arch/3level.arch.yaml"), str(EX05 / "prob/conv1d+oc.prob.yaml")
    ert = str(EX05 / "ref-output/null/timeloop-mapper.ERT.yaml")
    common = ("--arch", arch, "--problem", prob, "--ert", ert, "--format", "json")
    code, out, _ = run(
        capsys, "dataflow", "search", *common, "--constraints",
        str(EX05 / "constraints/null.constraints.yaml"), "--budget", "300",
        "--write-map", str(spec),
    )  # fmt: skip
    assert code == 0
    found = json.loads(out)
    assert found["mapping_yaml"] == spec.read_text()
    assert "<< Compute >>" in found["map_txt"]
    code, out, _ = run(capsys, "dataflow", "model", *common, "--mapping", str(spec))
    assert code == 0
    again = json.loads(out)
    assert again["edp_j_cycles"] == found["edp_j_cycles"]
    assert again["cycles"] == found["cycles"]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("mapping:\n- target: Nowhere\n  type: temporal\n", "Nowhere"),
        ("mapping:\n- target: GlobalBuffer\n  type: temporal\n  factors: K=3\n", "multiply to"),
        ("mapping: [\n", "line"),
        ("mapping:\n- target: RegisterFile\n  type: temporal\n  factors: K=32 R=3 P=16 C=32\n",
         "RegisterFile"),
    ],
)  # fmt: skip
def test_bad_mapping_exits_2_with_one_line(capsys, tmp_path, text, names) -> None:
    """A malformed or impossible mapping: exit 2, one line naming the file and what."""
    bad = tmp_path / "bad.map.yaml"
    bad.write_text(text)
    argv = [*MODEL[:-2], "--mapping", str(bad), *ERT]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert str(bad) in lines[0]
    assert names in lines[0]


def test_dataflow_without_action_exits_2(capsys) -> None:
    """``workbench dataflow`` alone names the actions."""
    code, _, err = run(capsys, "dataflow")
    assert code == 2
    assert "model or search" in err


def test_search_energy_without_ert_exits_2(capsys) -> None:
    """Energy-delay needs the ERT: one line saying so."""
    code, _, err = run(
        capsys, "dataflow", "search", "--arch", str(EX05 / "arch/3level.arch.yaml"),
        "--problem", str(EX05 / "prob/conv1d+oc.prob.yaml"),
    )  # fmt: skip
    assert code == 2
    assert "--ert" in err


TLA = Path(__file__).parents[2] / "data" / "timeloop_accelergy"
TLA_MODEL = (
    "dataflow", "model",
    "--arch", str(TLA / "arch/arch.yaml"),
    "--problem", str(TLA / "prob/prob.yaml"),
    "--mapping", str(TLA / "ref-output/fpmac/timeloop-mapper.map.yaml"),
    "--ert", str(TLA / "ref-output/fpmac/timeloop-mapper.ERT.yaml"),
)  # fmt: skip
FPMAC = ("--var", "mac_class=fpmac", "--var", "input_weight_datawidth=32")


def test_templated_arch_modelled_with_var_values(capsys) -> None:
    """--var fills the arch's {{ }}: the fpmac variant reproduces Timeloop's cycles and EDP."""
    code, out, _ = run(capsys, *TLA_MODEL, *FPMAC, "--var", "psum_datawidth=32", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    ref = read_stats(TLA / "ref-output/fpmac/timeloop-mapper.stats.txt")
    assert doc["cycles"] == ref.cycles
    assert doc["edp_j_cycles"] == pytest.approx(ref.edp_j_cycles, rel=0.01)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ((), "arch.yaml:3: Jinja 'psum_datawidth' is undefined"),
        (("--var", "3x=1"), "argument --var"),
        (("--var", "psum_datawidth="), "argument --var"),
    ],
)
def test_templated_arch_without_a_value_is_one_line(capsys, extra, says) -> None:
    """A placeholder left without a value, or a bad --var, exits 2 naming it (and file:line)."""
    code, _, err = run(capsys, *TLA_MODEL, *FPMAC, *extra)
    assert code == 2
    assert says in err
    assert len(err.strip().splitlines()) == 1


def test_templated_arch_search_map_read_back_with_the_same_values(capsys, tmp_path) -> None:
    """search --var writes a mapping that model --var reads back to the same figures."""
    values = ("--var", "mac_class=intmac", "--var", "input_weight_datawidth=8")
    values += ("--var", "psum_datawidth=16")
    spec = ("--arch", str(TLA / "arch/arch.yaml"), "--problem", str(TLA / "prob/prob.yaml"))
    spec += ("--ert", str(TLA / "ref-output/intmac/timeloop-mapper.ERT.yaml"))
    path = tmp_path / "best.map.yaml"
    argv = ("dataflow", "search", *spec, *values, "--budget", "200", "--write-map", str(path))
    code, _, _ = run(capsys, *argv, "--format", "json", "--output", str(tmp_path / "s.json"))
    assert code == 0
    found = json.loads((tmp_path / "s.json").read_text())
    code, out, _ = run(capsys, "dataflow", "model", *spec, *values, "--mapping", str(path),
                       "--format", "json")  # fmt: skip
    assert code == 0
    assert json.loads(out)["edp_j_cycles"] == pytest.approx(found["edp_j_cycles"], rel=1e-12)
