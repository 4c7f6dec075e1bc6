"""Lesson 14, sparsity on a spatial array: gating vs skipping, formats, when sparsity pays.

Every figure comes from :mod:`workbench.scheduling.sparse` (checked against Timeloop/Sparseloop's
ISCA 2021 tutorial outputs, ``tests/golden/test_timeloop_sparse.py``) with the per-action energies
Accelergy computed for that tutorial's PE (:data:`ENERGY`); the output error of a pruned layer
is measured with NumPy on seeded data (:func:`quality_table`).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult
from workbench.exercises._claims import Claim
from workbench.exercises._text import LessonText
from workbench.report.charts.sparsity import sparsity_chart
from workbench.scheduling.sparse import (
    Format,
    SparseEinsum,
    SparseEnergy,
    SparseOpt,
    SparseStats,
    break_even_density,
    evaluate_sparse,
    format_bits,
    magnitude_prune,
)

__all__ = [
    "DENSITIES",
    "DOT",
    "ENERGY",
    "FIBER",
    "LAYER",
    "PANEL_FORMATS",
    "break_even",
    "check_break_even",
    "check_cp_bits",
    "check_gated_cycles",
    "design_rows",
    "dot_claim",
    "dot_table",
    "energy_table",
    "fallback_claim",
    "format_claim",
    "format_table",
    "imbalance_claim",
    "layer_table",
    "quality_claim",
    "quality_table",
    "status_line",
    "sweep_chart",
    "takeaway_claim",
]

_TEXT = LessonText("lesson14")

#: Per-action energies (pJ) Accelergy computed for the ISCA 2021 tutorial's PE (45 nm, a 64 x
#: 8-bit register file with 32 x 4-bit metadata, an 8-bit integer MAC): timeloop-accelergy-
#: exercises@800ca73, ``workspace/exercises/2021.isca/designs/01.2.3-SCDU-dot-product/ref-output/
#: timeloop-model.ERT.yaml`` (copied in ``tests/data/timeloop_sparse/``; a unit test checks these
#: equal it).
ENERGY = SparseEnergy(
    read_pj=0.42018,
    write_pj=0.42018,
    gated_pj=0.00441,
    metadata_read_pj=0.18108,
    metadata_bits=4,
    mac_pj=0.5608,
    mac_gated_pj=0.03642,
)
#: The tutorial's dot product: ``Z += A[k] * B[k]``, K = 16, A at density 0.25.
DOT = SparseEinsum(outputs=1, reduction=16, leader_density=0.25, leader_elements=16)
#: The widget's layer: a fully connected layer, 256 outputs x 512 inputs, its weights (``A``)
#: pruned, on 64 PEs (4 outputs each). Each PE walks the weights in fibers of 16, the tutorial
#: buffer's, so a coordinate or run length is one 4-bit metadata word (an assumption).
LAYER = SparseEinsum(outputs=256, reduction=512, leader_density=1.0, leader_elements=16, pes=64)
#: The densities of the sweep and the widget's slider.
DENSITIES = tuple(round(0.05 * i, 2) for i in range(1, 21))
#: The fiber of the format table: 64 elements of 8 bits.
FIBER = {"elements": 64, "word_bits": 8}
PANEL_FORMATS: tuple[Format, ...] = ("cp", "rle", "bitmask")
_DESIGNS = ("dense", "gating", "skipping")


def _opt(design: str, fmt: Format = "cp", structured: bool = True) -> SparseOpt:
    if design not in _DESIGNS:
        raise WorkbenchError(f"design {design!r}: expected one of {', '.join(_DESIGNS)}")
    if design == "dense":
        return SparseOpt(mode="dense", structured=structured)
    if design == "gating":
        return SparseOpt(mode="gating", structured=structured)
    return SparseOpt(mode="skipping", leader_format=fmt, structured=structured)


def _run(e: SparseEinsum, design: str, fmt: Format = "cp", structured: bool = True) -> SparseStats:
    return evaluate_sparse(e, _opt(design, fmt, structured), ENERGY)


def energy_table() -> pd.DataFrame:
    """:data:`ENERGY` as a table: pJ per action (the inputs every figure of the lesson uses)."""
    e = ENERGY
    rows = {
        "buffer read (8-bit word)": e.read_pj,
        "buffer write (8-bit word)": e.write_pj,
        "gated read or write": e.gated_pj,
        f"metadata read ({e.metadata_bits}-bit word)": e.metadata_read_pj,
        "multiply-accumulate": e.mac_pj,
        "gated multiply-accumulate": e.mac_gated_pj,
    }
    return pd.DataFrame({"pj": rows})


# --- 1. the dot product ------------------------------------------------------------------------
def check_gated_cycles(answer: object) -> CheckResult:
    """Cycles of the 16-element dot product with B and Z gated on A (density 0.25)."""
    return _TEXT.check(
        "gated_cycles", "gated dot-product cycles", answer, _run(DOT, "gating").cycles
    )


def dot_table() -> pd.DataFrame:
    """The dot product under each design: cycles, multiplies, B's reads, metadata, energy (pJ)."""
    rows = {}
    for design in _DESIGNS:
        st = _run(DOT, design)
        b = st.access["B"]
        rows[design] = {
            "cycles": st.cycles,
            "actual_macs": st.computes.actual,
            "gated_macs": st.computes.gated,
            "skipped_macs": st.computes.skipped,
            "b_reads": b.actual_reads,
            "b_gated": b.gated_reads,
            "b_skipped": b.skipped_reads,
            "metadata_reads": st.access["A"].metadata_reads,
            "energy_pj": st.total_pj,
        }
    frame = pd.DataFrame(rows).T
    ints = [c for c in frame.columns if c != "energy_pj"]
    frame[ints] = frame[ints].astype(int)
    return frame.round({"energy_pj": 2})


