"""Lesson prose as data: one file of sentence templates per lesson, filled with computed values.

A lesson module computes numbers and picks directions; the sentences that state them live in
``workbench/exercises/text/<lesson>.yaml``, one Jinja2 template per key, so a teacher edits a
sentence there without touching code. A template names its values as placeholders
(``{{ seq | fmt(",") }}``, ``{{ "grows" if rising else "does not grow" }}``); the module passes
them by name (:meth:`LessonText.claim`). A placeholder the code does not pass is an error naming
the file, the key and the values on offer, never a blank in the sentence.

Filters: ``fmt(spec)`` formats a number with a Python format spec (``fmt(".3g")``,
``fmt(",")``, ``fmt(".1%")``); ``time`` formats seconds as the tool prints a duration
(``{{ 1.24e-5 | time }}``: ``12.4 us``); ``names`` lists names, each in backticks, joined
with commas and a last "and" (:func:`workbench.exercises._claims.join_names`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypedDict

import jinja2
import jinja2.meta
import yaml

from workbench._format import fmt_time
from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim, join_names
from workbench.fidelity._input import StrictLoader

__all__ = ["LessonText", "LessonTextError", "placeholders", "template_keys"]

#: The folder of the lesson text files, inside this package (shipped in the wheel).
TEXT_FOLDER = "text"


class LessonTextError(WorkbenchError):
    """A lesson text file that does not load, or a template without a value it names."""


def _fmt(value: Any, spec: str) -> str:
    """``format(value, spec)``: the ``fmt`` filter (``{{ x | fmt(".3g") }}``)."""
    return format(value, spec)


_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,  # NOTE: the text is Markdown for Jupyter, not HTML; nothing user-written.
    keep_trailing_newline=True,
)
_ENV.filters["fmt"] = _fmt
_ENV.filters["time"] = fmt_time
_ENV.filters["names"] = join_names


def _path(lesson: str) -> str:
    return f"workbench/exercises/{TEXT_FOLDER}/{lesson}.yaml"


@functools.cache
def _load(lesson: str) -> dict[str, str]:
    """The templates of one lesson, key -> template source (strict YAML: no repeated key)."""
    source = resources.files("workbench.exercises").joinpath(TEXT_FOLDER, f"{lesson}.yaml")
    try:
        data = yaml.load(source.read_text(encoding="utf-8"), Loader=StrictLoader)
    except (OSError, yaml.YAMLError, WorkbenchError) as e:
        raise LessonTextError(f"{_path(lesson)}: {e}") from e
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise LessonTextError(f"{_path(lesson)}: must map each key to a text")
    return data


def template_keys(lesson: str) -> tuple[str, ...]:
    """The keys of a lesson's text file, in file order."""
    return tuple(_load(lesson))


@functools.cache
def _template(lesson: str, key: str) -> jinja2.Template:
    templates = _load(lesson)
    if key not in templates:
        raise LessonTextError(f"{_path(lesson)}: no text named {key!r}")
    try:
        return _ENV.from_string(templates[key])
    except jinja2.TemplateSyntaxError as e:
        raise LessonTextError(f"{_path(lesson)}: {key}: line {e.lineno}: {e.message}") from e


@functools.cache
def placeholders(lesson: str, key: str) -> frozenset[str]:
    """The values a template names (its undeclared variables)."""
    return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(_load(lesson)[key])))


class Hints(TypedDict):
    """A check's two hints, as :func:`workbench.exercises._check.compare` takes them."""

    hint: str
    hint2: str


@dataclass(frozen=True, slots=True)
class LessonText:
    """The text file of one lesson: renders its templates with the values a module computed.

    Attributes:
        lesson: The file's name without ``.yaml`` (``"lesson01"``).
    """

    lesson: str

    def render(self, key: str, /, **values: Any) -> str:
        """The template ``key`` filled with ``values``.

        Raises:
            LessonTextError: When the key is unknown, or the template names a value not given.
        """
        template = _template(self.lesson, key)
        missing = placeholders(self.lesson, key) - values.keys()
        if missing:
            raise LessonTextError(
                f"{_path(self.lesson)}: {key}: no value for {sorted(missing)} "
                f"(the code passes {sorted(values)})"
            )
        try:
            return template.render(**values)
        except jinja2.UndefinedError as e:
            raise LessonTextError(f"{_path(self.lesson)}: {key}: {e.message}") from e

    def hints(self, key: str, /, **values: Any) -> Hints:
        """A check's two hints, ``<key>_hint`` and ``<key>_hint2``, as ``compare``'s keywords.

        ``values`` fill the second (the more specific) hint; the first takes none.
        """
        return Hints(hint=self.render(f"{key}_hint"), hint2=self.render(f"{key}_hint2", **values))

    def check(
        self,
        key: str,
        name: str,
        answer: object,
        expected: object,
        /,
        *,
        rel_tol: float = 1e-6,
        synonyms: Mapping[str, Sequence[str]] | None = None,
        strict: bool | None = None,
        **values: Any,
    ) -> CheckResult:
        """A check's grading skeleton: :func:`compare` with the hints of ``key`` (:meth:`hints`).

        Each check of a lesson computes ``expected`` and declares the rest here: its name as
        the result shows it, the tolerance, and the values its second hint names.

        Args:
            key: The hints' key in the lesson's text file (``<key>_hint``, ``<key>_hint2``).
            name: The exercise's name (the result shows it; ``reveal`` takes it).
            answer: The learner's answer.
            expected: What the library computed.
            rel_tol: Relative tolerance for numbers.
            synonyms: Canonical answer -> accepted alternates (text answers).
            strict: Raise on a wrong answer (default: the environment's).
            **values: The values the second hint's template names.
        """
        hints = self.hints(key, **values)
        return compare(
            name, answer, expected, rel_tol=rel_tol, synonyms=synonyms, **hints, strict=strict
        )

    def claim(self, key: str, /, **values: Any) -> Claim:
        """:meth:`render` as a :class:`Claim` (Markdown in the notebook)."""
        return Claim(self.render(key, **values))
