"""A Timeloop mapping (``mapping: [directives]``) on an :class:`Arch`: loops per level, bypass.

Every storage level gets its temporal loops (outermost first; a Timeloop permutation lists them
innermost first), every fan-out its spatial loops (mesh X loops, then Y), and every storage level
the tensors it keeps. A factor not given is 1; a tensor not bypassed is kept (Timeloop's model
defaults). The outermost level keeps every tensor. Loops of bound 1 are dropped (they change
nothing), so two spellings of one mapping compare equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from workbench.scheduling.nest_eval import Problem
from workbench.scheduling.timeloop._fields import fail
from workbench.scheduling.timeloop._yaml import load_file, load_text
from workbench.scheduling.timeloop.arch import Arch
from workbench.scheduling.timeloop.constraints import Constraint, read_directives

__all__ = ["Loops", "Mapping", "mapping_from_directives", "mapping_from_text", "read_mapping"]

Loops = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Mapping:
    """Loops and bypass of a mapping, by level name.

    Attributes:
        temporal: ``(storage, loops outermost first)`` for every storage level, outermost first.
        spatial: ``(fan-out, X loops, Y loops)`` for every fan-out.
        keep: ``(storage, tensors kept)`` for every storage level.
    """

    temporal: tuple[tuple[str, Loops], ...]
    spatial: tuple[tuple[str, Loops, Loops], ...]
    keep: tuple[tuple[str, frozenset[str]], ...]

    def loops_at(self, storage: str) -> Loops:
        """Temporal loops of ``storage``, outermost first."""
        return dict(self.temporal)[storage]

    def kept(self, storage: str) -> frozenset[str]:
        """Tensors ``storage`` keeps."""
        return dict(self.keep)[storage]

    def spatial_at(self, fanout: str) -> Loops:
        """Spatial loops of ``fanout`` (X then Y)."""
        x, y = next((x, y) for name, x, y in self.spatial if name == fanout)
        return (*x, *y)


def _ordered(c: Constraint, dims: list[str], where: str) -> Loops:
    for d, (op, _) in c.factors.items():
        if d not in dims:
            raise fail(where, f"unknown dimension {d!r}")
        if op != "=":
            raise fail(where, f"a mapping gives exact factors, not '{d}{op}'")
    for d in c.permutation:
        if d not in dims:
            raise fail(where, f"unknown dimension {d!r} in the permutation")
    inner_first = [*c.permutation, *[d for d in reversed(dims) if d not in c.permutation]]
    return tuple((d, c.factors[d][1]) for d in reversed(inner_first) if d in c.factors)


def _spatial(
    c: Constraint, fan_x: int, fan_y: int, dims: list[str], where: str
) -> tuple[Loops, Loops]:
    loops = tuple(reversed(_ordered(c, dims, where)))  # innermost first, as the permutation
    split = len(loops) if c.split is None else c.split
    perm = [*c.permutation, *[d for d, _ in loops if d not in c.permutation]]
    on_x = set(perm[:split])
    x = tuple(lp for lp in reversed(loops) if lp[0] in on_x and lp[1] > 1)
    y = tuple(lp for lp in reversed(loops) if lp[0] not in on_x and lp[1] > 1)
    for axis, ls, cap in (("X", x, fan_x), ("Y", y, fan_y)):
        used = math.prod(b for _, b in ls)
        if used > cap:
            raise fail(where, f"spatial loops on mesh {axis} use {used}, the mesh has {cap}")
    return x, y


def mapping_from_directives(
    arch: Arch, problem: Problem, directives: tuple[Constraint, ...], where: str
) -> Mapping:
    """Build a :class:`Mapping` from directives, checking every target and factor.

    Raises:
        TimeloopSpecError: An unknown target or dimension, a fan-out overfilled, a bypass at
            the outermost level.
    """
    dims = [d for d, _ in problem.bounds]
    tensors = {t.name for t in problem.tensors}
    temporal: dict[str, Loops] = {s.name: () for s in arch.storages}
    spatial: dict[str, tuple[Loops, Loops]] = {f.name: ((), ()) for f in arch.fanouts}
    keep = {s.name: frozenset(tensors) for s in arch.storages}
    for i, c in enumerate(directives):
        at = f"{where}[{i}]"
        fan = arch.fanout(c.target)
        if c.kind == "spatial" and fan is None and c.target in temporal:
            below = arch.fanouts_below(c.target)
            fan = below[0] if below else None
            if fan is None:
                raise fail(at, f"no spatial fan-out below {c.target!r}")
        if fan is None and c.target not in temporal:
            raise fail(
                f"{at}.target", f"{c.target!r} is not a storage level or container of the arch"
            )
        if c.kind == "temporal":
            loops = _ordered(c, dims, at)
            if fan is not None:
                if any(b > 1 for _, b in loops):
                    raise fail(at, f"temporal loops at fan-out {c.target!r} (it stores nothing)")
                continue
            temporal[c.target] = tuple(lp for lp in loops if lp[1] > 1)
        elif c.kind == "spatial":
            assert fan is not None
            spatial[fan.name] = _spatial(c, fan.mesh_x, fan.mesh_y, dims, at)
        else:
            kept = _kept(c, tensors, at)
            if fan is not None:
                if kept:
                    raise fail(
                        at, f"fan-out {c.target!r} stores nothing; it cannot keep {sorted(kept)}"
                    )
                continue
            keep[c.target] = kept
    top = arch.storages[0].name
    if keep[top] != tensors:
        raise fail(where, f"the outermost level {top!r} must keep every tensor")
    return Mapping(
        temporal=tuple(temporal.items()),
        spatial=tuple((k, x, y) for k, (x, y) in spatial.items()),
        keep=tuple(keep.items()),
    )


def _kept(c: Constraint, tensors: set[str], where: str) -> frozenset[str]:
    for t in (*(c.keep or ()), *(c.bypass or ())):
        if t not in tensors:
            raise fail(where, f"unknown data space {t!r}")
    if c.keep is not None and c.bypass is not None and set(c.keep) & set(c.bypass):
        raise fail(where, "a data space is both kept and bypassed")
    if c.keep is not None:
        return frozenset(c.keep)
    return frozenset(tensors - set(c.bypass or ()))


def read_mapping(path: str | Path, arch: Arch, problem: Problem) -> Mapping:
    """Read a Timeloop mapping file (``mapping:`` a list of directives) for ``arch``.

    Raises:
        TimeloopSpecError: A malformed file (one line naming the file and the field).
    """
    return _from_raw(load_file(path, "mapping"), arch, problem, str(path))


def mapping_from_text(text: str, arch: Arch, problem: Problem, where: str = "mapping") -> Mapping:
    """A mapping from Timeloop mapping YAML text (a notebook cell's string); errors name ``where``.

    Raises:
        TimeloopSpecError: Malformed text (one line naming ``where`` and the field).
    """
    return _from_raw(load_text(text, "mapping", where), arch, problem, where)


def _from_raw(raw: object, arch: Arch, problem: Problem, where: str) -> Mapping:
    if isinstance(raw, dict) and "targets" in raw:
        raw = raw["targets"]
    directives = read_directives(raw, f"{where}: mapping")
    return mapping_from_directives(arch, problem, directives, f"{where}: mapping")
