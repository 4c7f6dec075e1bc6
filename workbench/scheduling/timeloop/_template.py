"""The subset of Timeloop's newer spec format this reader takes: ``{{ }}`` and ``variables``.

The timeloop+accelergy exercise's ``arch.yaml`` is a Jinja template (``{{psum_datawidth}}``,
filled from the ``jinja_parse_data`` its ``run_example.py`` passes) with a top-level
``variables:`` block whose names the attributes use (``datawidth: INPUT_WEIGHT_DATAWIDTH``,
``width: max(INPUT_WEIGHT_DATAWIDTH, 16)``). Two well-defined steps, nothing else:

1. :func:`render`: ``{{ name }}`` of a declared value, through Jinja2's sandboxed environment with
   strict undefined names. A name without a value, a statement the sandbox refuses, or a
   function it does not have (``include()``) is one line naming the construct and
   ``FILE:LINE``.
2. :func:`resolve`: the ``variables`` in order, then every string under an ``attributes`` or
   ``spatial`` mapping, read as arithmetic over declared variables: numbers, names,
   ``+ - * / // % **``, parentheses and the calls in :data:`FUNCTIONS`. A string that names
   anything undeclared, or is not an expression, stays a string (``LPDDR4``, ``45nm``); one over
   declared names that uses anything else (attributes, indexing, comparisons) is refused.
   Never ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from workbench.scheduling.timeloop._fields import fail
from workbench.scheduling.timeloop._yaml import Value

__all__ = ["FUNCTIONS", "render", "resolve"]

#: Calls an attribute expression may make.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "max": max,
    "min": min,
    "abs": abs,
    "round": round,
    "int": int,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_MARKS = ("{{", "{%", "{#")


def _line_of(exc: BaseException) -> int | None:
    line = getattr(exc, "lineno", None)
    if line is None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<template>"]
        line = frames[-1].lineno if frames else None
    return line


def render(text: str, where: str, values: Mapping[str, Value] | None = None) -> str:
    """``text`` with its ``{{ name }}`` filled from ``values`` (unchanged if it has none).

    Raises:
        TimeloopSpecError: ``FILE:LINE``, the construct, and what to do, on one line.
    """
    if not any(m in text for m in _MARKS):
        return text
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    try:
        return env.from_string(text).render(dict(values or {}))
    except jinja2.UndefinedError as exc:
        line = _line_of(exc)
        at = where if line is None else f"{where}:{line}"
        raise fail(at, f"Jinja {exc.message}; give it a value (--var NAME=VALUE)") from None
    except Exception as exc:  # NOTE: a template may raise anything (TypeError from an include)
        line = _line_of(exc)
        at = where if line is None else f"{where}:{line}"
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise fail(at, f"Jinja construct not read ({msg}); only {{{{ name }}}} is") from None


def _evaluate(node: ast.AST, names: Mapping[str, Value], text: str) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, names, text)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, names, text), _evaluate(node.right, names, text)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, names, text))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
    ):
        return FUNCTIONS[node.func.id](*(_evaluate(a, names, text) for a in node.args))
    raise ValueError(f"{type(node).__name__} in {text!r}")


def _value(text: str, names: Mapping[str, Value], where: str) -> Value:
    """``text`` as arithmetic over ``names``, or unchanged if it is no expression over them."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return text
    if isinstance(tree.body, ast.Name):
        return names.get(tree.body.id, text)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if isinstance(tree.body, ast.Constant) or used - set(names) - set(FUNCTIONS):
        return text
    try:
        out = _evaluate(tree, names, text)
    except ValueError as exc:
        raise fail(where, f"expression construct not read: {exc}") from None
    except (ArithmeticError, TypeError) as exc:
        raise fail(where, f"{text!r} does not evaluate ({type(exc).__name__})") from None
    if isinstance(out, float) and not math.isfinite(out):
        raise fail(where, f"{text!r} evaluates to {out}")
    return out


def _line(source: str, value: str) -> str:
    for i, line in enumerate(source.splitlines(), start=1):
        if value in line:
            return f":{i}"
    return ""


def resolve(doc: dict[str, Any], top: str, where: str, source: str) -> dict[str, Value]:
    """Fill ``doc[top]``'s attribute expressions from ``doc['variables']``, in place.

    Returns:
        The variables, each resolved (``version`` left out).

    Raises:
        TimeloopSpecError: ``FILE:LINE: what`` for a variable or expression it does not read.
    """
    raw = doc.get("variables") or {}
    if not isinstance(raw, dict):
        raise fail(f"{where}: variables", "expected a mapping of names to values")
    names: dict[str, Value] = {}
    for key, value in raw.items():
        if key == "version":
            continue
        at = f"{where}{_line(source, f'{key}:')}: variables.{key}"
        if isinstance(value, str):
            value = _value(value, names, at)
        if not isinstance(value, int | float | str | bool):
            raise fail(at, f"expected a number or a string, got {type(value).__name__}")
        names[str(key)] = value
    if names:
        _walk(doc.get(top), names, where, source, inside=False)
    return names


def _walk(node: Any, names: Mapping[str, Value], where: str, source: str, inside: bool) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, names, where, source, inside)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if inside and isinstance(value, str):
            node[key] = _value(value, names, f"{where}{_line(source, value)}: {key}")
        else:
            _walk(value, names, where, source, inside or key in ("attributes", "spatial"))
