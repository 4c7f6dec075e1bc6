import json

import pytest

from workbench.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def eager(tmp_path_factory):
    folder = tmp_path_factory.mktemp("eager")
    assert main(["scenario", "eager-launch", "--out", str(folder)]) == 0
    return folder


def test_scenario_list_json(capsys):
    code, out, _ = run(capsys, "scenario", "list", "--format", "json")
    assert code == 0
    names = {r["name"] for r in json.loads(out)}
    assert len(names - {"unchanged"}) >= 6


def test_scenario_writes_records_and_readme_without_answer(eager):
    readme = (eager / "README.md").read_text()
    assert (eager / "baseline.json").is_file()
    assert (eager / "candidate.json").is_file()
    assert "launch_sync_overhead" not in readme
    assert "runtime systems engineer" not in readme


def test_unknown_scenario_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "scenario", "nope", "--out", tmp_path)
    assert code == 2
    assert "unknown" in err


def test_triage_refuses_mismatch_exit_1(capsys, eager):
    code, out, _ = run(capsys, "triage", eager / "baseline.json", eager / "candidate.json")
    assert code == 1
    assert "REFUSED" in out
    assert "runtime.launch" in out


def test_triage_json_contract_and_rollback_exit_1(capsys, eager):
    code, out, _ = run(
        capsys,
        "triage",
        eager / "baseline.json",
        eager / "candidate.json",
        "--changed",
        "runtime",
        "--format",
        "json",
    )
    doc = json.loads(out)
    assert code == 1  # roll back
    from workbench.review import JSON_KEYS

    assert tuple(doc) == JSON_KEYS
    assert JSON_KEYS[-1] == "decision"
    assert doc["first_failing"]["mechanism"] == "launch_sync_overhead"
    assert doc["decision"]["action"] == "roll back"


def test_triage_same_record_ships_exit_0(capsys, eager):
    code, out, _ = run(capsys, "triage", eager / "baseline.json", eager / "baseline.json")
    assert code == 0
    assert "decision: ship" in out


def test_triage_bad_inputs_exit_2(capsys, eager, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    code, _, err = run(capsys, "triage", bad, eager / "candidate.json")
    assert code == 2
    assert "bad.json" in err
    assert err.count("\n") == 1
    owners = tmp_path / "o.yaml"
    owners.write_text("schema_version: 2\nroles: []\n")
    code, _, err = run(
        capsys, "triage", eager / "baseline.json", eager / "baseline.json", "--owners", owners
    )
    assert code == 2
    assert "o.yaml: schema_version" in err


def test_run_writes_record(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, _ = run(
        capsys, "run", "--model", "gpt2", "--seq", "128", "--launch", "eager", "--record", path
    )
    assert code == 0
    assert "wrote" in out
    data = json.loads(path.read_text())
    assert data["tags"]["runtime"]["launch"] == "eager"
    assert data["measurement"] is None


def test_run_execute_measures_a_capped_sample(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, _out, _ = run(
        capsys, "run", "--model", "mlp", "--record", path, "--execute", "--backend", "numpy"
    )
    assert code == 0
    data = json.loads(path.read_text())
    m = data["measurement"]
    assert m["backend"] == "numpy"
    assert m["kernels"]
    assert "scaled" in m["method"]
    assert data["tags"]["hardware"]["host"]
    measured = [k for k in data["kernels"] if k["measured_s"] is not None]
    assert measured
    assert all(k["measured_s"] > 0 for k in measured)


def test_run_execute_record_loads_back_and_triages(capsys, tmp_path):
    from workbench.review import load_record, triage

    path = tmp_path / "measured.json"
    code, out, _ = run(
        capsys, "run", "--model", "gpt2", "--seq", "64", "--hardware", "h100-sxm",
        "--execute", "--backend", "numpy", "--record", path,
    )  # fmt: skip
    assert code == 0, out
    record = load_record(path)
    assert record.measurement is not None
    assert record.measurement.kernels
    assert all(isinstance(k, str) for k in record.measurement.kernels)
    assert any(k.measured_s for k in record.kernels)
    report = triage(record, record, simulate=False)
    assert report.comparable
    code, out, _ = run(capsys, "triage", path, path)
    assert code in (0, 1)
    assert "decision:" in out


def test_triage_without_p99_cannot_sign_off_exit_1(capsys, tmp_path):
    path = tmp_path / "mlp.json"
    assert run(capsys, "run", "--model", "mlp", "--record", path)[0] == 0
    code, out, _ = run(capsys, "triage", path, path)
    assert code == 1
    assert "decision: cannot sign off" in out
    assert "cannot sign off: missing p99 latency" in out
