"""The mapspace of a Timeloop arch and problem under constraints, as states and moves.

A state gives every *slot* (a storage level's temporal loops, a fan-out's spatial loops) a factor
per problem dimension, every storage level an order of its loops and the tensors it keeps. The
constraints (the arch's own and a constraints file's) fix factors (``K=16``), bound them
(``K<=16``), fix the innermost loops of a permutation, pin dims to mesh X or Y (``split``, read
as Timeloop's front end reads it: :meth:`Space._pin_axes`) and force tensors kept or bypassed
(a ``!Parallel`` branch bypasses what it does not keep); what they leave open is searched. Which
mesh axis an unpinned dim takes is searched too: a fan-out's factors are valid when some
assignment of its dims to X and Y fits ``meshX`` x ``meshY`` (:meth:`Space._mesh_split` tries
them all; Timeloop puts each dim of a fan-out wholly on one axis, and its model's counts do not
depend on which). The outermost level keeps every tensor. Moves (:meth:`Space.neighbours`):
move one prime factor of a dimension from one slot to another, move one loop to another place
in its level's order, keep or bypass one tensor at one level.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from workbench.scheduling.nest_eval import Problem
from workbench.scheduling.timeloop._fields import fail
from workbench.scheduling.timeloop.arch import Arch, Fanout
from workbench.scheduling.timeloop.constraints import Constraint
from workbench.scheduling.timeloop.mapping import Loops, Mapping

__all__ = ["Space", "State"]


@dataclass(frozen=True, slots=True)
class State:
    """A point of the mapspace (hashable).

    Attributes:
        factors: Per slot (storage levels then fan-outs, the :attr:`Space.slots` order), the
            factor of every dimension (problem order).
        orders: Per storage level, its free dims outermost first (the fixed innermost follow).
        keeps: Per storage level, the tensors it keeps.
    """

    factors: tuple[tuple[int, ...], ...]
    orders: tuple[tuple[str, ...], ...]
    keeps: tuple[frozenset[str], ...]


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return [*out, n] if n > 1 else out


class Space:
    """The constrained mapspace of ``arch`` x ``problem`` (see the module doc)."""

    def __init__(self, arch: Arch, problem: Problem, constraints: tuple[Constraint, ...]):
        self.arch, self.problem = arch, problem
        self.dims = [d for d, _ in problem.bounds]
        self.bounds = dict(problem.bounds)
        self.tensors = [t.name for t in problem.tensors]
        self.storages = [s.name for s in arch.storages]
        self.fanouts: list[Fanout] = list(arch.fanouts)
        self.slots = [*self.storages, *(f.name for f in self.fanouts)]
        self.fixed: dict[tuple[int, str], int] = {}
        self.upper: dict[tuple[int, str], int] = {}
        self.lower: dict[tuple[int, str], int] = {}
        self.inner: dict[int, tuple[str, ...]] = {}
        self.axis: dict[tuple[int, str], str] = {}
        self.keep_forced: dict[int, set[str]] = {i: set() for i in range(len(self.storages))}
        self.bypass_forced: dict[int, set[str]] = {i: set() for i in range(len(self.storages))}
        self.keep_forced[0] = set(self.tensors)
        for c in (*arch.constraints, *constraints):
            self._apply(c)
        for name, kept in arch.branch_keeps:
            i = self.storages.index(name)
            self.bypass_forced[i] |= set(self.tensors) - kept - self.keep_forced[i]

    def _slot(self, c: Constraint) -> int:
        fan = self.arch.fanout(c.target)
        if c.kind == "spatial" and fan is None and c.target in self.storages:
            below = self.arch.fanouts_below(c.target)
            if not below:
                raise fail(f"constraint on {c.target!r}", "no spatial fan-out below it")
            fan = below[0]
        if fan is not None:
            return self.slots.index(fan.name)
        if c.target not in self.storages:
            raise fail("constraint", f"{c.target!r} is not a storage level or container")
        return self.storages.index(c.target)

    def _apply(self, c: Constraint) -> None:
        i = self._slot(c)
        spatial_slot = i >= len(self.storages)
        for d, (op, n) in c.factors.items():
            if d not in self.dims:
                raise fail(f"constraint on {c.target!r}", f"unknown dimension {d!r}")
            if c.kind == "temporal" and spatial_slot:
                continue  # a fan-out holds no temporal loops
            table = {"=": self.fixed, "<=": self.upper, ">=": self.lower}[op]
            table[i, d] = n
        if c.kind == "spatial" and c.split is not None:
            self._pin_axes(i, c)
        elif c.kind == "temporal" and not spatial_slot:
            self.inner[i] = c.permutation
        elif c.kind == "dataspace" and not spatial_slot:
            for t in (*(c.keep or ()), *(c.bypass or ())):
                if t not in self.tensors:
                    raise fail(f"constraint on {c.target!r}", f"unknown data space {t!r}")
            self.keep_forced[i] |= set(c.keep or ())
            self.bypass_forced[i] |= set(c.bypass or ())
        if self.keep_forced[0] & self.bypass_forced[0]:
            raise fail(f"constraint on {c.target!r}", "the outermost level must keep every tensor")

    def _pin_axes(self, i: int, c: Constraint) -> None:
        """Pin dims of fan-out slot ``i`` to mesh X or Y as Timeloop reads ``split``.

        Timeloop's v0.4 front end (timeloopfe's ``PermutationOptimizerProcessor``) first puts
        in front of (inside) a partial permutation every dim it does not list whose factor
        names 1 (``R=1``) or whose bound is 1; the first ``split`` dims of that permutation go on X,
        the rest on Y. A dim still unlisted follows the listed ones, so it lands on Y unless
        ``split`` reaches past the list (then it is free). Example (the example designs'
        simple_weight_stationary): ``permutation: [C, M]``, ``split: 1``, ``R=1 S=1 P=1 Q=1``
        and ``N`` of bound 1 read as ``N Q P S R C M``: only N (bound 1) on X, C and M on Y.
        """
        listed = list(c.permutation)
        unit = [d for d, (_, n) in c.factors.items() if n == 1]  # as timeloopfe: any op
        unit += [d for d in self.dims if self.bounds[d] == 1]
        inserted = [d for d in dict.fromkeys(unit) if d not in listed]
        full = [*reversed(inserted), *listed]  # each was inserted at the front in turn
        assert c.split is not None
        for j, d in enumerate(full):
            self.axis[i, d] = "X" if j < c.split else "Y"
        if c.split <= len(full):
            for d in self.dims:
                self.axis.setdefault((i, d), "Y")

    # --- states ---------------------------------------------------------------------------

    def initial(self) -> State:
        """Fixed factors where the constraints fix them, the rest at the outermost free slot."""
        factors = [[self.fixed.get((i, d), 1) for d in self.dims] for i in range(len(self.slots))]
        for k, d in enumerate(self.dims):
            placed = math.prod(f[k] for f in factors)
            if self.bounds[d] % placed:
                raise fail(
                    "constraints",
                    f"fixed factors of {d} multiply to {placed}, not a divisor of {self.bounds[d]}",
                )
            rest = self.bounds[d] // placed
            free = [i for i in range(len(self.slots)) if (i, d) not in self.fixed]
            if rest > 1 and not free:
                raise fail(
                    "constraints",
                    f"fixed factors of {d} multiply to {placed}, the layer has {self.bounds[d]}",
                )
            if rest > 1:
                factors[free[0]][k] *= rest
        orders = tuple(
            tuple(d for d in self.dims if d not in self.inner.get(i, ()))
            for i in range(len(self.storages))
        )
        keeps = tuple(
            frozenset(set(self.tensors) - self.bypass_forced[i]) for i in range(len(self.storages))
        )
        return State(tuple(tuple(f) for f in factors), orders, keeps)

    def valid(self, s: State) -> bool:
        """Bounds, fixed factors and mesh sizes hold (capacity is the evaluator's check)."""
        for i, f in enumerate(s.factors):
            for k, d in enumerate(self.dims):
                if f[k] > self.upper.get((i, d), f[k]) or f[k] < self.lower.get((i, d), 1):
                    return False
        return all(
            self._mesh_split(s.factors[len(self.storages) + j], j) is not None
            for j in range(len(self.fanouts))
        )

    def _mesh_split(self, f: tuple[int, ...], j: int) -> tuple[Loops, Loops] | None:
        """Loops of fan-out ``j`` on mesh X and Y, or None if they do not fit."""
        fan, i = self.fanouts[j], len(self.storages) + j
        loops = [(d, f[k]) for k, d in enumerate(self.dims) if f[k] > 1]
        pinned_x = [lp for lp in loops if self.axis.get((i, lp[0])) == "X"]
        pinned_y = [lp for lp in loops if self.axis.get((i, lp[0])) == "Y"]
        free = [lp for lp in loops if (i, lp[0]) not in self.axis]
        for mask in itertools.product((0, 1), repeat=len(free)):
            x = [*pinned_x, *(lp for lp, m in zip(free, mask, strict=True) if not m)]
            y = [*pinned_y, *(lp for lp, m in zip(free, mask, strict=True) if m)]
            if (
                math.prod(b for _, b in x) <= fan.mesh_x
                and math.prod(b for _, b in y) <= fan.mesh_y
            ):
                return tuple(x), tuple(y)
        return None

    def mapping(self, s: State) -> Mapping:
        """The :class:`Mapping` of a valid state."""
        temporal = []
        for i, name in enumerate(self.storages):
            order = [*s.orders[i], *reversed(self.inner.get(i, ()))]
            f = dict(zip(self.dims, s.factors[i], strict=True))
            temporal.append((name, tuple((d, f[d]) for d in order if f[d] > 1)))
        spatial = []
        for j, fan in enumerate(self.fanouts):
            split = self._mesh_split(s.factors[len(self.storages) + j], j)
            assert split is not None
            spatial.append((fan.name, *split))
        return Mapping(
            temporal=tuple(temporal),
            spatial=tuple(spatial),
            keep=tuple(zip(self.storages, s.keeps, strict=True)),
        )

    # --- moves ----------------------------------------------------------------------------

    def neighbours(self, s: State) -> list[State]:
        """Every state one move away (factor, order or bypass), valid or not."""
        return [*self._factor_moves(s), *self._order_moves(s), *self._keep_moves(s)]

    def _factor_moves(self, s: State) -> list[State]:
        out = []
        n = len(self.slots)
        for k, d in enumerate(self.dims):
            for a in range(n):
                if (a, d) in self.fixed or s.factors[a][k] == 1:
                    continue
                for p in sorted(set(_primes(s.factors[a][k]))):
                    for b in range(n):
                        if b == a or (b, d) in self.fixed:
                            continue
                        f = [list(x) for x in s.factors]
                        f[a][k] //= p
                        f[b][k] *= p
                        out.append(State(tuple(map(tuple, f)), s.orders, s.keeps))
        return out

    def _order_moves(self, s: State) -> list[State]:
        out = []
        for i, order in enumerate(s.orders):
            f = dict(zip(self.dims, s.factors[i], strict=True))
            live = [d for d in order if f[d] > 1]
            for d in live:
                rest = [x for x in live if x != d]
                for pos in range(len(rest) + 1):
                    new = (*rest[:pos], d, *rest[pos:])
                    if list(new) == live:
                        continue
                    full = (*new, *(x for x in order if f[x] == 1))
                    orders = (*s.orders[:i], full, *s.orders[i + 1 :])
                    out.append(State(s.factors, orders, s.keeps))
        return out

    def _keep_moves(self, s: State) -> list[State]:
        out = []
        for i in range(1, len(self.storages)):
            for t in self.tensors:
                if t in self.keep_forced[i] or t in self.bypass_forced[i]:
                    continue
                keeps = (*s.keeps[:i], s.keeps[i] ^ {t}, *s.keeps[i + 1 :])
                out.append(State(s.factors, s.orders, keeps))
        return out
