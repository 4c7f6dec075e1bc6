"""Timeloop mapspace constraints, and the directives of a mapping (the same syntax).

A directive names a ``target`` (a storage level, or a container / ``inter_NAME_spatial`` for a
fan-out) and a ``type``: ``temporal`` or ``spatial`` (``factors`` and a ``permutation``,
innermost first), or ``dataspace`` / ``datatype`` / ``bypass`` (``keep`` and ``bypass`` lists).
In a mapping every factor is exact (``K=16``); a constraint may bound one (``K<=16``) and give
a partial permutation (the listed dims innermost, in that order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.scheduling.timeloop._fields import (
    as_int,
    as_list,
    as_map,
    as_name,
    factors,
    fail,
    names,
    permutation,
)
from workbench.scheduling.timeloop._yaml import TimeloopSpecError, load_file

__all__ = ["Constraint", "node_constraints", "read_constraints", "read_directives"]

_TYPES = ("temporal", "spatial", "dataspace", "datatype", "bypass")
_KEYS = frozenset({"target", "type", "factors", "permutation", "keep", "bypass", "split"})
_KEYS |= frozenset({"no_link_transfer", "no_multicast_no_reduction", "min_parallelism"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraint:
    """One directive.

    Attributes:
        target: The storage level or fan-out it applies to.
        kind: ``temporal``, ``spatial`` or ``dataspace``.
        factors: ``{dim: (op, n)}``, op ``=``, ``<=`` or ``>=``.
        permutation: Dims innermost first (a prefix in a constraint).
        keep / bypass: Tensors kept at / bypassing the target (None: not said).
        split: For a spatial directive, how many loops of the permutation go on mesh X.
    """

    target: str
    kind: str
    factors: dict[str, tuple[str, int]]
    permutation: tuple[str, ...] = ()
    keep: tuple[str, ...] | None = None
    bypass: tuple[str, ...] | None = None
    split: int | None = None


def directive(raw: Any, where: str) -> Constraint:
    """One directive from its YAML mapping."""
    d = as_map(raw, where, _KEYS)
    kind = d.get("type")
    if kind not in _TYPES:
        raise fail(f"{where}.type", f"expected one of {', '.join(_TYPES)}, got {kind!r}")
    kind = "dataspace" if kind in ("datatype", "bypass") else kind
    return Constraint(
        target=as_name(d.get("target"), f"{where}.target"),
        kind=kind,
        factors=factors(d.get("factors", ""), f"{where}.factors"),
        permutation=permutation(d.get("permutation", ""), f"{where}.permutation"),
        keep=names(d["keep"], f"{where}.keep") if "keep" in d else None,
        bypass=names(d["bypass"], f"{where}.bypass") if "bypass" in d else None,
        split=as_int(d["split"], f"{where}.split", 0) if "split" in d else None,
    )


def read_directives(raw: Any, where: str) -> tuple[Constraint, ...]:
    """A list of directives."""
    return tuple(directive(r, f"{where}[{i}]") for i, r in enumerate(as_list(raw, where)))


def node_constraints(raw: Any, target: str, where: str) -> list[Constraint]:
    """Constraints written on an arch node: ``{dataspace: ..., temporal: ..., spatial: ...}``."""
    if raw is None:
        return []
    body = as_map(raw, where, frozenset({"dataspace", "temporal", "spatial"}))
    return [
        directive({**as_map(v, f"{where}.{k}"), "target": target, "type": k}, f"{where}.{k}")
        for k, v in body.items()
    ]


def read_constraints(path: str | Path) -> tuple[Constraint, ...]:
    """Read a constraints file (``mapspace_constraints`` or ``architecture_constraints``).

    Raises:
        TimeloopSpecError: A malformed file (one line naming the file and the field).
    """
    p = str(path)
    for top in ("mapspace_constraints", "architecture_constraints", "constraints"):
        try:
            body = load_file(path, top)
        except TimeloopSpecError as exc:
            if "expected a top-level" in str(exc):
                continue
            raise
        if isinstance(body, list):
            return read_directives(body, f"{p}: {top}")
        body = as_map(body, f"{p}: {top}", frozenset({"version", "targets"}))
        return read_directives(body.get("targets"), f"{p}: {top}.targets")
    raise fail(p, "expected a top-level 'mapspace_constraints:' key")
