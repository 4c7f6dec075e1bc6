"""Timeloop v0.4 problem files as the loop-nest evaluator's :class:`Problem`.

``problem: shape: {dimensions, data_spaces, coefficients}, instance: {dim: bound, ...}``. Each
data space's ``projection`` lists its axes; an axis is a list of terms, a term ``[dim]`` or
``[dim, coefficient]`` (the coefficient a name from ``coefficients`` / ``instance`` or a number):
Inputs of a conv is ``[[C]], [[R, Wdilation], [P, Wstride]], ...``. An ``instance`` key that
names neither a dimension nor a coefficient (``H``, ``Hpad``) is ignored, as Timeloop ignores it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.scheduling.nest_eval import Problem, Tensor
from workbench.scheduling.timeloop._fields import as_int, as_list, as_map, as_name, as_number, fail
from workbench.scheduling.timeloop._yaml import load_file

__all__ = ["read_problem"]

_SHAPE = frozenset({"name", "dimensions", "data_spaces", "coefficients"})
_SPACE = frozenset({"name", "projection", "read_write"})


def _coefficients(shape: dict[str, Any], where: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, c in enumerate(as_list(shape.get("coefficients"), f"{where}.coefficients")):
        at = f"{where}.coefficients[{i}]"
        c = as_map(c, at, frozenset({"name", "default"}))
        out[as_name(c.get("name"), f"{at}.name")] = as_int(c.get("default", 1), f"{at}.default")
    return out


def _term(raw: Any, dims: set[str], coefs: dict[str, int], where: str) -> tuple[str, int]:
    items = as_list(raw, where)
    found = [x for x in items if x in dims]
    rest = [x for x in items if x not in dims]
    if len(found) != 1 or len(rest) > 1:
        raise fail(where, f"a term is [dim] or [dim, coefficient], got {raw!r}")
    if not rest:
        return found[0], 1
    c = rest[0]
    if isinstance(c, str):
        if c not in coefs:
            raise fail(where, f"unknown coefficient {c!r}")
        return found[0], coefs[c]
    return found[0], as_int(c, where)


def _tensor(raw: Any, dims: set[str], coefs: dict[str, int], where: str) -> Tensor:
    sp = as_map(raw, where, _SPACE)
    axes = []
    for i, axis in enumerate(as_list(sp.get("projection"), f"{where}.projection")):
        at = f"{where}.projection[{i}]"
        terms = as_list(axis, at)
        if not terms:
            raise fail(at, "an axis needs at least one term")
        axes.append(tuple(_term(t, dims, coefs, f"{at}[{j}]") for j, t in enumerate(terms)))
    if not axes:
        raise fail(f"{where}.projection", "a data space needs at least one axis")
    rw = sp.get("read_write", False)
    if not isinstance(rw, bool):
        raise fail(f"{where}.read_write", f"expected true or false, got {rw!r}")
    return Tensor(as_name(sp.get("name"), f"{where}.name"), tuple(axes), rw)


def read_problem(path: str | Path) -> Problem:
    """Read a Timeloop v0.4 problem file.

    Raises:
        TimeloopSpecError: A malformed file (one line naming the file and the field).
    """
    p = str(path)
    body = as_map(
        load_file(path, "problem"), f"{p}: problem", frozenset({"version", "shape", "instance"})
    )
    shape = as_map(body.get("shape"), f"{p}: shape", _SHAPE)
    inst = as_map(body.get("instance"), f"{p}: instance")
    dims = [
        as_name(d, f"{p}: shape.dimensions")
        for d in as_list(shape.get("dimensions"), f"{p}: shape.dimensions")
    ]
    if not dims or len(set(dims)) != len(dims):
        raise fail(f"{p}: shape.dimensions", "expected distinct dimension names")
    coefs = _coefficients(shape, f"{p}: shape")
    for name in coefs:
        if name in inst:
            coefs[name] = as_int(inst[name], f"{p}: instance.{name}")
    for key, value in inst.items():
        if key not in dims and key not in coefs and key != "densities":
            # NOTE: Timeloop ignores such keys (the example designs' H, W, Hpad, Wpad: padding
            # is not modelled); they must still be numbers.
            as_number(value, f"{p}: instance.{key}")
    if "densities" in inst:
        for k, v in as_map(inst["densities"], f"{p}: instance.densities").items():
            as_number(
                v.get("density", v) if isinstance(v, dict) else v, f"{p}: instance.densities.{k}"
            )
    bounds = tuple((d, as_int(inst.get(d), f"{p}: instance.{d}")) for d in dims)
    spaces = as_list(shape.get("data_spaces"), f"{p}: shape.data_spaces")
    tensors = tuple(
        _tensor(s, set(dims), coefs, f"{p}: shape.data_spaces[{i}]") for i, s in enumerate(spaces)
    )
    names = [t.name for t in tensors]
    if not tensors or len(set(names)) != len(names):
        raise fail(f"{p}: shape.data_spaces", "expected data spaces with distinct names")
    return Problem(bounds=bounds, tensors=tensors)
