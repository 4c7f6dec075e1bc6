"""Triage and review of two traces state the steps their step time rests on (issue 26 point 2).

The window rule is the reader's own sentence (the one ``workbench trace`` prints), carried in the
record; the steady steps each side has, with a warning when fewer than 3 leave the interval
unpaired or absent; the reader's warnings (a last step left out) once when both traces share them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shaped_trace import MM, TENSOROP, write_shaped_trace

from workbench.cli import main
from workbench.evidence import read_trace, read_trace_and_operators
from workbench.evidence.run import WINDOW_RULE
from workbench.report.triage_render import triage_document, triage_text
from workbench.review import record_from_trace, triage
from workbench.review.join.windows import few_steps_warning, windows_doc, windows_lines
from workbench.review.records.store import _lock, load_record, record_to_dict, save_record

A100_16 = Path(__file__).resolve().parents[2] / "data" / "hta" / "a100_16ranks_rank0.json.gz"


def _record(tmp_path, name: str, steps: int, gemm_s: float = 4e-3):
    path = write_shaped_trace(tmp_path / name, [(*MM, [(TENSOROP, gemm_s)])], steps=steps)
    return record_from_trace(read_trace(path))


def test_the_record_carries_the_readers_rule_and_warnings(tmp_path):
    rec = _record(tmp_path, "a.json", 6)
    assert rec.measurement is not None
    assert rec.measurement.window_rule == WINDOW_RULE
    assert rec.measurement.warnings == read_trace(tmp_path / "a.json").warnings
    assert load_record(save_record(rec, tmp_path / "a.rec.json")) == rec


def test_a_record_written_before_the_fields_loads_and_states_nothing(tmp_path):
    data = record_to_dict(_record(tmp_path, "a.json", 6))
    for key in ("window_rule", "warnings"):
        del data["measurement"][key]
    data["lock"] = _lock({k: v for k, v in data.items() if k != "lock"})
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load_record(tmp_path / "old.json")
    assert windows_doc(old, old) is None
    assert "window:" not in triage_text(triage(old, old, simulate=False))


def test_triage_text_and_json_state_the_rule_and_the_steady_steps(tmp_path):
    a, b = _record(tmp_path, "a.json", 6), _record(tmp_path, "b.json", 6, 5e-3)
    r = triage(a, b, simulate=False)
    text = triage_text(r)
    assert f"steady steps 5 -> 5 (the warm-up step left out); window: {WINDOW_RULE}" in text
    assert "fewer than 3" not in text
    steps = triage_document(r)["headline"]["steps"]
    assert steps["baseline"] == {"steady_steps": 5, "window_rule": WINDOW_RULE, "warnings": []}
    assert steps["candidate"]["steady_steps"] == 5
    assert steps["paired"] is True
    assert steps["warning"] is None


@pytest.mark.parametrize(("steps", "says"), [(3, "not paired per step"), (2, "no interval")])
def test_fewer_than_3_steady_steps_are_warned_with_what_they_do(tmp_path, steps, says):
    a, b = _record(tmp_path, "a.json", steps), _record(tmp_path, "b.json", steps, 5e-3)
    r = triage(a, b, simulate=False)
    doc = triage_document(r)["headline"]["steps"]
    n = steps - 1
    assert doc["paired"] is False
    assert doc["warning"] == few_steps_warning(n, n)
    assert f"(baseline {n}, candidate {n})" in doc["warning"]
    assert says in doc["warning"]
    assert f"warning: {doc['warning']}" in triage_text(r)


def test_predicted_runs_state_no_steps(scenario_records):
    base, cand = scenario_records("unchanged")
    r = triage(base, cand, simulate=False)
    assert windows_doc(base, cand) is None
    assert triage_document(r)["headline"]["steps"] is None
    assert "steady steps" not in triage_text(r)


def test_a_left_out_last_step_is_said_once_for_both_traces():
    run, ops = read_trace_and_operators(A100_16)
    rec = record_from_trace(run, None, operators=ops)
    lines = windows_lines(windows_doc(rec, rec) or {})
    left_out = [line for line in lines if "the last step (#554) is left out" in line]
    assert len(left_out) == 1
    assert left_out[0].startswith("warning (both): ")
    assert lines[0].startswith("steady steps 3 -> 3")


def test_cli_triage_prints_the_rule_from_the_records(tmp_path, capsys):
    for name, gemm in (("a", 4e-3), ("b", 5e-3)):
        trace = write_shaped_trace(tmp_path / f"{name}.json", [(*MM, [(TENSOROP, gemm)])], steps=6)
        rec = str(tmp_path / f"{name}.rec.json")
        assert main(["run", "--from-trace", str(trace), "--record", rec]) == 0
    capsys.readouterr()
    main(["triage", str(tmp_path / "a.rec.json"), str(tmp_path / "b.rec.json"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["headline"]["steps"]["baseline"]["window_rule"] == WINDOW_RULE