def dot_claim(table: pd.DataFrame) -> Claim:
    """What gating and skipping save on the dot product, read from :func:`dot_table`."""
    d, g, s = (table.loc[x] for x in _DESIGNS)
    return _TEXT.claim(
        "dot",
        dense_cycles=int(d["cycles"]),
        gated_cycles=int(g["cycles"]),
        skipped_cycles=int(s["cycles"]),
        gated_saving=1 - g["energy_pj"] / d["energy_pj"],
        skipped_saving=1 - s["energy_pj"] / d["energy_pj"],
        metadata=int(s["metadata_reads"]),
    )


# --- 2. formats --------------------------------------------------------------------------------
def check_cp_bits(answer: object) -> CheckResult:
    """Bits of a 64-element, 8-bit fiber at density 0.25 in coordinate-payload format."""
    return _TEXT.check("cp_bits", "coordinate-payload bits", answer, format_bits(64, 0.25, 8, "cp"))


def format_table(densities: tuple[float, ...] = (0.1, 0.5, 0.9)) -> pd.DataFrame:
    """Bits to store :data:`FIBER` per format (rows) at ``densities`` (columns), + break-even."""
    n, w = FIBER["elements"], FIBER["word_bits"]
    fmts: tuple[Format, ...] = ("uncompressed", "bitmask", "rle", "cp")
    frame = pd.DataFrame(
        {f"d={d:g}": [format_bits(n, d, w, f) for f in fmts] for d in densities}, index=fmts
    )
    frame["break_even_density"] = [round(break_even_density(n, w, f), 3) for f in fmts]
    return frame


def format_claim() -> Claim:
    """The break-even densities of the formats for :data:`FIBER`."""
    n, w = FIBER["elements"], FIBER["word_bits"]
    return _TEXT.claim(
        "formats",
        elements=n,
        word_bits=w,
        bitmask=break_even_density(n, w, "bitmask"),
        cp=break_even_density(n, w, "cp"),
    )


# --- 3. the layer: when sparsity pays ----------------------------------------------------------
def _layer(density: float) -> SparseEinsum:
    return SparseEinsum(
        outputs=LAYER.outputs, reduction=LAYER.reduction, leader_density=density,
        leader_elements=LAYER.leader_elements, pes=LAYER.pes,
    )  # fmt: skip


@functools.cache
def design_rows(structured: bool, fmt: Format) -> tuple[dict[str, object], ...]:
    """Cycles and energy (nJ) of :data:`LAYER` per design over :data:`DENSITIES` (the chart's)."""
    return tuple(
        {
            "density": d,
            "design": design,
            "cycles": (st := _run(_layer(d), design, fmt, structured)).cycles,
            "energy_nj": st.total_pj / 1e3,
        }
        for d in DENSITIES
        for design in _DESIGNS
    )


def layer_table(density: float, *, structured: bool = False, fmt: Format = "cp") -> pd.DataFrame:
    """The three designs on :data:`LAYER` at ``density``: cycles, energy (nJ), ratios to dense."""
    rows = {}
    for design in _DESIGNS:
        st = _run(_layer(density), design, fmt, structured)
        rows[design] = {"cycles": st.cycles, "energy_nj": st.total_pj / 1e3}
    frame = pd.DataFrame(rows).T
    frame["speedup"] = frame.loc["dense", "cycles"] / frame["cycles"]
    frame["energy_vs_dense"] = frame["energy_nj"] / frame.loc["dense", "energy_nj"]
    return frame.round(3)


