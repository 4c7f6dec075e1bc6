"""The one strict YAML loader: hardware profiles, stacks, the review's tables, the fidelity corpus.

Every file a person writes is plain data, read by :func:`load_strict`, which refuses:

* a key repeated in one mapping (a lax loader silently keeps the last one);
* a key that is not a plain scalar (a list or mapping as a key);
* a YAML 1.1 base-60 number (``1:30`` would load as 90): quote it or write the number;
* anchors and aliases (``&x`` / ``*x``): plain data only, and an alias bomb (a billion laughs)
  stops at its first anchor instead of expanding;
* nesting deeper than :data:`MAX_DEPTH` levels.

Numbers are read as in YAML 1.2: ``1e12`` is a float (YAML 1.1 reads it as text); an integer is
decimal or ``0x`` hex, so ``012`` and ``1_000`` read as floats (12.0, 1000.0) and ``0b1`` or
``0o7`` as text, which a schema refuses where it wants a number. Each refusal is one
:class:`StrictYamlError` line (``line 7: duplicate key 'cores'``); callers prefix the file.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from workbench.errors import WorkbenchError

__all__ = ["MAX_DEPTH", "StrictLoader", "StrictYamlError", "load_strict"]

#: Deepest YAML nesting accepted (a profile nests 3-4 levels, a corpus row about 6).
MAX_DEPTH = 32

_BASE60 = "tag:workbench,2024:base60"


class StrictYamlError(WorkbenchError):
    """YAML text that is not plain, strict data: one line, ``line N: what``."""


class _Refused(yaml.MarkedYAMLError):
    """A strictness rule is broken: a repeated or non-scalar key, an alias, deep nesting..."""


class StrictLoader(yaml.SafeLoader):
    """SafeLoader with the refusals of the module doc and YAML 1.2 numbers."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose a node, refusing anchors, aliases and nesting beyond :data:`MAX_DEPTH`."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                problem="anchors and aliases are not allowed (plain data only)",
                problem_mark=event.start_mark,
            )
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(
                    problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Build a mapping, raising on a key that appears twice or is not a plain scalar."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Refused(
                    problem="a mapping key must be a plain name, not a list or mapping",
                    problem_mark=key_node.start_mark,
                )
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _Refused(problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark)
            seen.add(key)
        return dict(super().construct_mapping(node, deep=deep))

    def construct_base60(self, node: yaml.ScalarNode) -> Any:
        """Refuse a YAML 1.1 sexagesimal number (``1:30``)."""
        raise _Refused(
            problem=f"{node.value!r} is a YAML 1.1 base-60 number; quote it or write the number",
            problem_mark=node.start_mark,
        )


def _resolvers(loader: type[yaml.SafeLoader]) -> None:
    """YAML 1.2 ints and floats (``1e12`` a float), and base-60 forms to a refusing tag."""
    numbers = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    loader.yaml_implicit_resolvers = {
        first: [r for r in resolvers if r[0] not in numbers]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    digits = list("-+0123456789")
    # NOTE: YAML 1.1's own base-60 int and float forms, so exactly what it would read as a number
    loader.add_implicit_resolver(
        _BASE60,
        re.compile(
            r"^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$|^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*$"
        ),
        digits,
    )
    loader.add_implicit_resolver(
        "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$|^0x[0-9a-fA-F]+$"), digits
    )
    loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(
            r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$"
            r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"
        ),
        [*digits, "."],
    )


_resolvers(StrictLoader)
StrictLoader.add_constructor(_BASE60, StrictLoader.construct_base60)


def load_strict(text: str) -> Any:
    r"""Parse YAML text with :class:`StrictLoader` (see the module doc).

    Returns:
        The document (None for an empty one).

    Raises:
        StrictYamlError: ``line N: problem`` (a refusal), ``line N: YAML syntax error: ...``.

    >>> load_strict("peak: 1e12\nname: a")
    {'peak': 1000000000000.0, 'name': 'a'}
    >>> load_strict("a: 1\na: 2")
    Traceback (most recent call last):
    ...
    workbench.hw._yaml.StrictYamlError: line 2: duplicate key 'a'
    """
    try:
        return yaml.load(text, Loader=StrictLoader)  # NOTE: a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        kind = "" if isinstance(exc, _Refused) else "YAML syntax error: "
        raise StrictYamlError(f"{line}{kind}{problem}".replace("\n", " ")) from None
    except yaml.YAMLError as exc:
        raise StrictYamlError(f"YAML error: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise StrictYamlError("YAML nested too deeply") from None
