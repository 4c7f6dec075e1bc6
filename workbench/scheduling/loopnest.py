"""Loop nests of a convolution on a spatial array, their dataflows, and access counts per level.

A teaching model in the style of Timeloop (Parashar et al., ISPASS 2019) and MIT 6.5930's labs:
a conv layer ``O[k][p][q] += W[k][c][r][s] * I[c][p+r][q+s]`` (batch 1, stride 1) becomes a loop
nest split over three storage levels and a PE array:

* ``dram`` temporal loops (outermost), ``glb`` temporal loops, ``spatial`` loops (one iteration
  per PE: the rows and columns of the array) and ``spad`` temporal loops (innermost, per PE).
* A dataflow fixes which dimensions go on the array and the order of the temporal loops:
  *weight-stationary* puts loops that do not index W innermost (a weight stays in the PE while
  outputs stream), *output-stationary* puts loops that do not index O innermost (a partial sum
  stays), *row-stationary* (Eyeriss) maps filter rows x output rows on the array and runs a 1-D
  convolution of a filter row with an input row in each PE.
* Loop bounds are filled greedily, innermost first, as large as the level's capacity allows
  (an even split preferred); the order of the off-chip loops is searched for the fewest DRAM
  accesses. Not Timeloop's full mapspace search: a mapping it finds is a bound, not the optimum.

Access counts follow the stationarity rule: a tile of tensor T held at a level is refetched from
its parent once per iteration of the loops above it, except the innermost run of loops that do
not index T (the tile stays resident across them). A spatial loop that does not index T
multicasts one read to several PEs. Outputs are read and written back as partial sums.

Assumptions (stated, not measured): 16-bit words; each PE's scratchpad is one pool (Eyeriss
splits it by data type); no diagonal (sliding-window) input reuse between PEs; the scratchpad is
accessed four times per MAC (W, I, psum read, psum write).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware

__all__ = ["DATAFLOWS", "ConvShape", "Loop", "LoopNest", "access_words", "loop_nest"]

#: Dataflow -> (array-row dims, array-column dim, temporal order innermost first).
DATAFLOWS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "weight_stationary": (("C",), "K", ("Q", "P", "S", "R", "C", "K")),
    "output_stationary": (("K",), "P", ("S", "R", "C", "Q", "P", "K")),
    "row_stationary": (("R", "K"), "P", ("Q", "S", "C", "K", "P", "R")),
}
_RELEVANT = {"W": {"K", "C", "R", "S"}, "I": {"C", "P", "Q", "R", "S"}, "O": {"K", "P", "Q"}}
WORD_BYTES = 2
LEVELS = ("dram", "glb", "spatial", "spad")


@dataclass(frozen=True, slots=True)
class ConvShape:
    """A conv layer (batch 1, stride 1).

    K output channels, C input channels, P x Q output, R x S filter; all counts >= 1.
    """

    K: int
    C: int
    P: int
    Q: int
    R: int
    S: int

    def __post_init__(self) -> None:
        for name in ("K", "C", "P", "Q", "R", "S"):
            if getattr(self, name) < 1:
                raise WorkbenchError(f"conv shape: {name}={getattr(self, name)} must be >= 1")

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the layer."""
        return self.K * self.C * self.P * self.Q * self.R * self.S


@dataclass(frozen=True, slots=True)
class Loop:
    """One loop: the dimension it walks, its bound, and its level (see :data:`LEVELS`)."""

    dim: str
    bound: int
    level: str


@dataclass(frozen=True, slots=True)
class LoopNest:
    """A mapped loop nest, outermost loop first.

    Attributes:
        shape: The layer.
        dataflow: A key of :data:`DATAFLOWS`.
        loops: The loops, outermost first.
    """

    shape: ConvShape
    dataflow: str
    loops: tuple[Loop, ...]

    def at(self, *levels: str) -> tuple[Loop, ...]:
        """The loops at the given levels, outermost first."""
        return tuple(lp for lp in self.loops if lp.level in levels)

    @property
    def pes_used(self) -> int:
        """PEs the spatial loops occupy."""
        return math.prod(lp.bound for lp in self.at("spatial"))

    @property
    def padded_macs(self) -> int:
        """MACs the nest executes, padding of uneven splits included."""
        return math.prod(lp.bound for lp in self.loops)

    def text(self) -> str:
        """The loop nest as Python-like text: temporal ``for`` and spatial ``parallel_for``."""
        out = []
        for depth, lp in enumerate(self.loops):
            kw = "parallel_for" if lp.level == "spatial" else "for"
            var = f"{lp.dim.lower()}{sum(1 for x in self.loops[depth + 1 :] if x.dim == lp.dim)}"
            out.append(f"{'  ' * depth}{kw} {var} in range({lp.bound}):  # {lp.level}")
        out.append(f"{'  ' * len(self.loops)}O[k][p][q] += W[k][c][r][s] * I[c][p+r][q+s]")
        return "\n".join(out)


def _extent(loops: tuple[Loop, ...], dim: str) -> int:
    return math.prod(lp.bound for lp in loops if lp.dim == dim)


