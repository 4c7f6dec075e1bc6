"""Strict number checks for the hardware schema, applied before Pydantic converts a value.

Lax Pydantic turns ``true`` into 1, ``"16"`` into 16 and ``16.0`` into an integer; a profile is
data a person wrote, so each of those is an error here. Every number must also lie within a
physical range for its unit (read from the field name's suffix), far beyond any real part but
low enough that the cost model's products stay finite.
"""

from __future__ import annotations

import math
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

__all__ = ["check_value"]

#: Largest value accepted per unit (field-name suffix): far beyond any real part, low enough
#: that products in the cost model stay finite and exact. Checked before type conversion.
_UPPER = (
    ("capacity_bytes", 2**60),
    ("bytes_per_s", 1e18),
    ("flops_per_s", 1e21),
    ("ops_per_s", 1e21),
    ("_hz", 1e12),
    ("_pj_per_byte", 1e9),
    ("_pj_per_flop", 1e9),
    ("_w", 1e7),
    ("_s", 1e3),
)
#: Smallest non-zero value accepted per unit: a rate or fraction this small is a typo (1e-300),
#: and would turn every time into an overflow or a division by (almost) zero. Zero itself is
#: left to each field's own bound (several fields use 0 for "not given").
_LOWER = (
    ("efficiency", 1e-3),
    ("_fraction", 1e-3),
    ("bytes_per_s", 1e3),
    ("flops_per_s", 1e3),
    ("ops_per_s", 1e3),
    ("_hz", 1e3),
)
#: Largest count (cores, tile sizes, links, cluster size).
_MAX_COUNT = 2**24


def _kind(value: object) -> str:
    names = {bool: "a boolean", str: "a string", float: "a fractional number", int: "a number"}
    return names.get(type(value), f"a {type(value).__name__}")


def check_value(value: Any, ann: Any, name: str) -> None:
    """Refuse what lax Pydantic would coerce, and numbers beyond their unit's physical range.

    A bool or a string is not a number, a float is not an integer, only a bool is a bool, and a
    literal (``schema_version: 1``, ``value: last``) matches only a value of its own type.
    """
    origin, args = get_origin(ann), get_args(ann)
    if origin in (Union, UnionType) and value is not None:
        given = [a for a in args if a is not type(None)]
        if len(given) == 1:  # X | None: the value, when given, is checked as an X
            check_value(value, given[0], name)
        return
    if origin is Literal:
        # NOTE: ``true == 1`` and ``1.0 == 1``; a literal matches only a value of its own type.
        # (a value of the right type but not among them gets Pydantic's own message)
        if not any(type(value) is type(a) for a in args):
            allowed = " or ".join(repr(a) for a in args)
            raise ValueError(f"must be one of {allowed}, not {_kind(value)}")
    elif ann is bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {_kind(value)}")
    elif ann in (int, float):
        if isinstance(value, bool | str) or (ann is int and isinstance(value, float)):
            raise ValueError(
                f"must be {'an integer' if ann is int else 'a number'}, not {_kind(value)}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number (not NaN or infinity)")
        if isinstance(value, int | float):
            default = _MAX_COUNT if ann is int else 1e30
            limit = next((v for suffix, v in _UPPER if name.endswith(suffix)), default)
            if abs(value) > limit:
                shown = (
                    f"{value:g}" if abs(value) < 1e300 else f"about 2**{int(value).bit_length()}"
                )
                raise ValueError(f"{shown} is out of range (at most {limit:g})")
            low = next((v for suffix, v in _LOWER if name.endswith(suffix)), 0.0)
            if value != 0 and abs(value) < low:
                raise ValueError(f"{value:g} is below the physical range (at least {low:g})")
    elif origin is dict and len(args) == 2 and isinstance(value, dict):
        for key, item in value.items():
            try:
                check_value(item, args[1], name)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
    elif origin is tuple and isinstance(value, list | tuple):
        items = args[:1] * len(value) if len(args) == 2 and args[1] is Ellipsis else args
        for i, (item, sub) in enumerate(zip(value, items, strict=False)):
            try:
                check_value(item, sub, name)
            except ValueError as exc:
                raise ValueError(f"[{i}]: {exc}") from None
