"""Defensive reading of corpus files: the YAML loader and the checks before the schema sees data.

Every problem becomes one :class:`CorpusError` line (issue 19, "Bad input to the corpus"):

* what the one strict YAML loader refuses (:mod:`workbench.hw._yaml`, shared with hardware,
  stacks and the review's tables): a key repeated in one mapping, a key that is not a plain
  scalar, a YAML 1.1 base-60 number (``1:30`` would load as 90), anchors and aliases (an alias
  bomb fails at its first anchor), nesting deeper than its limit;
* nesting deeper than :data:`MAX_DEPTH` levels (a corpus row is at most a few levels deep);
* a number beyond :data:`MAX_MAGNITUDE` (``10**30`` would overflow the runner's arithmetic),
  or a float that is not finite;
* a boolean where the schema wants a number (:class:`StrictModel`);
* a hardware or stack name that is not a shipped profile (``hardware/*.yaml``, ``stacks/*.yaml``;
  never a path), and a stack option set in a row instead of its stack (schema.py).
"""

from __future__ import annotations

import math
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from workbench.errors import WorkbenchError
from workbench.hw._yaml import StrictLoader

__all__ = ["MAX_DEPTH", "MAX_MAGNITUDE", "CorpusError", "StrictLoader", "StrictModel", "check_data"]

#: Deepest nesting a corpus document may have (a ratio row's setup is 5 levels down).
MAX_DEPTH = 16
#: Largest magnitude of any number in a corpus file: no count, byte size or published figure of
#: the corpus comes near it (the largest are nccl-tests messages of ~1.7e10 bytes).
MAX_MAGNITUDE = 1e15


class CorpusError(WorkbenchError):
    """A corpus file that cannot be read, or a row that does not validate."""


def _number_problem(v: float) -> str | None:
    if isinstance(v, float) and not math.isfinite(v):
        return f"{v} is not a finite number"
    if abs(v) > MAX_MAGNITUDE:
        # NOTE: an integer past a float's range (10**400) cannot be formatted as one
        shown = f"{v:.3g}" if abs(v) < 1e300 else f"a {len(str(abs(int(v))))}-digit number"
        return f"{shown} is beyond the largest figure a corpus row may hold ({MAX_MAGNITUDE:.0e})"
    return None


def check_data(data: Any) -> None:
    """Walk a loaded document (without recursion) for depth, key and number problems.

    Raises:
        CorpusError: The first problem, naming its path (``rows[3].setup.m``).
    """
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise CorpusError(f"{path or 'document'}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            for k, v in node.items():
                if not isinstance(k, str):
                    raise CorpusError(f"{path or 'document'}: key {k!r} is not a name")
                stack.append((v, f"{path}.{k}" if path else k, depth + 1))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node))
        elif isinstance(node, int | float) and not isinstance(node, bool):
            problem = _number_problem(node)
            if problem:
                raise CorpusError(f"{path}: {problem}")


def _numeric(annotation: Any) -> bool:
    """Whether a field's type is a number (int or float, optionally None)."""
    if annotation in (int, float):
        return True
    args = typing.get_args(annotation)
    return (
        bool(args)
        and all(a in (int, float, type(None)) for a in args)
        and bool({int, float} & set(args))
    )


class StrictModel(BaseModel):
    """Frozen, ``extra="forbid"``, and a boolean is never taken for a number."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                v = data.get(name)
                if not _numeric(field.annotation):
                    continue
                if isinstance(v, bool):
                    raise ValueError(f"{name}: {v} is a boolean, not a number")
                if isinstance(v, str):  # NOTE: YAML 1.1 reads 1e300 (no dot) as text
                    try:
                        problem = _number_problem(float(v))
                    except ValueError:
                        continue  # not a number at all: the field's own check says so
                    if problem:
                        raise ValueError(f"{name}: {problem}")
        return data
