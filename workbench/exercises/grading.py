"""Grade students' lesson notebooks: each exercise attempted, correct, and the help it took.

An exercise is a cell tagged ``exercise`` (the stub) followed by its check cell (the next code
cell), as ``lessons/README.md`` describes. Grading never trusts what a notebook shows:

* *attempted* is read from the stub's source: a stub whose assignments are all still ``None``
  (or a tuple of ``None``) is not attempted, so the shipped lessons grade as not attempted
  without running anything;
* *correct* comes from re-running the notebook from the top in a fresh kernel (as nbgrader's
  autograde and otter-grader do) with :data:`~workbench.exercises._check.GRADE_LOG_ENV` set,
  so each check appends its own verdict to a log the grader reads after each check cell: a
  typed-in "correct" output counts for nothing;
* *hints used* and *revealed* are the larger of what the student's stored outputs recorded
  (a check's ``[after N wrong tries; answer revealed first]`` note, ``reveal()`` lines) and what
  the re-run saw.

Re-running executes the student's code: grade in a sandbox (a container), as with any
autograder. The report follows Gradescope's ``results.json`` (``score``, ``tests`` with
``name``, ``score``, ``max_score``, ``status``, ``output``), the format otter-grader writes,
with each exercise's fields under ``extra_data``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.exercises._check import GRADE_LOG_ENV

__all__ = [
    "ExerciseGrade",
    "NotebookGrade",
    "attempted",
    "grade_notebook",
    "read_lesson",
    "results_json",
]

#: Seconds one cell may run while re-executing a notebook.
CELL_TIMEOUT_S = 300
_LESSON = re.compile(r"^#\s*Lesson\s+(\d+)", re.M)
_HEADING = re.compile(r"^#{2,4}\s+(.+)$", re.M)
_HELP = re.compile(r"\[after (\d+) wrong tr(?:y|ies)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExerciseGrade:
    """One exercise of one notebook.

    Attributes:
        number: Its place among the notebook's exercise cells (1 = first).
        title: The heading above it ("Exercise 2: waves on an A100").
        check: The check's name (as its result prints it; empty when nothing ran).
        attempted: The stub was changed from ``None``.
        correct: The check, re-run, passed.
        hints_used: Wrong tries (each shows hints) before the last check.
        revealed: The answer was revealed before the check passed.
        note: Why it is not correct, in a few words (empty when correct).
    """

    number: int
    title: str
    check: str
    attempted: bool
    correct: bool
    hints_used: int
    revealed: bool
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NotebookGrade:
    """The exercises of one notebook.

    Attributes:
        path: The notebook file as given.
        lesson: The lesson's number ("03"), from its title or file name.
        exercises: One grade per exercise cell, in order.
        executed: Whether the notebook was re-run (False when nothing was attempted).
    """

    path: str
    lesson: str
    exercises: tuple[ExerciseGrade, ...]
    executed: bool

    @property
    def correct(self) -> int:
        """Exercises correct."""
        return sum(e.correct for e in self.exercises)


@dataclass(frozen=True, slots=True)
class _Exercise:
    stub: int
    check: int
    title: str


def read_lesson(path: str | os.PathLike[str]) -> Any:
    """Read a lesson notebook, or raise one line naming the file and what is wrong.

    Returns:
        The ``nbformat`` notebook (version 4).

    Raises:
        WorkbenchError: The file is missing, not a notebook, or has no exercise cells.
    """
    import nbformat

    p = Path(path)
    if not p.is_file():
        raise WorkbenchError(f"{p}: no such notebook file")
    try:
        nb = nbformat.read(p, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # NOTE: nbformat raises JSON, validation and reader errors alike
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorkbenchError(f"{p}: not a readable Jupyter notebook ({first})") from None
    if not _exercises(nb):
        raise WorkbenchError(f"{p}: no cell tagged 'exercise' (not a workbench lesson notebook?)")
    return nb


def attempted(stub: str, check: str = "") -> bool:
    r"""Whether an exercise stub was changed: an answer the check reads is no longer ``None``.

    The answers are the names the stub assigns that the check cell uses (all the stub's names
    when ``check`` is empty); setup lines in the stub (``cfg = PRESETS[...]``) do not count.

    >>> attempted("cfg = 1\nanswer = None  # replace None", "check(answer)")
    False
    >>> attempted("mechanism = None\nowner = None", "check(mechanism, owner)")
    False
    >>> attempted("mechanism = 'x'\nowner = None", "check(mechanism, owner)")
    True
    >>> attempted("answer = 1000 // 128", "check(answer)")
    True
    >>> attempted("   ", "check(answer)")  # an emptied stub holds no answer
    False
    """
    if not stub.strip():
        return False
    try:
        tree = ast.parse(stub)
        used = {n.id for n in ast.walk(ast.parse(check)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return True
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For)
            else []
        )
        value = getattr(node, "value", None) if isinstance(node, ast.Assign) else None
        for t in targets:
            for name in (n.id for n in ast.walk(t) if isinstance(n, ast.Name)):
                values.setdefault(name, []).append(value)  # type: ignore[arg-type]
    answers = {k: v for k, v in values.items() if k in used} if check else values
    if not answers:
        return True  # NOTE: the stub's answer names are gone: something was changed
    return not all(_is_none(v) for vs in answers.values() for v in vs)


def _is_none(value: ast.expr | None) -> bool:
    """``None`` or a tuple of ``None`` (a stub's value); anything else is an answer."""
    if value is None:
        return False
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    return all(isinstance(v, ast.Constant) and v.value is None for v in items)


def _exercises(nb: Any) -> list[_Exercise]:
    found, title = [], ""
    cells = nb.cells
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown":
            headings = _HEADING.findall(cell.source)
            title = headings[-1].strip() if headings else title
        if cell.cell_type != "code" or "exercise" not in cell.metadata.get("tags", []):
            continue
        nxt = next((j for j in range(i + 1, len(cells)) if cells[j].cell_type == "code"), None)
        if nxt is not None:
            found.append(_Exercise(stub=i, check=nxt, title=title))
    return found


def _lesson_number(nb: Any, path: Path) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (m := _LESSON.search(cell.source)):
            return f"{int(m[1]):02d}"
    m = re.match(r"(\d+)", path.name)
    return f"{int(m[1]):02d}" if m else path.stem


def _text_of(cell: Any) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(str(out["text"]))
        data = out.get("data", {})
        parts.append(str(data.get("text/plain", "")))
        if out.get("output_type") == "error":
            parts.append(f"{out.get('ename', '')}: {out.get('evalue', '')}")
    return "\n".join(parts)


def _stored_help(nb: Any, ex: _Exercise, name: str) -> tuple[int, bool]:
    """Hints used and reveal as the student's saved outputs recorded them."""
    text = _text_of(nb.cells[ex.check])
    hints = max([int(n) for n in _HELP.findall(text)] + [len(re.findall(r"\n  hint 2:", text))])
    everything = "\n".join(_text_of(c) for c in nb.cells if c.cell_type == "code")
    revealed = "answer revealed first" in text or (
        bool(name) and f"{name}: the answer is" in everything
    )
    return hints, revealed


def _rerun(nb: Any, path: Path, checks: set[int], timeout_s: int) -> dict[int, list[dict]]:
    """Execute ``nb`` top to bottom; the check log rows each check cell wrote, by cell index."""
    import nbformat
    from nbclient import NotebookClient

    import workbench

    rows: dict[int, list[dict]] = {}
    errors: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="workbench-grade-") as tmp:
        log = Path(tmp) / "checks.jsonl"
        log.touch()
        root = str(Path(workbench.__file__).resolve().parents[1])
        env = {**os.environ, GRADE_LOG_ENV: str(log), "WORKBENCH_STRICT_CHECKS": "0"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env.setdefault("TQDM_DISABLE", "1")
        client = NotebookClient(
            nbformat.from_dict(nb),
            timeout=timeout_s,
            allow_errors=True,
            store_widget_state=False,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent.resolve())}},
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
        with client.setup_kernel(env=env):
            for i, cell in enumerate(client.nb.cells):
                if cell.cell_type != "code":
                    continue
                seen = log.stat().st_size
                client.execute_cell(cell, i)
                if i in checks:
                    with log.open(encoding="utf-8") as f:
                        f.seek(seen)
                        rows[i] = [json.loads(line) for line in f if line.strip()]
                    errors[i] = next(
                        (o.get("ename", "") for o in cell.outputs if o.output_type == "error"), ""
                    )
    return {i: rows[i] + ([{"error": errors[i]}] if errors.get(i) else []) for i in rows}


