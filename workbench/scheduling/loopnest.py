"""Loop nests of a convolution on a spatial array: dataflows, the mapper, and what they cost.

A teaching model in the style of Timeloop (Parashar et al., ISPASS 2019) and MIT 6.5930's labs:
a conv layer ``O[k][p][q] += W[k][c][r][s] * I[c][U*p+r][U*q+s]`` (batch 1, stride ``U``) becomes
a loop nest split over DRAM, the global buffer (``glb``), the PE array (``spatial`` loops, one
iteration per PE) and each PE's scratchpads (``spad`` loops, innermost). The nest is costed by
:func:`workbench.scheduling.nest_eval.evaluate`, the evaluator the golden tests check against
Timeloop's published reference outputs.

* A dataflow fixes which dimensions go on the array and the order of the temporal loops:
  *weight-stationary* puts loops that do not index W innermost, *output-stationary* those that
  do not index O, *row-stationary* (Eyeriss) puts filter rows x output rows on the array, runs a
  1-D convolution of a filter row with an input row in each PE, and lets one input row feed the
  PEs along a diagonal (``window_reuse``).
* Each PE has one scratchpad per operand (Eyeriss: 12 ifmap, 224 filter, 24 psum words; Chen et
  al., ISSCC 2016 / JSSC 2017, :data:`SPAD_WORDS`); a tile that does not fit is refused.
* The mapper (:func:`loop_nest`) uses only loop bounds that divide the layer (no padded
  iterations: PEs or buffer space go unused instead, and PE utilisation shows it); it fills the
  array, then the scratchpads and the global buffer greedily, innermost first, and searches the
  order of the DRAM loops. Not Timeloop's full mapspace search: the energy of the nest it finds
  is an upper bound on the dataflow's best (the best mapping is at least this good).

Assumptions (stated): 16-bit words; 1 MAC per PE per cycle; the array NoC costs
:data:`NOC_X_RF` x a scratchpad access per word delivered to a PE or returned from it (Eyeriss's
normalized energies, Chen et al., ISCA 2016: RF 1x, NoC 2x, GLB 6x, DRAM 200x).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware, MemoryLevel
from workbench.scheduling.nest_eval import Level, LevelMap, NestStats, Problem, Tensor, evaluate

__all__ = [
    "DATAFLOWS",
    "NOC_X_RF",
    "SPAD_WORDS",
    "ConvShape",
    "Loop",
    "LoopNest",
    "NestCost",
    "access_words",
    "cost",
    "loop_nest",
    "problem",
    "refusal",
    "tile_words",
]

#: Dataflow -> (array-row dims, array-column dim, temporal order innermost first).
DATAFLOWS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "weight_stationary": (("C",), "K", ("Q", "P", "S", "R", "C", "K")),
    "output_stationary": (("K",), "P", ("S", "R", "C", "Q", "P", "K")),
    "row_stationary": (("R", "K"), "P", ("S", "Q", "C", "K", "P", "R")),
}
#: Words per PE of each operand's scratchpad, by profile: Eyeriss v1 has a 12 x 16-bit ifmap,
#: 224 x 16-bit filter and 24 x 16-bit psum scratchpad per PE (Chen et al., ISSCC 2016 and
#: JSSC 52(1) 2017, Table I; 520 B per PE, the pooled ``spad`` level of hardware/eyeriss.yaml).
SPAD_WORDS: dict[str, dict[str, int]] = {"eyeriss": {"I": 12, "W": 224, "O": 24}}
#: The NoC's energy per word in scratchpad accesses (Chen et al., ISCA 2016: NoC 2x, RF 1x).
NOC_X_RF = 2.0
WORD_BYTES = 2
LEVELS = ("dram", "glb", "spatial", "spad")


@dataclass(frozen=True, slots=True)
class ConvShape:
    """A conv layer, batch 1: K output channels, C input, P x Q output, R x S filter, stride U."""

    K: int
    C: int
    P: int
    Q: int
    R: int
    S: int
    U: int = 1

    def __post_init__(self) -> None:
        for name in ("K", "C", "P", "Q", "R", "S", "U"):
            if getattr(self, name) < 1:
                raise WorkbenchError(f"conv shape: {name}={getattr(self, name)} must be >= 1")

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the layer."""
        return self.K * self.C * self.P * self.Q * self.R * self.S


