"""Sparse tensors on a PE array: gating vs skipping, compressed formats, cycles and energy.

A Sparseloop-style model (Wu et al., MICRO 2022) of one output-stationary einsum at the PE
buffer level, ``Z[o] += A[o, r] * B[o, r]`` for ``o`` in ``outputs`` and ``r`` in ``reduction``,
where ``A`` (the *leader*, e.g. pruned weights) holds zeros and ``B`` (the *follower*, e.g.
activations) may too::

    for o in range(outputs):          # split over `pes` PEs
        for r in range(reduction):    # one multiply per PE per cycle
            Z[o] += A[o, r] * B[o, r]

Every multiply reads ``A`` and ``B`` from the buffer and updates ``Z``, reading the partial
sum except at its first touch. An optimisation conditioned on the operands being nonzero:

* ``dense``: the hardware computes every product, zeros included.
* ``gating``: an ineffectual multiply (a zero operand) still takes its cycle, but the reads of
  ``B`` and ``Z`` it needs, the ``Z`` update and the multiplier are clock-gated: each costs a
  *gated* access's energy (a small fraction of a real one). Energy drops; time does not.
* ``skipping``: the leader is stored compressed, so the PE walks only its nonzeros (and their
  metadata) and never issues the ineffectual work: time and energy both drop, the metadata
  costs a read per nonzero, and on an array the slowest PE sets the pace (load imbalance).

Counts follow Timeloop/Sparseloop (the golden tests, ``tests/golden/test_timeloop_sparse.py``,
compare them with the ISCA 2021 tutorial's reference outputs): with a *structured* density
(Sparseloop's ``fixed-structured``: exactly ``ceil(density * elements)`` nonzeros in every tile)
the kept fraction of each count is rounded down to whole accesses; unstructured (independent
zeros) gives expected values, and cycles the expected maximum over the PEs of a binomial count.
A skipped access costs nothing (Timeloop 2021 charges it a gated access's energy, see the golden
test). Not modelled (stated): fills from the level above, bandwidth limits, the intersection
unit's own energy and area, and the decompression of a compressed follower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from workbench.errors import WorkbenchError

__all__ = [
    "FORMATS",
    "MODES",
    "Computes",
    "Format",
    "Mode",
    "SparseEinsum",
    "SparseEnergy",
    "SparseOpt",
    "SparseStats",
    "TensorAccess",
    "break_even_density",
    "evaluate_sparse",
    "expected_max_binomial",
    "format_bits",
    "kept_count",
    "magnitude_prune",
]

Mode = Literal["dense", "gating", "skipping"]
Format = Literal["uncompressed", "bitmask", "rle", "cp"]
MODES: tuple[Mode, ...] = get_args(Mode)
FORMATS: tuple[Format, ...] = get_args(Format)
_EPS = 1e-9


def _check_density(name: str, d: float) -> None:
    if not (isinstance(d, int | float) and math.isfinite(d) and 0 < d <= 1):
        raise WorkbenchError(f"{name}: density {d!r} must be in (0, 1]")


def _check_count(name: str, n: object) -> None:
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        raise WorkbenchError(f"{name}: {n!r} must be a whole number >= 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class SparseEinsum:
    """The layer: ``outputs`` x ``reduction`` multiplies, a sparse leader and a follower.

    Attributes:
        outputs: Output elements (``Z``), split evenly over ``pes``.
        reduction: Multiplies per output.
        leader_density: Nonzero fraction of ``A``, in (0, 1].
        leader_elements: Elements of ``A``'s tile the density applies to (structured rounding);
            None: ``reduction``.
        follower_density: Nonzero fraction of ``B`` (1: dense).
        follower_elements: As ``leader_elements``, for ``B``.
        pes: Processing elements, one multiply each per cycle.
    """

    outputs: int
    reduction: int
    leader_density: float
    leader_elements: int | None = None
    follower_density: float = 1.0
    follower_elements: int | None = None
    pes: int = 1

    def __post_init__(self) -> None:
        for name in ("outputs", "reduction", "pes"):
            _check_count(f"SparseEinsum.{name}", getattr(self, name))
        for name in ("leader_elements", "follower_elements"):
            if getattr(self, name) is not None:
                _check_count(f"SparseEinsum.{name}", getattr(self, name))
        _check_density("SparseEinsum.leader_density", self.leader_density)
        _check_density("SparseEinsum.follower_density", self.follower_density)
        if self.outputs % self.pes:
            raise WorkbenchError(
                f"SparseEinsum.pes: {self.pes} PEs do not split {self.outputs} outputs evenly"
            )

    @property
    def macs(self) -> int:
        """Algorithmic multiplies (zeros included)."""
        return self.outputs * self.reduction


@dataclass(frozen=True, slots=True, kw_only=True)
class SparseOpt:
    """What the hardware does with zeros.

    Attributes:
        mode: ``dense``, ``gating`` or ``skipping`` (see the module docstring).
        leader_format: How ``A`` is stored: ``uncompressed``, ``bitmask`` (one bit per element),
            ``rle`` (a run length per nonzero) or ``cp`` (a coordinate per nonzero).
            ``skipping`` needs a compressed format; ``dense`` an uncompressed one.
        structured: Exactly the density in every tile (True) or independent zeros (False).
    """

    mode: Mode = "dense"
    leader_format: Format = "uncompressed"
    structured: bool = True

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise WorkbenchError(f"SparseOpt.mode: {self.mode!r}, expected one of {MODES}")
        if self.leader_format not in FORMATS:
            raise WorkbenchError(
                f"SparseOpt.leader_format: {self.leader_format!r}, expected one of {FORMATS}"
            )
        if self.mode == "skipping" and self.leader_format == "uncompressed":
            raise WorkbenchError("SparseOpt: skipping needs a compressed leader_format")
        if self.mode == "dense" and self.leader_format != "uncompressed":
            raise WorkbenchError("SparseOpt: dense mode reads the leader uncompressed")


@dataclass(frozen=True, slots=True, kw_only=True)
class SparseEnergy:
    """Per-action energies (pJ) of the PE buffer and the multiplier (Accelergy's ERT).

    Attributes:
        read_pj: One word read from the buffer.
        write_pj: One word written (a partial-sum update).
        gated_pj: A gated read or write (the port is clock-gated).
        metadata_read_pj: One metadata word read (a coordinate, run length or bitmask word).
        metadata_bits: Bits of a metadata word (a bitmask packs that many elements per read).
        mac_pj: One multiply-accumulate.
        mac_gated_pj: One gated multiply-accumulate.
    """

    read_pj: float
    write_pj: float
    gated_pj: float
    metadata_read_pj: float
    mac_pj: float
    mac_gated_pj: float
    metadata_bits: int = 4

    def __post_init__(self) -> None:
        for name in ("read_pj", "write_pj", "gated_pj", "metadata_read_pj", "mac_pj"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise WorkbenchError(f"SparseEnergy.{name}: {v!r} pJ must be finite and >= 0")
        v = self.mac_gated_pj
        if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
            raise WorkbenchError(f"SparseEnergy.mac_gated_pj: {v!r} pJ must be finite and >= 0")
        _check_count("SparseEnergy.metadata_bits", self.metadata_bits)

    @classmethod
    def unit(cls) -> SparseEnergy:
        """1 pJ for every action (for counts only)."""
        return cls(read_pj=1, write_pj=1, gated_pj=1, metadata_read_pj=1, mac_pj=1, mac_gated_pj=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Computes:
    """Multiplies: algorithmic = actual + gated + skipped."""

    algorithmic: float
    actual: float
    gated: float = 0.0
    skipped: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorAccess:
    """One tensor's buffer accesses (words), split as Timeloop prints them."""

    actual_reads: float = 0.0
    gated_reads: float = 0.0
    skipped_reads: float = 0.0
    actual_updates: float = 0.0
    gated_updates: float = 0.0
    skipped_updates: float = 0.0
    metadata_reads: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SparseStats:
    """Cycles, multiplies, accesses and energy of one layer under one optimisation.

    Attributes:
        cycles: Cycles of the slowest PE (expected value when unstructured).
        computes: The multiplies.
        access: ``A``, ``B``, ``Z`` -> their accesses.
        energy_pj: ``mac`` (actual multiplies), ``mac_gated``, and ``A``, ``B``, ``Z`` (pJ).
    """

    cycles: float
    computes: Computes
    access: dict[str, TensorAccess] = field(default_factory=dict)
    energy_pj: dict[str, float] = field(default_factory=dict)

    @property
    def total_pj(self) -> float:
        """All energy, pJ."""
        return sum(self.energy_pj.values())


def kept_count(algorithmic: float, density: float, *, structured: bool = True) -> float:
    """Accesses (or multiplies) that remain when only a ``density`` fraction is effectual.

    Structured: rounded down to whole accesses (as Timeloop does); unstructured: the mean.

    >>> kept_count(15, 0.25), kept_count(15, 0.25, structured=False)
    (3, 3.75)
    """
    kept = algorithmic * density
    return math.floor(kept + _EPS) if structured else kept


def _kept_fraction(density: float, elements: int, structured: bool) -> float:
    """Structured: ``ceil(density * elements)`` nonzeros of ``elements``; else the density."""
    if not structured:
        return density
    return math.ceil(density * elements - _EPS) / elements


def expected_max_binomial(n: int, p: float, k: int) -> float:
    """Expected maximum of ``k`` independent Binomial(``n``, ``p``) counts.

    The cycles of ``k`` PEs that each walk the nonzeros of ``n`` elements at density ``p``,
    when the array waits for the slowest: ``sum over j < n of 1 - P(X <= j) ** k``.

    >>> expected_max_binomial(4, 1.0, 8), round(expected_max_binomial(1, 0.5, 2), 3)
    (4.0, 0.75)
    """
    if p >= 1:
        return float(n)
    j = np.arange(n + 1)
    logpmf = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in j])
    logpmf += j * math.log(p) + (n - j) * math.log1p(-p)
    cdf = np.minimum(np.cumsum(np.exp(logpmf - logpmf.max()) * math.exp(logpmf.max())), 1.0)
    return float(np.sum(1.0 - cdf[:-1] ** k))