def _grade(ex: _Exercise, number: int, nb: Any, tried: bool, rows: list[dict]) -> ExerciseGrade:
    verdicts = [r for r in rows if "passed" in r]
    error = next((r["error"] for r in rows if "error" in r), "")
    name = verdicts[-1]["name"] if verdicts else ""
    correct = tried and bool(verdicts) and all(r["passed"] for r in verdicts) and not error
    hints, revealed = _stored_help(nb, ex, name)
    hints = max([hints] + [r.get("hints_used", 0) for r in verdicts])
    revealed = revealed or any(r.get("revealed") for r in verdicts)
    if not tried:
        note = "not attempted"
    elif error:
        note = f"the check cell raised {error}"
    elif not verdicts:
        note = "the check did not run"
    else:
        note = "" if correct else "not correct"
    return ExerciseGrade(
        number=number,
        title=ex.title,
        check=name,
        attempted=tried,
        correct=correct,
        hints_used=hints,
        revealed=revealed,
        note=note,
    )


def grade_notebook(
    path: str | os.PathLike[str], *, nb: Any = None, timeout_s: int = CELL_TIMEOUT_S
) -> NotebookGrade:
    """Grade one lesson notebook (see the module docstring for what each field means).

    Args:
        path: The student's notebook.
        nb: The notebook already read by :func:`read_lesson` (None: read it).
        timeout_s: Seconds one cell may run when re-executed.

    Returns:
        The :class:`NotebookGrade`; the notebook is re-run only when an exercise was attempted.
    """
    p = Path(path)
    nb = read_lesson(p) if nb is None else nb
    exercises = _exercises(nb)
    tried = [attempted(nb.cells[e.stub].source, nb.cells[e.check].source) for e in exercises]
    rows: dict[int, list[dict]] = {}
    if any(tried):
        rows = _rerun(nb, p, {e.check for e in exercises}, timeout_s)
    grades = tuple(
        _grade(e, n, nb, t, rows.get(e.check, []))
        for n, (e, t) in enumerate(zip(exercises, tried, strict=True), start=1)
    )
    return NotebookGrade(
        path=str(path), lesson=_lesson_number(nb, p), exercises=grades, executed=any(tried)
    )


def results_json(grades: list[NotebookGrade]) -> dict[str, Any]:
    """Gradescope's ``results.json`` (as otter-grader writes it): one test per exercise.

    Each test scores 1 when correct (``max_score`` 1); its ``extra_data`` holds the
    exercise's fields, and the top-level ``extra_data`` each notebook's path and lesson.
    """
    tests: list[dict[str, Any]] = []
    for g in grades:
        for e in g.exercises:
            tests.append(
                {
                    "name": f"lesson {g.lesson} - {e.title}",
                    "number": f"{g.lesson}.{e.number}",
                    "score": 1.0 if e.correct else 0.0,
                    "max_score": 1.0,
                    "status": "passed" if e.correct else "failed",
                    "output": "correct" if e.correct else e.note,
                    "extra_data": {"notebook": g.path, "lesson": g.lesson, **asdict(e)},
                }
            )
    return {
        "score": sum(float(t["score"]) for t in tests),
        "output": f"{sum(g.correct for g in grades)} of {len(tests)} exercises correct",
        "tests": tests,
        "extra_data": {
            "max_score": float(len(tests)),
            "notebooks": [
                {"path": g.path, "lesson": g.lesson, "executed": g.executed} for g in grades
            ],
        },
    }