def problem(shape: ConvShape) -> Problem:
    """The layer as the evaluator's problem: W[k][c][r][s], I[c][U*p+r][U*q+s], O[k][p][q]."""
    u = shape.U
    return Problem(
        bounds=tuple((d, getattr(shape, d)) for d in "KCPQRS"),
        tensors=(
            Tensor("W", ((("K", 1),), (("C", 1),), (("R", 1),), (("S", 1),))),
            Tensor("I", ((("C", 1),), (("P", u), ("R", 1)), (("Q", u), ("S", 1)))),
            Tensor("O", ((("K", 1),), (("P", 1),), (("Q", 1),)), read_write=True),
        ),
    )


@dataclass(frozen=True, slots=True)
class Loop:
    """One loop: the dimension it walks, its bound, and its level (see :data:`LEVELS`)."""

    dim: str
    bound: int
    level: str


@dataclass(frozen=True, slots=True)
class LoopNest:
    """A mapped loop nest, outermost loop first."""

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
        """MACs the nest executes (equal to the layer's: the mapper uses bounds that divide)."""
        return math.prod(lp.bound for lp in self.loops)

    def text(self) -> str:
        """The loop nest as Python-like text: temporal ``for`` and spatial ``parallel_for``."""
        out = []
        for depth, lp in enumerate(self.loops):
            kw = "parallel_for" if lp.level == "spatial" else "for"
            var = f"{lp.dim.lower()}{sum(1 for x in self.loops[depth + 1 :] if x.dim == lp.dim)}"
            out.append(f"{'  ' * depth}{kw} {var} in range({lp.bound}):  # {lp.level}")
        idx = "p+r" if self.shape.U == 1 else f"{self.shape.U}*p+r"
        idy = "q+s" if self.shape.U == 1 else f"{self.shape.U}*q+s"
        body = f"O[k][p][q] += W[k][c][r][s] * I[c][{idx}][{idy}]"
        out.append(f"{'  ' * len(self.loops)}{body}")
        return "\n".join(out)


@dataclass(frozen=True, slots=True)
class NestCost:
    """Energy, cycles and utilisation of a nest on a profile.

    Attributes:
        energy_pj: ``{"mac", "spad", "noc", "glb", "dram"}`` in pJ.
        words: Words accessed per level (``spad``, ``glb``, ``dram``) and moved on the ``noc``.
        cycles: Cycles of the layer (MACs per PE, or a level's bandwidth if longer).
        latency_s: ``cycles`` / the array's clock.
        pes_used: PEs the spatial loops occupy; ``pes`` the array's.
        spatial_utilisation: ``pes_used / pes``.
        temporal_utilisation: Useful MACs / (``pes_used`` x ``cycles``): below 1 when a level's
            bandwidth stretches the layer past its MACs.
        utilisation: Useful MACs / (``pes`` x ``cycles``), the product of the two.
        stats: The evaluator's counts.
    """

    energy_pj: dict[str, float]
    words: dict[str, float]
    cycles: int
    latency_s: float
    pes_used: int
    pes: int
    spatial_utilisation: float
    temporal_utilisation: float
    utilisation: float
    stats: NestStats


def _array(hw: Hardware) -> tuple[int, int, dict[str, int]]:
    rows, cols = hw.matrix_engine.native_tile_m, hw.matrix_engine.native_tile_n
    if hw.name in SPAD_WORDS:
        return rows, cols, SPAD_WORDS[hw.name]
    pooled = int(hw.memory[0].capacity_bytes / (rows * cols) / WORD_BYTES / 3)
    return rows, cols, dict.fromkeys("WIO", pooled)  # assumption: an even three-way split