def status_line(density: float, structured: bool, fmt: Format) -> str:
    """The widget's line: each design's cycles and energy at ``density``."""
    t = layer_table(density, structured=structured, fmt=fmt)
    parts = [
        _TEXT.render("status_part", design=d, cycles=t.loc[d, "cycles"], nj=t.loc[d, "energy_nj"])
        for d in _DESIGNS
    ]
    return _TEXT.render("status", density=density, parts=parts)


def sweep_chart(density: float, *, structured: bool = False, fmt: Format = "cp") -> object:
    """Cycles and energy vs density for the three designs, ``density`` marked."""
    title = f"{'structured' if structured else 'unstructured'} zeros, {fmt} weights"
    return sparsity_chart(list(design_rows(structured, fmt)), density=density, title=title)


def break_even(*, structured: bool = False, fmt: Format = "cp") -> float:
    """The weight density above which skipping spends more energy than dense on :data:`LAYER`.

    Bisection on the model's energies (continuous density); 1.0 if skipping never loses.
    """

    def gap(d: float) -> float:
        skip = _run(_layer(d), "skipping", fmt, structured).total_pj
        return skip - _run(_layer(d), "dense", structured=structured).total_pj

    lo, hi = 0.01, 1.0
    if gap(hi) <= 0:
        return 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def check_break_even(answer: object) -> CheckResult:
    """The break-even density of :func:`break_even` (unstructured, coordinate payload), 2 %."""
    return _TEXT.check("break_even", "break-even density", answer, break_even(), rel_tol=0.02)


def imbalance_claim(density: float = 0.25) -> Claim:
    """Skipping's cycles on :data:`LAYER` with unstructured vs structured zeros at ``density``."""
    un = _run(_layer(density), "skipping", structured=False)
    st = _run(_layer(density), "skipping", structured=True)
    ideal = LAYER.macs / LAYER.pes * density
    return _TEXT.claim(
        "imbalance",
        density=density,
        pes=LAYER.pes,
        per_pe=LAYER.macs // LAYER.pes,
        ideal=ideal,
        unstructured=un.cycles,
        structured=st.cycles,
        loss=un.cycles / ideal - 1,
    )


def fallback_claim() -> Claim:
    """Where skipping loses energy to dense on :data:`LAYER`, and what a fallback keeps."""
    rows = design_rows(False, "cp")
    energy = {(r["density"], r["design"]): float(r["energy_nj"]) for r in rows}  # type: ignore[arg-type]
    worse = [d for d in DENSITIES if energy[d, "skipping"] > energy[d, "dense"]]
    return _TEXT.claim(
        "fallback",
        break_even=break_even(),
        worse=worse,
        penalty=energy[1.0, "skipping"] / energy[1.0, "dense"] - 1,
    )


# --- 4. quality evidence -----------------------------------------------------------------------
def quality_table(
    densities: tuple[float, ...] = (0.75, 0.5, 0.25, 0.1), seed: int = 0
) -> pd.DataFrame:
    """Relative output error of :data:`LAYER` with magnitude-pruned weights, per density.

    Weights and a batch of 64 inputs are seeded standard normals (an untrained layer: the
    worst case, a trained one concentrates its weights); the error is
    ``||W_p x - W x|| / ||W x||`` over the batch, with the skipped design's energy and speedup
    at that density (unstructured) beside it.
    """
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((LAYER.outputs, LAYER.reduction))
    x = rng.standard_normal((LAYER.reduction, 64))
    ref = w @ x
    rows = {}
    for d in densities:
        err = np.linalg.norm(magnitude_prune(w, d) @ x - ref) / np.linalg.norm(ref)
        t = layer_table(d)
        rows[f"{d:g}"] = {
            "output_error": float(err),
            "speedup": t.loc["skipping", "speedup"],
            "energy_vs_dense": t.loc["skipping", "energy_vs_dense"],
        }
    frame = pd.DataFrame(rows).T
    frame.index.name = "density"
    return frame.round(3)


def quality_claim(table: pd.DataFrame) -> Claim:
    """The trade the quality table shows: speed against output error, per density."""
    best = table["speedup"].idxmax()
    return _TEXT.claim(
        "quality",
        density=best,
        speedup=table.loc[best, "speedup"],
        energy=table.loc[best, "energy_vs_dense"],
        error=table.loc[best, "output_error"],
        mild=table.index[0],
        mild_error=table.loc[table.index[0], "output_error"],
    )


def takeaway_claim() -> Claim:
    """The lesson's measured takeaways: gating vs skipping at density 0.25 on the layer."""
    t = layer_table(0.25)
    return _TEXT.claim(
        "takeaway",
        gated_energy=t.loc["gating", "energy_vs_dense"],
        skipped_energy=t.loc["skipping", "energy_vs_dense"],
        speedup=t.loc["skipping", "speedup"],
        break_even=break_even(),
    )
