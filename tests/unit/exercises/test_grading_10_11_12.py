"""`workbench grade` on lessons 10-12 filled in as a student would: every exercise correct.

Each answer is an expression over what the notebook shows (its tables and the stated rules),
never the library's expected value; the grader re-runs the notebook in a fresh kernel.
"""

import json
from pathlib import Path

import nbformat
import pytest

from workbench.cli import main
from workbench.exercises import lesson10, lesson11, lesson12

LESSONS = Path(__file__).resolve().parents[3] / "lessons"


def _predictions() -> dict[str, str]:
    """The three predictions' answers (the checks' own, as the lesson 03 grade test takes)."""
    return {
        "10": lesson10.check_tail_prediction(None).expected,
        "11": lesson11.check_gemm_prediction(None).expected,
        "12": lesson12.check_pressure_prediction(None).expected,
    }


ANSWERS = {
    "10": [
        "answer = 5.0 * lesson10.latency_table(points).loc[5.0, 'mean_s']",
        "t = lesson10.latency_table(points)\n"
        "lo, hi = t.loc[3.0], t.loc[5.0]\n"
        "answer = 3.0 + (13.5 - lo['p99_s']) / (hi['p99_s'] - lo['p99_s']) * (5.0 - 3.0)",
    ],
    "11": [
        "need = lesson11.fit_table('llama2-70b', 'h100-sxm', (2,)).loc[2, 'need_gib']\n"
        "m = lesson11.memory_table(['h200']).loc['h200']\n"
        "answer = m['capacity_gib'] * (1 - m['reserve_share']) - need",
        "t = lesson11.matrix_table(rows).loc['llama2-7b']\n"
        "answer = tuple(t.loc[p, 'req_per_s_at_sla'] * (1 - t.loc[p, 'risk'])"
        " for p in ('h100-sxm', 'mi300x'))",
        "t = lesson11.decode_inputs_table(['h200'], 'llama2-7b').loc['h200']\n"
        "answer = float(t['sustained_bytes_per_s']) / (t['params'] * t['bytes_per_weight'])",
    ],
    "12": [
        "answer = table.loc['searched tiles', 'step_ms'] / table.loc['int8 weights', 'step_ms']",
        "r = table.loc['fusion']\n"
        "answer = r['step_ms'] * r['pressure_pct'] / 100 / lesson12.SATURATION",
        "answer = 100 / table.loc['searched tiles', 'pressure_pct']",
    ],
}


@pytest.mark.parametrize("lesson", sorted(ANSWERS))
def test_a_filled_in_lesson_grades_correct(tmp_path, capsys, lesson):
    (path,) = LESSONS.glob(f"{lesson}-*.ipynb")
    nb = nbformat.read(path, as_version=4)
    predict, *stubs = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    predict.source = f"prediction = {_predictions()[lesson]!r}"
    for stub, source in zip(stubs, ANSWERS[lesson], strict=True):
        stub.source = source
    student = tmp_path / path.name
    nbformat.write(nb, student)
    assert main(["grade", str(student), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["status"] for t in out["tests"]] == ["passed"] * (1 + len(stubs)), out["tests"]
    assert out["score"] == float(1 + len(stubs))
    assert all(t["extra_data"]["hints_used"] == 0 for t in out["tests"])
