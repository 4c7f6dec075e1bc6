"""`workbench grade`: attempted from the stubs, correct from a re-run's own checks, bad input."""

import ast
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from workbench.cli import main
from workbench.exercises import lesson02, lesson05, lesson07
from workbench.exercises.grading import attempted, grade_notebook

LESSONS = Path(__file__).resolve().parents[3] / "lessons"
LESSON03 = LESSONS / "03-tiling-and-wave-quantization.ipynb"


def _stubs(nb):
    return [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]


def test_every_shipped_lesson_grades_as_not_attempted_without_running(capsys):
    paths = sorted(str(p) for p in LESSONS.glob("[0-9][0-9]-*.ipynb"))
    assert main(["grade", *paths, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["tests"]) == sum(len(_stubs(nbformat.read(p, as_version=4))) for p in paths)
    assert {t["output"] for t in out["tests"]} == {"not attempted"}
    assert out["score"] == 0.0
    assert not any(n["executed"] for n in out["extra_data"]["notebooks"])


def test_a_printed_correct_counts_for_nothing(tmp_path):
    nb = nbformat.read(LESSON03, as_version=4)
    check = nb.cells[nb.cells.index(_stubs(nb)[1]) + 1]
    check.outputs = [nbformat.v4.new_output("stream", text="tiles[1000x3000 / 128x256]: correct")]
    path = tmp_path / "typed.ipynb"
    nbformat.write(nb, path)
    g = grade_notebook(path)
    assert not g.executed
    assert not any(e.correct for e in g.exercises)


@pytest.mark.parametrize(
    ("stub", "check", "tried"),
    [
        ("answer = None  # replace", "check_tiles(answer, m=1)", False),
        ("answer = (None, None)", "check_waves(answer)", False),
        ("cfg = PRESETS['x']\nanswer = None", "check_param_count(answer)", False),
        ("answer = 8 * 12", "check_tiles(answer)", True),
        ("mechanism = 'tiling'\nowner = None", "check_first_failing('s', mechanism, owner)", True),
        ("answer = (", "check_tiles(answer)", True),  # a syntax error is an attempt
    ],
)
def test_attempted_reads_the_answers_the_check_uses(stub, check, tried):
    assert attempted(stub, check) is tried


def test_answers_filled_into_a_copy_grade_from_the_rerun(tmp_path, capsys):
    nb = nbformat.read(LESSON03, as_version=4)
    predict, ex1, ex2 = _stubs(nb)
    expected = lesson02.check_bottleneck(
        None, kernel="layers.0.mlp.up_proj", phase="prefill", hardware_name="h100-sxm"
    ).expected
    predict.source = f"prediction = {expected!r}"
    ex1.source = "import math\nanswer = math.ceil(1000 / 128) * math.ceil(3000 / 256)"
    ex2.source = "answer = 1.0  # wrong on purpose"
    # the prediction's check is replaced by a print: the grader must not believe it
    nb.cells[nb.cells.index(predict) + 1].source = 'print("correct")'
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    assert main(["grade", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {t["number"]: t for t in out["tests"]}
    assert got["03.2"]["status"] == "passed"
    assert got["03.2"]["extra_data"]["check"] == "tiles[1000x3000 / 128x256]"
    assert got["03.3"]["status"] == "failed"
    assert got["03.3"]["output"] == "not correct"
    assert got["03.3"]["extra_data"]["hints_used"] == 1
    assert got["03.1"]["output"] == "the check did not run"
    assert out["score"] == 1.0
    assert out["extra_data"]["notebooks"][0]["executed"] is True


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "no such notebook file"),
        ("{", "not a readable Jupyter notebook"),
        ('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "no cell tagged"),
    ],
)
def test_bad_notebooks_get_one_line_and_exit_2(tmp_path, capsys, content, why):
    path = tmp_path / "bad.ipynb"
    if content is not None:
        path.write_text(content)
    good = tmp_path / "good.ipynb"
    shutil.copy(LESSON03, good)
    assert main(["grade", str(good), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert why in err
    assert str(path) in err


def test_lessons_copy_makes_a_working_copy_and_never_overwrites(tmp_path, capsys):
    target = tmp_path / "mine"
    assert main(["lessons", "copy", str(target), "--from", str(LESSONS)]) == 0
    shipped = sorted(LESSONS.glob("[0-9][0-9]-*.ipynb"))
    assert sorted(p.name for p in target.iterdir()) == [p.name for p in shipped]
    assert (target / LESSON03.name).read_bytes() == LESSON03.read_bytes()
    work = target / LESSON03.name
    work.write_text("the student's work")
    assert main(["lessons", "copy", str(target), "--from", str(LESSONS)]) == 0
    assert work.read_text() == "the student's work"  # kept, and named
    out = capsys.readouterr().out.splitlines()[-2]
    assert out.startswith(f"copied 0 lessons into {target}; kept {len(shipped)} already there")
    assert LESSON03.name in out


@pytest.mark.parametrize("where", ["file", "empty"])
def test_lessons_copy_refuses_a_bad_folder_in_one_line(tmp_path, capsys, where):
    (tmp_path / "f").write_text("x")
    args = ["lessons", "copy", str(tmp_path / "f")] if where == "file" else [
        "lessons", "copy", str(tmp_path / "out"), "--from", str(tmp_path / "none")]  # fmt: skip
    assert main(args) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_binder_opens_the_working_copy():
    repo = LESSONS.parent
    assert "workbench lessons copy my-lessons" in (repo / "binder" / "postBuild").read_text()
    assert "labpath=my-lessons%2F01-" in (repo / "README.md").read_text()
    assert "my-lessons/" in (repo / ".gitignore").read_text().split()


@pytest.mark.parametrize(
    ("lesson", "gated"),
    [("01", ["Exercise 2"]), ("05", ["Exercise 2"]), ("06", ["Exercise 1", "Exercise 2"]),
     ("07", ["Exercise 1", "Exercise 2"]), ("09", ["Exercise 1"]), ("10", ["Exercise 2"]),
     ("11", ["Exercise 1", "Exercise 2", "Exercise 3"]), ("12", ["Exercise 2"])],
)  # fmt: skip
def test_run_all_from_the_stubs_stores_the_gate_not_the_answer(lesson, gated):
    # nbval compares these stored outputs with a Run All from the unanswered stubs
    (path,) = LESSONS.glob(f"{lesson}-*.ipynb")
    nb = nbformat.read(path, as_version=4)
    shown = [
        o["data"]["text/markdown"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/markdown" in o.get("data", {})
    ]
    found = [t.split("answers ")[1].split(":")[0] for t in shown if "This sentence answers" in t]
    assert found == gated


def _names(source: str, kind: type) -> set[str]:
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, kind)}
    if kind is ast.Store:
        names |= {
            (a.asname or a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
    return names


def _exercises_only(nb):
    """The notebook with its exercise cells and the code cells they need (a faster re-run)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    keep = {
        id(c)
        for i, c in enumerate(code)
        if "exercise" in c.metadata.get("tags", [])
        or (i and "exercise" in code[i - 1].metadata.get("tags", []))
    }
    wanted: set[str] = set()
    for c in reversed(code):
        if id(c) in keep or _names(c.source, ast.Store) & wanted:
            keep.add(id(c))
            wanted |= _names(c.source, ast.Load)
    nb.cells = [c for c in nb.cells if c.cell_type == "markdown" or id(c) in keep]
    return nb


#: Answers a student computes for lessons 02, 05 and 07's exercises after the prediction
#: (issue 28: each computed from the shapes, the graph or the table, none read off the page).
FILLED = {
    "02": (
        'answer = h100.peak_flops("fp8_e4m3") / h100.offchip.bandwidth_bytes_per_s',
        "b, k, n = 512, 4096, 11008\nanswer = (2 * b * k * n / (2 * (b * k + k * n + b * n)), "
        '"compute")',
        "from workbench.models import build_graph\n\n"
        'answer = build_graph("llama2-7b").params * 2 / h100.offchip.bandwidth_bytes_per_s',
    ),
    "05": (
        "answer = 4096 * 11008",
        "from workbench.models import build_graph\n\n"
        'ops = build_graph("resnet50", batch=32).ops\n'
        'answer = 2 * sum(op.kind == "Conv2d" for op in ops)',
    ),
    "07": (
        "answer = lesson07.dominant_bottleneck(mapping)",
        'answer = "ship behind a flag"  # step time and MFU past the x4 flag, none past roll back',
        'answer = lesson07.barrier_cost_us("llama2-7b", "h100-sxm", seq=2048)',
    ),
}
PREDICTED = {
    "02": lambda: lesson02.check_bottleneck(
        None, kernel="layers.0.attn_norm", phase="prefill", hardware_name="h100-sxm"
    ),
    "05": lambda: lesson05.check_format_effect(None, weight_dtype="int8", phase="prefill"),
    "07": lambda: lesson07.check_release_decision("unchanged", None, simulate=False),
}


@pytest.mark.parametrize("lesson", sorted(FILLED))
def test_computed_answers_filled_in_grade_correct(tmp_path, capsys, lesson):
    (path,) = LESSONS.glob(f"{lesson}-*.ipynb")
    nb = nbformat.read(path, as_version=4)
    predict, *stubs = _stubs(nb)
    predict.source = f"prediction = {PREDICTED[lesson]().expected!r}"
    for stub, answer in zip(stubs, FILLED[lesson], strict=True):
        stub.source = answer
    student = tmp_path / path.name
    nbformat.write(_exercises_only(nb), student)
    assert main(["grade", str(student), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["status"] for t in out["tests"]] == ["passed"] * (1 + len(stubs)), out["tests"]
    assert out["score"] == len(out["tests"])


@pytest.mark.parametrize("lesson", sorted(FILLED))
def test_shipped_outputs_state_no_computed_answer(lesson):
    # Run All from the stubs (the stored outputs) shows none of lessons 02/05/07's answers
    (path,) = LESSONS.glob(f"{lesson}-*.ipynb")
    nb = nbformat.read(path, as_version=4)
    shown = json.dumps([c.outputs for c in nb.cells if c.cell_type == "code"])
    answers = {
        "02": [f"{lesson02.check_side_of_ridge(None).expected[0]:.4g}"],
        "05": [f" {lesson05.check_layout_transforms(None).expected} "],
        "07": [
            lesson07.check_release_decision("barrier-per-layer", None, scale=4).expected,
            lesson07.dominant_bottleneck(lesson07.review_mapping()) + "** holds",
        ],
    }[lesson]
    assert answers
    for answer in answers:
        assert answer not in shown