def _levels(nest: LoopNest, hw: Hardware) -> tuple[LevelMap, ...]:
    """The nest as the evaluator's levels: DRAM, GLB (+ the array), three scratchpads."""
    _, _, spad = _array(hw)
    rf, glb, dram = hw.memory[0], hw.sram, hw.offchip
    clock = hw.matrix_engine.clock_hz

    def lv(name: str, keeps: str, mem: MemoryLevel, cap: int | None) -> Level:
        pj = WORD_BYTES * mem.energy_pj_per_byte
        bw = mem.bandwidth_bytes_per_s / clock / WORD_BYTES
        bw_limit = None if mem is rf else bw
        return Level(name, frozenset(keeps), 1, pj, pj, cap, bw_limit)

    pairs = lambda level: tuple((lp.dim, lp.bound) for lp in nest.at(level))  # noqa: E731
    return (
        LevelMap(lv("dram", "WIO", dram, None), pairs("dram")),
        LevelMap(
            lv("glb", "WIO", glb, int(glb.capacity_bytes // WORD_BYTES)),
            pairs("glb"),
            pairs("spatial"),
            window_reuse=nest.dataflow == "row_stationary",
        ),
        LevelMap(lv("ifmap_spad", "I", rf, spad["I"])),
        LevelMap(lv("filter_spad", "W", rf, spad["W"])),
        LevelMap(lv("psum_spad", "O", rf, spad["O"]), pairs("spad")),
    )


def cost(nest: LoopNest, hw: Hardware) -> NestCost:
    """Energy per level (MAC, scratchpads, NoC, GLB, DRAM), cycles and utilisation of ``nest``.

    Raises:
        WorkbenchError: A tile larger than its scratchpad or the global buffer (names which).
    """
    rows, cols, _ = _array(hw)
    st = evaluate(problem(nest.shape), _levels(nest, hw), 2 * hw.power.energy_pj_per_flop["fp16"])
    pes = st.pes_used
    spads = ("ifmap_spad", "filter_spad", "psum_spad")
    noc = sum(v for (lvl, _), v in st.fills.items() if lvl in spads) * pes
    noc += st.updates["glb", "O"]
    rf_pj = WORD_BYTES * hw.memory[0].energy_pj_per_byte
    energy = {
        "mac": st.energy_pj["mac"],
        "spad": sum(st.energy_pj[s] for s in spads),
        "noc": noc * NOC_X_RF * rf_pj,
        "glb": st.energy_pj["glb"],
        "dram": st.energy_pj["dram"],
    }
    words = {
        lvl: float(
            sum(st.reads[k] + st.fills[k] + st.updates[k] for k in st.reads if k[0] in names)
            * (pes if lvl == "spad" else 1)
        )
        for lvl, names in (("spad", spads), ("glb", ("glb",)), ("dram", ("dram",)))
    }
    words["noc"] = float(noc)
    macs = nest.shape.macs
    return NestCost(
        energy_pj=energy,
        words=words,
        cycles=st.cycles,
        latency_s=st.cycles / hw.matrix_engine.clock_hz,
        pes_used=pes,
        pes=rows * cols,
        spatial_utilisation=pes / (rows * cols),
        temporal_utilisation=macs / (pes * st.cycles),
        utilisation=macs / (rows * cols * st.cycles),
        stats=st,
    )


def access_words(nest: LoopNest, hw: Hardware) -> dict[str, float]:
    """Words accessed at ``spad`` (all PEs), ``glb`` and ``dram``, and moved on the ``noc``."""
    return cost(nest, hw).words


def tile_words(loops: tuple[Loop, ...], tensor: str, stride: int = 1) -> int:
    """Words of ``tensor`` (``W``, ``I`` or ``O``) the iteration space of ``loops`` touches."""
    shape = ConvShape(K=1, C=1, P=1, Q=1, R=1, S=1, U=stride)
    t = next(t for t in problem(shape).tensors if t.name == tensor)
    from workbench.scheduling.nest_eval import tile_words as _tw

    return _tw(t, [(lp.dim, lp.bound) for lp in loops])


def _divisors(n: int, limit: int) -> list[int]:
    """Divisors of ``n`` up to ``limit``, largest first."""
    return [f for f in range(min(n, limit), 0, -1) if n % f == 0]


def _spad_fits(loops: list[Loop], spad: dict[str, int], stride: int) -> bool:
    return all(tile_words(tuple(loops), t, stride) <= spad[t] for t in "WIO")


def _fill(
    order: tuple[str, ...], rem: dict[str, int], fits: Callable[[list[Loop]], bool], level: str
) -> list[Loop]:
    """Loops of one level, innermost first, each the largest dividing bound that fits."""
    out: list[Loop] = []
    for d in order:
        if rem[d] == 1:
            continue
        f = next((f for f in _divisors(rem[d], rem[d]) if fits([*out, Loop(d, f, level)])), 1)
        if f == 1:
            break
        out.append(Loop(d, f, level))
        full = f == rem[d]
        rem[d] //= f
        if not full:
            break
    return out


def loop_nest(shape: ConvShape, dataflow: str, hw: Hardware) -> LoopNest:
    """Map ``shape`` with ``dataflow`` on the array of ``hw`` (bounds that divide, greedy).

    The array is ``native_tile_m`` rows x ``native_tile_n`` columns; the scratchpads per PE are
    :data:`SPAD_WORDS` for the profile; the global buffer is the per-core SRAM.

    Raises:
        WorkbenchError: An unknown dataflow.
    """
    if dataflow not in DATAFLOWS:
        raise WorkbenchError(f"dataflow {dataflow!r}: expected one of {', '.join(DATAFLOWS)}")
    rows_dims, col_dim, order = DATAFLOWS[dataflow]
    rows, cols, spad = _array(hw)
    rem = {d: getattr(shape, d) for d in "KCPQRS"}
    spatial: list[Loop] = []
    left = rows
    for d in rows_dims:  # fill the array rows with the first dim, then replicate over the next
        f = _divisors(rem[d], left)[0]
        if f > 1:
            spatial.append(Loop(d, f, "spatial"))
            rem[d] //= f
            left //= f
    f = _divisors(rem[col_dim], cols)[0]
    spatial.append(Loop(col_dim, f, "spatial"))
    rem[col_dim] //= f
    u = shape.U
    spad_loops = _fill(order, rem, lambda ls: _spad_fits(ls, spad, u), "spad")
    glb_cap = hw.sram.capacity_bytes / WORD_BYTES
    below = (*spatial, *spad_loops)

    def glb_fits(ls: list[Loop]) -> bool:
        return sum(tile_words((*below, *ls), t, u) for t in "WIO") <= glb_cap

    glb_loops = _fill(order, rem, glb_fits, "glb")
    dram = [Loop(d, rem[d], "dram") for d in order if rem[d] > 1]
    rest = (*reversed(glb_loops), *spatial, *reversed(spad_loops))
    # The off-chip loop order is searched (at most 6! orders): the one with the fewest DRAM
    # words wins, ties to the dataflow's own order.
    nests = [
        LoopNest(shape=shape, dataflow=dataflow, loops=(*perm, *rest))
        for perm in itertools.permutations(reversed(dram))
    ]
    return min(nests, key=lambda n: cost(n, hw).words["dram"])


def refusal(nest: LoopNest, hw: Hardware) -> str | None:
    """Why ``nest`` does not fit the profile's scratchpads or buffer, or None if it fits."""
    try:
        cost(nest, hw)
    except WorkbenchError as err:
        return str(err)
    return None
