"""Helpers for the JSON documents the library writes (run records, trace and job summaries).

A document's block is often a record's fields under their own names, in a stated order; it is
written as :func:`pick` of those names, so the names stand once and no value is typed twice.
"""

from __future__ import annotations

from typing import Any

__all__ = ["pick"]


def pick(obj: object, *names: str) -> dict[str, Any]:
    """``{name: obj.name}`` for each of ``names``, in that order.

    Args:
        obj: A record (a dataclass, or anything with those attributes).
        *names: The attributes to take; the document's keys, in its order.

    Returns:
        A new dict (the values themselves, not copies).

    >>> from types import SimpleNamespace
    >>> pick(SimpleNamespace(a=1, b=2.5), "b", "a")
    {'b': 2.5, 'a': 1}
    """
    return {name: getattr(obj, name) for name in names}