def tile_words(loops: tuple[Loop, ...], tensor: str) -> int:
    """Words of ``tensor`` (``W``, ``I`` or ``O``) one iteration space of ``loops`` touches."""
    e = {d: _extent(loops, d) for d in "KCPQRS"}
    if tensor == "W":
        return e["K"] * e["C"] * e["R"] * e["S"]
    if tensor == "O":
        return e["K"] * e["P"] * e["Q"]
    return e["C"] * (e["P"] + e["R"] - 1) * (e["Q"] + e["S"] - 1)


def _fits(loops: tuple[Loop, ...], capacity_bytes: float) -> bool:
    return sum(tile_words(loops, t) for t in "WIO") * WORD_BYTES <= capacity_bytes


def _fill_level(
    level: str, order: tuple[str, ...], rem: dict[str, int], below: tuple[Loop, ...], cap: float
) -> list[Loop]:
    """Loops of one level, innermost first, each as large as fits ``cap`` bytes (updates rem)."""
    out: list[Loop] = []
    for d in order:
        if rem[d] == 1:
            continue
        fit = [f for f in range(rem[d], 1, -1) if _fits((*below, *out, Loop(d, f, level)), cap)]
        # prefer a factor that splits the bound evenly (no padded iterations), else the largest
        even = [f for f in fit if rem[d] % f == 0]
        f = (even or fit or [1])[0]
        if f == 1:
            break
        out.append(Loop(d, f, level))
        full = f == rem[d]
        rem[d] = -(-rem[d] // f)
        if not full:
            break
    return out


def loop_nest(shape: ConvShape, dataflow: str, hw: Hardware) -> LoopNest:
    """Map ``shape`` with ``dataflow`` on the spatial array of ``hw`` (greedy, innermost first).

    The array is ``native_tile_m`` rows x ``native_tile_n`` columns; the scratchpad per PE is the
    innermost level's capacity / PEs; the global buffer is the per-core SRAM.

    Raises:
        WorkbenchError: An unknown dataflow.
    """
    if dataflow not in DATAFLOWS:
        raise WorkbenchError(f"dataflow {dataflow!r}: expected one of {', '.join(DATAFLOWS)}")
    rows_dims, col_dim, order = DATAFLOWS[dataflow]
    rows, cols = hw.matrix_engine.native_tile_m, hw.matrix_engine.native_tile_n
    rem = {d: getattr(shape, d) for d in "KCPQRS"}
    spatial: list[Loop] = []
    left = rows
    for d in rows_dims:  # fill the array rows: the first dim, then replicate over the next
        f = min(rem[d], left)
        if f > 1:
            spatial.append(Loop(d, f, "spatial"))
            rem[d] = -(-rem[d] // f)
            left //= f
    f = min(rem[col_dim], cols)
    spatial.append(Loop(col_dim, f, "spatial"))
    rem[col_dim] = -(-rem[col_dim] // f)
    pe_spad = hw.memory[0].capacity_bytes / (rows * cols)
    spad_loops = _fill_level("spad", order, rem, (), pe_spad)
    glb_loops = _fill_level("glb", order, rem, (*spatial, *spad_loops), hw.sram.capacity_bytes)
    dram = [Loop(d, rem[d], "dram") for d in order if rem[d] > 1]
    rest = (*reversed(glb_loops), *spatial, *reversed(spad_loops))
    # The off-chip loop order is searched (at most 6! orders): the one with the fewest DRAM
    # words wins, ties to the dataflow's own order.
    nests = [
        LoopNest(shape=shape, dataflow=dataflow, loops=(*perm, *rest))
        for perm in itertools.permutations(reversed(dram))
    ]
    return min(nests, key=lambda n: access_words(n)["dram"])


def _fills(outer: tuple[Loop, ...], tensor: str) -> int:
    """Refetches of a tile below ``outer`` (temporal loops, outermost first)."""
    n, reusing = 1, True
    for lp in reversed(outer):
        if reusing and lp.dim not in _RELEVANT[tensor]:
            continue
        reusing = False
        n *= lp.bound
    return n


def access_words(nest: LoopNest) -> dict[str, float]:
    """Words accessed at each storage level (``spad``, ``glb``, ``dram``) for the whole layer.

    Returns:
        ``{"spad": ..., "glb": ..., "dram": ...}`` in 16-bit words (see module docstring).
    """
    spad_tile_loops = nest.at("spad")
    glb_tile_loops = nest.at("glb", "spatial", "spad")
    temporal_above_spad = nest.at("dram", "glb")
    spatial = nest.at("spatial")
    total_o = tile_words(nest.loops, "O")
    glb_fill = spad_fill = 0.0
    for t in "WIO":
        g = _fills(nest.at("dram"), t) * tile_words(glb_tile_loops, t)
        distinct = math.prod(lp.bound for lp in spatial if lp.dim in _RELEVANT[t])
        s = _fills(temporal_above_spad, t) * tile_words(spad_tile_loops, t) * distinct
        if t == "O":  # partial sums go back up; the first read of a zero output is skipped
            g, s = 2 * g - total_o, 2 * s - total_o
        glb_fill += g
        spad_fill += s
    return {
        "spad": 4.0 * nest.padded_macs + spad_fill,
        "glb": spad_fill + glb_fill,
        "dram": glb_fill,
    }
