"""``workbench grade NOTEBOOK...``: each lesson exercise attempted, correct, and the help it took.

Every notebook is read first (a missing or unreadable one is one error line, exit 2, before
anything runs); a notebook with an attempted exercise is then re-run in a fresh kernel and each
check's own verdict recorded (:mod:`workbench.exercises.grading`). ``--format json`` prints
Gradescope's ``results.json`` as otter-grader writes it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from workbench._cli.argtypes import count
from workbench._cli.commands import add_command

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``grade`` command."""
    parser = add_command(subparsers, "grade", _grade)
    parser.add_argument("notebooks", nargs="+", metavar="NOTEBOOK", help="lesson .ipynb files")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--output", metavar="FILE", default=None, help="write here, not stdout")
    parser.add_argument(
        "--cell-timeout",
        type=count(1, 86_400),
        default=300,
        metavar="S",
        help="seconds one cell may run when a notebook is re-run (default 300)",
    )


def _text(grades: list[Any]) -> str:
    lines = []
    for g in grades:
        lines.append(
            f"{g.path}: lesson {g.lesson}, {g.correct} of {len(g.exercises)} exercises correct"
            + ("" if g.executed else " (nothing attempted, not run)")
        )
        for e in g.exercises:
            state = "correct" if e.correct else e.note
            help_ = f", {e.hints_used} wrong tries" if e.hints_used else ""
            help_ += ", answer revealed" if e.revealed else ""
            lines.append(f"  {e.number}. {e.title}: {state}{help_}")
    return "\n".join(lines) + "\n"


def _grade(args: argparse.Namespace) -> int:
    from workbench._cli.common import write_output
    from workbench.exercises.grading import grade_notebook, read_lesson, results_json

    # NOTE: read every notebook before running any, so a bad path fails fast and alone.
    read = [(path, read_lesson(path)) for path in args.notebooks]
    grades = [grade_notebook(p, nb=nb, timeout_s=args.cell_timeout) for p, nb in read]
    if args.format == "json":
        text = json.dumps(results_json(grades), indent=2) + "\n"
    else:
        text = _text(grades)
    write_output(text, args.output)
    return 0
