"""Lesson instructions performed on a lesson the browser suite already has open (issue 20).

Every module ``_instructions_*.py`` in this folder maps lesson numbers to a performer in its
``PERFORM`` dict: ``perform(page, output, lesson, server) -> list[str]`` (``output``: the lesson's
widget output; ``server``: ``(base, token, path)``). The per-lesson checks call
:func:`perform_instructions` once the lesson has run, so no lesson is opened again for its
instructions; a lesson without a performer costs nothing.
"""

import importlib
from pathlib import Path


def _performers() -> dict:
    out: dict = {}
    for path in sorted(Path(__file__).parent.glob("_instructions_*.py")):
        module = importlib.import_module(path.stem)
        clash = set(out) & set(module.PERFORM)
        assert not clash, f"{path.name}: lessons {sorted(clash)} have two performers"
        out.update(module.PERFORM)
    return out


def performed_lessons() -> set[str]:
    """The lessons some ``_instructions_*.py`` module performs."""
    return set(_performers())


def perform_instructions(page, output, lesson: str, server) -> list[str]:
    """Perform ``lesson``'s instructions on ``output`` (none: nothing); one line per move."""
    perform = _performers().get(lesson)
    return perform(page, output, lesson, server) if perform else []