def _split(algorithmic: float, kept: float, how: str) -> tuple[float, float, float]:
    """(actual, gated, skipped) for ``how`` in ``dense`` / ``gating`` / ``skipping``."""
    rest = algorithmic - kept
    if how == "dense":
        return algorithmic, 0.0, 0.0
    return (kept, rest, 0.0) if how == "gating" else (kept, 0.0, rest)


def _metadata_reads(fmt: Format, leader_reads: float, algorithmic: float, bits: int) -> float:
    """Metadata words read with the leader: one per nonzero (cp, rle) or a bit per element."""
    if fmt in ("cp", "rle"):
        return leader_reads
    if fmt == "bitmask":
        return algorithmic / bits
    return 0.0


def _cycles(e: SparseEinsum, opt: SparseOpt, d: float) -> float:
    per_pe = e.macs // e.pes
    if opt.mode != "skipping":
        return float(per_pe)
    if opt.structured:
        return kept_count(per_pe, d)
    return expected_max_binomial(per_pe, d, e.pes)


def evaluate_sparse(e: SparseEinsum, opt: SparseOpt, energy: SparseEnergy) -> SparseStats:
    """Cycles, multiplies, buffer accesses and energy of ``e`` under ``opt``.

    Args:
        e: The layer.
        opt: Dense, gating or skipping, the leader's format, structured or not.
        energy: Per-action energies (pJ).

    Returns:
        The :class:`SparseStats`; energy in pJ, cycles at one multiply per PE per cycle.

    >>> dot = SparseEinsum(outputs=1, reduction=16, leader_density=0.25)
    >>> [evaluate_sparse(dot, SparseOpt(mode=m, leader_format=f), SparseEnergy.unit()).cycles
    ...  for m, f in (("dense", "uncompressed"), ("gating", "uncompressed"), ("skipping", "cp"))]
    [16.0, 16.0, 4]
    """
    s = opt.structured
    d_a = _kept_fraction(e.leader_density, e.leader_elements or e.reduction, s)
    d_b = _kept_fraction(e.follower_density, e.follower_elements or e.reduction, s)
    d = d_a * d_b
    alg, alg_z_reads = e.macs, e.macs - e.outputs
    macs = _split(alg, kept_count(alg, d, structured=s), opt.mode)
    b = _split(alg, kept_count(alg, d, structured=s), opt.mode)
    z_r = _split(alg_z_reads, kept_count(alg_z_reads, d, structured=s), opt.mode)
    z_u = _split(alg, kept_count(alg, d, structured=s), opt.mode)
    a_reads = alg if opt.leader_format == "uncompressed" else kept_count(alg, d_a, structured=s)
    meta = _metadata_reads(opt.leader_format, a_reads, alg, energy.metadata_bits)
    access = {
        "A": TensorAccess(actual_reads=a_reads, metadata_reads=meta),
        "B": TensorAccess(actual_reads=b[0], gated_reads=b[1], skipped_reads=b[2]),
        "Z": TensorAccess(
            actual_reads=z_r[0], gated_reads=z_r[1], skipped_reads=z_r[2],
            actual_updates=z_u[0], gated_updates=z_u[1], skipped_updates=z_u[2],
        ),
    }  # fmt: skip
    return SparseStats(
        cycles=_cycles(e, opt, d),
        computes=Computes(algorithmic=alg, actual=macs[0], gated=macs[1], skipped=macs[2]),
        access=access,
        energy_pj=_energy(access, macs, energy),
    )


