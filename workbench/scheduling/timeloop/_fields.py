"""Small checked accessors for Timeloop spec fields: each bad field is one line naming it."""

from __future__ import annotations

import re
from typing import Any

from workbench.scheduling.timeloop._yaml import TimeloopSpecError

__all__ = [
    "MAX_FIGURE",
    "as_int",
    "as_list",
    "as_map",
    "as_name",
    "as_number",
    "factors",
    "names",
    "permutation",
]


def fail(where: str, what: str) -> TimeloopSpecError:
    """The error for a bad field: ``where: what``."""
    return TimeloopSpecError(f"{where}: {what}")


def as_map(value: Any, where: str, allowed: frozenset[str] | None = None) -> dict[str, Any]:
    """A mapping with string keys, and (if ``allowed``) only those keys."""
    if not isinstance(value, dict):
        raise fail(where, f"expected a mapping, got {type(value).__name__}")
    if allowed is not None:
        extra = sorted(str(k) for k in value if k not in allowed)
        if extra:
            raise fail(where, f"unknown key {extra[0]!r} (expected one of {sorted(allowed)})")
    return value


def as_list(value: Any, where: str) -> list[Any]:
    """A list (None reads as empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(where, f"expected a list, got {type(value).__name__}")
    return value


def as_name(value: Any, where: str) -> str:
    """A non-empty name of letters, digits and ``_``."""
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise fail(where, f"expected a name, got {value!r}")
    return value


def as_int(value: Any, where: str, low: int = 1) -> int:
    """An integer >= ``low`` (a float that is a whole number is accepted: ``1e3``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(where, f"expected an integer, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise fail(where, f"expected an integer, got {value!r}")
    if value < low or value > 2**62:
        shown = f"{value!r}" if len(repr(value)) < 40 else "a huge number"
        raise fail(where, f"{shown} is out of range ({low} to 2**62)")
    return int(value)


#: Largest figure a spec may give (pJ, um^2, words per cycle, seconds): far beyond any real one.
MAX_FIGURE = 1e30


def as_number(value: Any, where: str) -> float:
    """A finite number in ``[0, MAX_FIGURE]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(where, f"expected a number, got {value!r}")
    if not 0 <= value <= MAX_FIGURE:
        shown = f"{value!r}" if len(repr(value)) < 40 else "a huge number"
        raise fail(where, f"{shown} must be a finite number in [0, {MAX_FIGURE:g}]")
    return float(value)


def names(value: Any, where: str) -> tuple[str, ...]:
    """A list of names (a single name reads as a list of one)."""
    items = [value] if isinstance(value, str) else as_list(value, where)
    return tuple(as_name(v, f"{where}[{i}]") for i, v in enumerate(items))


_FACTOR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)\s*(<=|>=|=)?\s*([0-9]+)")


def factors(value: Any, where: str) -> dict[str, tuple[str, int]]:
    """Timeloop factors: ``"R=3 P=16"``, ``"R=1,S=1"``, ``"C1 M8"`` or a list; ``{dim: (op, n)}``.

    ``op`` is ``=`` (exact), ``<=`` or ``>=`` (bounds, in constraints only). Commas separate
    factors as spaces do (Timeloop's front end writes them so in ``parsed-processed-input``).
    """
    if isinstance(value, str):
        items: list[Any] = [x for x in re.split(r"[,\s]+", value) if x]
    else:
        items = as_list(value, where)
    out: dict[str, tuple[str, int]] = {}
    for i, item in enumerate(items):
        m = _FACTOR.fullmatch(str(item).strip()) if isinstance(item, str) else None
        if m is None:
            raise fail(f"{where}[{i}]", f"expected a factor like 'K=16', got {item!r}")
        dim, op, n = m.group(1), m.group(2) or "=", int(m.group(3))
        if dim in out:
            raise fail(where, f"factor of {dim} given twice")
        if n < 1 and op != ">=":
            raise fail(f"{where}[{i}]", f"factor {item!r} must be >= 1")
        out[dim] = (op, n)
    return out


def permutation(value: Any, where: str) -> tuple[str, ...]:
    """A permutation, innermost first: ``"RPK"`` (one-letter dims) or a list of dim names."""
    dims = tuple(value.replace(" ", "")) if isinstance(value, str) else names(value, where)
    if len(set(dims)) != len(dims):
        raise fail(where, f"a dimension repeats in permutation {value!r}")
    return dims
