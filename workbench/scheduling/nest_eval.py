"""Access counts, energy and cycles of a mapped loop nest on a storage hierarchy (Timeloop-style).

A general evaluator for one einsum-like layer (a conv, a 1-D conv, a matmul) mapped onto a chain
of storage levels with spatial fan-out between them. It follows the accounting Timeloop
(Parashar et al., ISPASS 2019) prints in its ``timeloop-model.stats.txt``, and the golden tests
(``tests/golden/test_timeloop_reference.py``) check it against the published reference outputs of
the ISPASS 2020 Timeloop + Accelergy tutorial exercises:

* The *tile* of a tensor at a level is the data the loops at that level and below touch; each
  data-space axis is an affine sum of problem dimensions (``Wstride * P + R``), so its extent is
  ``sum(coef * (extent - 1)) + 1``.
* *Fills*: the first tile, then for every iteration of the temporal loops above the level:
  nothing when only loops that do not index the tensor changed (the tile stays resident), the
  new words only when the innermost loop above the level moved (a sliding window keeps its
  overlap), and the whole tile otherwise (an outer loop moved and the inner ones wrapped).
* *Reads* of a level serve its child (the next level that keeps the tensor, or the MACs): the
  child's fills, divided by the multicast factor (spatial loops between them that do not index
  the tensor deliver one read to several children). The MACs read one operand each.
* Outputs are read-write: a level's *updates* are its child's write-backs (every tile it ever
  held, divided by the spatial-reduction factor); its fills skip the first touch of each
  partial sum (it starts at zero); the MACs read a partial sum except on its first touch.
* Energy: a level moves ``block_words`` words per access; reads and writes (fills, updates) of a
  tensor cost ``ceil(words / block_words)`` vector accesses at the level's read or write energy.
* Cycles: the temporal iterations (one MAC per PE per cycle) or, if a level's bandwidth limit is
  set and lower, its accesses per instance over that bandwidth (shared, read or write).

* Leakage: ``leak_pj`` per instance per cycle.

Not modelled (stated): address generation, the
network's own energy (Timeloop's tutorial networks carry none), a wrapped loop reusing the
overlap of a sliding window, and spatial forwarding between neighbouring PEs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from workbench.errors import WorkbenchError

__all__ = ["Level", "LevelMap", "NestStats", "Problem", "Tensor", "evaluate", "tile_words"]


@dataclass(frozen=True, slots=True)
class Tensor:
    """A data space: its name, its axes as affine sums of problem dims, and whether it is written.

    Attributes:
        name: ``Weights``, ``Inputs``, ``Outputs``, ...
        axes: One tuple per axis of ``(dim, coefficient)`` terms, e.g. ``(("P", 1), ("R", 1))``.
        read_write: True for the output (partial sums go back up).
    """

    name: str
    axes: tuple[tuple[tuple[str, int], ...], ...]
    read_write: bool = False

    def dims(self) -> frozenset[str]:
        """Problem dims that index this tensor."""
        return frozenset(d for axis in self.axes for d, _ in axis)


@dataclass(frozen=True, slots=True)
class Problem:
    """Problem dims with their bounds, and the tensors."""

    bounds: tuple[tuple[str, int], ...]
    tensors: tuple[Tensor, ...]

    @property
    def macs(self) -> int:
        """Multiply-accumulates: the product of all bounds."""
        return math.prod(b for _, b in self.bounds)


@dataclass(frozen=True, slots=True)
class Level:
    """One storage level of the architecture (per instance).

    Attributes:
        name: The level's name.
        keeps: Tensors it holds (the others bypass it).
        block_words: Words per access (width / word width).
        read_pj: Energy of one read access, pJ (one vector of ``block_words``).
        write_pj: Energy of one write (fill or update) access, pJ.
        capacity_words: Words it holds per instance; None for unbounded (DRAM).
        bandwidth_words: Words per cycle per instance (reads, fills and updates together);
            None for unlimited.
        leak_pj: Leakage per instance per cycle, pJ.
        read_bandwidth_words: Words read per cycle per instance; None for unlimited.
        write_bandwidth_words: Words filled or updated per cycle per instance; None for unlimited.
    """

    name: str
    keeps: frozenset[str]
    block_words: int = 1
    read_pj: float = 0.0
    write_pj: float = 0.0
    capacity_words: int | None = None
    bandwidth_words: float | None = None
    leak_pj: float = 0.0
    read_bandwidth_words: float | None = None
    write_bandwidth_words: float | None = None


@dataclass(frozen=True, slots=True)
class LevelMap:
    """The loops at one level, outermost first, and the spatial fan-out below it.

    Attributes:
        level: The :class:`Level`.
        temporal: ``(dim, bound)`` loops at this level, outermost first.
        spatial: ``(dim, bound)`` loops across the instances below this level.
        window_reuse: One read feeds every instance below whose window covers the word (the
            diagonal input reuse of Eyeriss's row-stationary array). Timeloop's tutorial model
            does not: it counts a read per distinct child tile, multicast only for exact copies.
    """

    level: Level
    temporal: tuple[tuple[str, int], ...] = ()
    spatial: tuple[tuple[str, int], ...] = ()
    window_reuse: bool = False


@dataclass(frozen=True, slots=True)
class NestStats:
    """What :func:`evaluate` found; counts are per instance, as Timeloop prints them.

    Attributes:
        cycles: Cycles of the layer.
        pes_used: MAC units the spatial loops occupy.
        instances: ``{level: instances used}``.
        reads / fills / updates: ``{(level, tensor): words per instance}``.
        energy_pj: ``{level: pJ}`` over all instances, plus ``"mac"``.
    """

    cycles: int
    pes_used: int
    instances: dict[str, int]
    reads: dict[tuple[str, str], int]
    fills: dict[tuple[str, str], int]
    updates: dict[tuple[str, str], int]
    energy_pj: dict[str, float] = field(default_factory=dict)

    def fj_per_mac(self, level: str, macs: int) -> float:
        """Energy of ``level`` per MAC in fJ (Timeloop's ``fJ/Compute`` line)."""
        return 1000.0 * self.energy_pj[level] / macs


def _extent(loops: list[tuple[str, int]], dim: str) -> int:
    return math.prod(b for d, b in loops if d == dim)


def tile_words(tensor: Tensor, loops: list[tuple[str, int]]) -> int:
    """Words of ``tensor`` that ``loops`` touch (each axis an affine sum of dims)."""
    size = 1
    for axis in tensor.axes:
        size *= sum(c * (_extent(loops, d) - 1) for d, c in axis) + 1
    return size


def _slide_overlap(tensor: Tensor, loops: list[tuple[str, int]], dim: str) -> int:
    """Words two tiles share when the loop over ``dim`` just above them steps once."""
    size = 1
    for axis in tensor.axes:
        ext = sum(c * (_extent(loops, d) - 1) for d, c in axis) + 1
        shift = sum(c * _extent(loops, d) for d, c in axis if d == dim)
        size *= max(0, ext - shift)
    return size


def _touches(tensor: Tensor, above: list[tuple[str, int]], tile: list[tuple[str, int]]) -> int:
    """Words filled into one instance's tile over the temporal loops ``above`` (outermost first)."""
    size = tile_words(tensor, tile)
    loops = [(d, b) for d, b in above if b > 1]
    rel = tensor.dims()
    total = size
    for j in range(len(loops) - 1, -1, -1):
        d, b = loops[j]
        steps = (b - 1) * math.prod(bb for _, bb in loops[:j])
        if all(dd not in rel for dd, _ in loops[j:]):
            continue  # only loops that do not index the tensor changed: the tile stays
        if j == len(loops) - 1:  # the innermost loop above: a sliding window keeps its overlap
            total += steps * (size - _slide_overlap(tensor, tile, d))
        else:
            total += steps * size
    return total


def _window_share(t: Tensor, between: list[tuple[str, int]], below: list[list]) -> float:
    """Distinct words / words delivered when overlapping windows below share one read."""
    child = [lp for ls in below for lp in ls]
    copies = math.prod(b for d, b in between if d in t.dims())
    return tile_words(t, [*between, *child]) / (tile_words(t, child) * copies)


def _check(problem: Problem, nest: tuple[LevelMap, ...]) -> None:
    for dim, bound in problem.bounds:
        got = math.prod(b for lm in nest for d, b in (*lm.temporal, *lm.spatial) if d == dim)
        if got != bound:
            raise WorkbenchError(
                f"mapping: loops over {dim} multiply to {got}, the layer has {bound}"
            )


def evaluate(problem: Problem, nest: tuple[LevelMap, ...], mac_pj: float = 0.0) -> NestStats:
    """Reads, fills, updates, energy per level and cycles of ``problem`` mapped as ``nest``.

    Args:
        problem: The layer.
        nest: The levels, outermost (DRAM) first, each with its loops.
        mac_pj: Energy of one MAC, pJ.

    Raises:
        WorkbenchError: Loop bounds that do not multiply to the layer's, or a tile larger than
            its level's capacity (the message names both).
    """
    _check(problem, nest)
    loops_at = [[*lm.temporal, *lm.spatial] for lm in nest]
    inst = [math.prod(b for lm in nest[:i] for _, b in lm.spatial) for i in range(len(nest))]
    pes = math.prod(b for lm in nest for _, b in lm.spatial)
    reads: dict[tuple[str, str], int] = {}
    fills: dict[tuple[str, str], int] = {}
    updates: dict[tuple[str, str], int] = {}
    touches: dict[tuple[int, str], int] = {}
    fresh: dict[tuple[int, str], int] = {}
    for i, lm in enumerate(nest):
        tile = [lp for ls in loops_at[i:] for lp in ls]
        above = [lp for m in nest[:i] for lp in m.temporal]
        used = 0
        for t in problem.tensors:
            if t.name not in lm.level.keeps:
                continue
            used += tile_words(t, tile)
            touches[i, t.name] = _touches(t, above, tile)
            every = [*above, *tile]
            fresh[i, t.name] = tile_words(t, every) if t.read_write else 0
        cap = lm.level.capacity_words
        if cap is not None and used > cap:
            raise WorkbenchError(f"mapping: {lm.level.name} holds {used} words, capacity {cap}")
    temporal_iters = math.prod(b for lm in nest for _, b in lm.temporal)
    for t in problem.tensors:
        keepers = [i for i, lm in enumerate(nest) if t.name in lm.level.keeps]
        for n, i in enumerate(keepers):
            name = nest[i].level.name
            child = keepers[n + 1] if n + 1 < len(keepers) else len(nest)
            between = [lp for lm in nest[i:child] for lp in lm.spatial]
            fan = math.prod(b for d, b in between if d not in t.dims())
            if child == len(nest):  # the MACs below read (and, for outputs, write) directly
                moved = temporal_iters * pes // inst[i]
                served = moved - (fresh[i, t.name] * fan if t.read_write else 0)
            else:
                moved = touches[child, t.name] * inst[child] // inst[i]
                served = moved - fresh[child, t.name] * inst[child] // inst[i]
                if not t.read_write and any(lm.window_reuse for lm in nest[i:child]):
                    served = round(served * _window_share(t, between, loops_at[child:]))
            reads[name, t.name] = served // fan
            updates[name, t.name] = moved // fan if t.read_write else 0
            top = n == 0
            fills[name, t.name] = 0 if top else touches[i, t.name] - fresh[i, t.name]
    cycles = _cycles(nest, temporal_iters, reads, fills, updates)
    energy = _energy(problem, nest, inst, reads, fills, updates)
    for i, lm in enumerate(nest):
        energy[lm.level.name] += lm.level.leak_pj * cycles * inst[i]
    energy["mac"] = problem.macs * mac_pj
    return NestStats(
        cycles=cycles,
        pes_used=pes,
        instances={lm.level.name: inst[i] for i, lm in enumerate(nest)},
        reads=reads,
        fills=fills,
        updates=updates,
        energy_pj=energy,
    )


_Counts = dict[tuple[str, str], int]


def _energy(
    problem: Problem,
    nest: tuple[LevelMap, ...],
    inst: list[int],
    reads: _Counts,
    fills: _Counts,
    updates: _Counts,
) -> dict[str, float]:
    """Read and write energy of each level over its instances, pJ (vector accesses)."""
    out: dict[str, float] = {}
    for i, lm in enumerate(nest):
        lv, e = lm.level, 0.0
        for t in problem.tensors:
            key = (lv.name, t.name)
            if key not in reads:
                continue
            r = math.ceil(reads[key] / lv.block_words)
            w = math.ceil((fills[key] + updates[key]) / lv.block_words)
            e += (r * lv.read_pj + w * lv.write_pj) * inst[i]
        out[lv.name] = e
    return out


def _cycles(
    nest: tuple[LevelMap, ...],
    temporal_iters: int,
    reads: _Counts,
    fills: _Counts,
    updates: _Counts,
) -> int:
    """Temporal iterations, or a level's accesses over its bandwidth where that is longer."""
    cycles = temporal_iters
    for lm in nest:
        lv = lm.level
        mine = [k for k in reads if k[0] == lv.name]
        read = sum(reads[k] for k in mine)
        write = sum(fills[k] + updates[k] for k in mine)
        for words, bw in (
            (read + write, lv.bandwidth_words),
            (read, lv.read_bandwidth_words),
            (write, lv.write_bandwidth_words),
        ):
            if bw is not None:
                cycles = max(cycles, math.ceil(words / bw))
    return cycles