def _energy(
    access: dict[str, TensorAccess], macs: tuple[float, float, float], en: SparseEnergy
) -> dict[str, float]:
    out = {"mac": macs[0] * en.mac_pj, "mac_gated": macs[1] * en.mac_gated_pj}
    for name, a in access.items():
        out[name] = (
            a.actual_reads * en.read_pj
            + a.actual_updates * en.write_pj
            + (a.gated_reads + a.gated_updates) * en.gated_pj
            + a.metadata_reads * en.metadata_read_pj
        )
    return out


def format_bits(
    elements: int, density: float, word_bits: int, fmt: Format, *, coord_bits: int | None = None
) -> int:
    """Bits to store a fiber of ``elements`` values at ``density`` in format ``fmt``.

    ``uncompressed``: every element; ``bitmask``: one bit per element plus the nonzeros;
    ``cp``: each nonzero with its coordinate; ``rle``: each nonzero with the run of zeros before
    it. Coordinates and runs take ``coord_bits`` (default ``ceil(log2(elements))``, so no run
    overflows). Nonzeros: ``ceil(density * elements)``.

    >>> format_bits(64, 0.25, 8, "cp"), format_bits(64, 0.25, 8, "uncompressed")
    (224, 512)
    """
    _check_count("format_bits.elements", elements)
    _check_count("format_bits.word_bits", word_bits)
    _check_density("format_bits", density)
    nnz = math.ceil(density * elements - _EPS)
    c = coord_bits if coord_bits is not None else max(1, math.ceil(math.log2(elements)))
    sizes = {
        "uncompressed": elements * word_bits,
        "bitmask": elements + nnz * word_bits,
        "cp": nnz * (word_bits + c),
        "rle": nnz * (word_bits + c),
    }
    if fmt not in sizes:
        raise WorkbenchError(f"format {fmt!r}: expected one of {FORMATS}")
    return sizes[fmt]


