"""Timeloop's YAML, read strictly: the project's strict loader plus Timeloop's node tags.

Timeloop v0.4 architecture files tag their nodes (``!Container``, ``!Component``,
``!Parallel``, ``!Hierarchical``, ``!Pipelined``, ``!Nothing``). Those tags become a ``"!"`` key
in the node's mapping (``{"!": "Container", "name": ...}``); everything else is the
project's strict rules (duplicate keys, aliases, base-60 refused).
Of the newer format's templating, ``{{ name }}`` of a value given to the reader and a top-level
``variables:`` block that attribute values use are read (:mod:`._template`); any other Jinja
construct is refused in one line naming it and ``FILE:LINE``. Reuses
:class:`workbench.hw._yaml.StrictLoader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from workbench.errors import WorkbenchError
from workbench.hw._yaml import StrictLoader, StrictYamlError

__all__ = ["TAGS", "TimeloopSpecError", "Value", "load_file", "load_spec", "load_text"]

#: A value a ``{{ name }}`` placeholder or a ``variables`` entry takes.
Value = int | float | str | bool

#: Node tags of Timeloop's v0.4 architecture format.
TAGS = ("Container", "Component", "Parallel", "Hierarchical", "Pipelined", "Nothing")
#: Largest spec file read, bytes (the ISPASS files are under 10 kB; an ERT under 100 kB).
MAX_BYTES = 4_000_000


class TimeloopSpecError(WorkbenchError):
    """A Timeloop spec that cannot be read: one line, ``FILE: where: what``."""


class _TimeloopLoader(StrictLoader):
    """The strict loader, with Timeloop's node tags as a ``"!"`` key."""


def _tagged(tag: str) -> Any:
    def construct(loader: _TimeloopLoader, node: yaml.Node) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                problem=f"!{tag} must tag a mapping", problem_mark=node.start_mark
            )
        body = loader.construct_mapping(node, deep=True)
        if "!" in body:
            raise yaml.constructor.ConstructorError(
                problem="'!' is not a key Timeloop knows", problem_mark=node.start_mark
            )
        return {"!": tag, **body}

    return construct


for _tag in TAGS:
    _TimeloopLoader.add_constructor(f"!{_tag}", _tagged(_tag))


def _load(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_TimeloopLoader)  # NOTE: a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = (exc.problem or exc.context or "invalid YAML").replace("\n", " ")
        if problem.startswith("could not determine a constructor"):
            problem = f"unknown tag (Timeloop's are {', '.join('!' + t for t in TAGS)})"
        raise StrictYamlError(f"{line}{problem}") from None
    except yaml.YAMLError as exc:
        raise StrictYamlError(f"YAML error: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise StrictYamlError("YAML nested too deeply") from None


def load_file(path: str | Path, top: str, values: Mapping[str, Value] | None = None) -> Any:
    """The value under ``top`` in a Timeloop YAML file, read strictly.

    Args:
        path: The file.
        top: The key the file must have at its top (``architecture``, ``problem``, ...).
        values: Values of the file's ``{{ name }}`` placeholders, if it has any.

    Raises:
        TimeloopSpecError: Unreadable, too large, not strict YAML, templated beyond
            ``{{ name }}``, or no ``top`` key.
    """
    return load_spec(path, top, values)[0]


def load_spec(
    path: str | Path, top: str, values: Mapping[str, Value] | None = None
) -> tuple[Any, dict[str, Value]]:
    """:func:`load_file`, with the file's ``variables`` (resolved; empty if it has none)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise TimeloopSpecError(f"{p}: larger than {MAX_BYTES} bytes")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TimeloopSpecError(f"{p}: cannot read ({type(exc).__name__})") from None
    return _parse(text, top, str(p), values)


def load_text(text: str, top: str, where: str) -> Any:
    """The value under ``top`` in Timeloop YAML ``text``; errors name ``where``.

    Raises:
        TimeloopSpecError: Not strict YAML, templated beyond ``{{ name }}``, or no ``top`` key.
    """
    return _parse(text, top, where, None)[0]


def _parse(
    text: str, top: str, where: str, values: Mapping[str, Value] | None
) -> tuple[Any, dict[str, Value]]:
    # NOTE: imported here: _template reports through _fields, which imports this module.
    from workbench.scheduling.timeloop._template import render, resolve

    text = render(text, where, values)
    try:
        doc = _load(text)
    except StrictYamlError as exc:
        raise TimeloopSpecError(f"{where}: {exc}") from None
    if not isinstance(doc, dict) or top not in doc:
        raise TimeloopSpecError(f"{where}: expected a top-level '{top}:' key")
    variables = resolve(doc, top, where, text)
    return doc[top], variables