def break_even_density(elements: int, word_bits: int, fmt: Format) -> float:
    """The density below which ``fmt`` stores the fiber in fewer bits than uncompressed.

    Solves ``bits(fmt) = elements * word_bits`` for the density (continuous nonzeros).

    >>> break_even_density(64, 8, "bitmask"), round(break_even_density(64, 8, "cp"), 4)
    (0.875, 0.5714)
    """
    _check_count("break_even_density.elements", elements)
    _check_count("break_even_density.word_bits", word_bits)
    c = max(1, math.ceil(math.log2(elements)))
    if fmt == "bitmask":
        return 1 - 1 / word_bits
    if fmt in ("cp", "rle"):
        return word_bits / (word_bits + c)
    if fmt == "uncompressed":
        return 1.0
    raise WorkbenchError(f"format {fmt!r}: expected one of {FORMATS}")


def magnitude_prune(w: np.ndarray, density: float) -> np.ndarray:
    """A copy of ``w`` with all but the ``ceil(density * size)`` largest-magnitude entries zeroed.

    >>> magnitude_prune(np.array([3.0, -1.0, 0.5, -4.0]), 0.5).tolist()
    [3.0, 0.0, 0.0, -4.0]
    """
    _check_density("magnitude_prune", density)
    keep = math.ceil(density * w.size - _EPS)
    out = np.zeros_like(w)
    idx = np.argsort(np.abs(w), axis=None, kind="stable")[w.size - keep :]
    out.flat[idx] = w.flat[idx]
    return out
