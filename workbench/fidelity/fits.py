"""Fits: every figure of the model that is fitted to corpus rows, and its re-fit.

Which figures, on which profiles, from which rows is data (``data/fits.yaml`` for the chips and
attention classes, ``fitted: true`` in ``stacks/*.yaml`` for the stacks); how each kind is solved,
pooled and applied is this module.

A figure is *fitted* when its value is solved from a published-corpus row, so that the row is
reproduced (these rows are the corpus's ``calibration`` rows). Each one is a :class:`Fit`: the
rows it may be solved from (the first one present wins), how it is solved, and what the model
uses when none of its rows is available (``fallback``). Leave-one-source-out cross-validation
(:mod:`workbench.fidelity.crossval`) re-solves them without one publication's rows.

=====================================  ===========================================  =========
figure                                 row(s), first present wins                    fallback
=====================================  ===========================================  =========
matrix_engine.efficiency (a100, h100,  a100: gemm.azure.a100 8192^3, then              pool
h200, mi300x)                          gemm.mamf.a100; others: gemm.mamf.<hw>
format_efficiency.fp8_e4m3 (h100,      gemm.azure.<hw>.8192x8192x8192; mi300x then   pool (as
h200, mi300x)                          gemm.rvs.mi300x (AMD's acceptance guide)      a ratio)
format_efficiency.int8 (a100, h100,    none: the fold's FP8/bf16 ratio x bf16          pool
h200)                                  efficiency (no large INT8 GEMM row)
offchip sustained_fraction (4 chips)   stream.copy.azure.<hw>; a100 then             pool
                                       stream.copy.ukri-bench, mi300x then
                                       stream.copy.rocm-acceptance
fa2 softmax_exposed                    attn.fa2.a100.peak                            pool
fa3 softmax_exposed                    attn.fa3.h100.s16k                            pool
attention_warp_mma_fraction            attn.fa2.h100.peak, then the PyTorch SDPA     unfitted
(h100-sxm, h200)                       (FA2) row of pytorch/benchmark PR 2296
a stack's step_overhead_s or              the rows its stack file names (``fitted:      unfitted
request_overhead_s (stacks/*.yaml)       true``; today gen.nemo.h100.llama2-7b.bs1 for
                                         nemo-inference and tensorrt-llm-*,
                                         cnn.resnet50.paddle-trt.t4.fp16.bs1 for
                                         paddle-tensorrt)
a stack's training_efficiency             the row its stack file names (today          unfitted
(stacks/*.yaml)                          train.fms-fsdp.a100.llama2-7b.hsdp for
                                         pytorch-eager, torchtitan and
                                         flash-attention-trainer), by bisection
=====================================  ===========================================  =========

A chip's GEMM efficiency is solved, where the corpus holds one in its GEMM format, from a library
GEMM of a fixed shape timed under sustained load (Azure's cuBLASLt runs: 10,000 warm-up
iterations, shapes not chosen for their rate); a maximum-achievable (MAMF) figure, the best
shape of a search (stas00/ml-engineering compute/accelerator/README.md: "chances are low that
you will ever hit that exact shape"), is the fallback. The efficiency prices every GEMM of
every workload, none of which runs at a searched best shape. On A100 the two disagree beyond the
shape model: Azure's three largest shapes (8192^3, 16384^3, 6144 x 12288 x 12288) reach 251-257
TFLOP/s, while MAMF's 267.9 at its best shape made the model put 8192^3 at 275.5.

A second row is from another publication than the first (its own ``source_key``), so that a
figure fitted to one publication is, with that publication left out, solved from another rather
than falling back. Where a fold holds two or more of a fit's rows, which one it is solved from
is re-decided in that fold (issue 27): each is solved in turn and the one giving the lowest
median |error| on the fold's other rows of the same chips, category, setup and format width
wins (at least ``MIN_JUDGE_ROWS`` of them; with fewer, the listed order stands). In-sample the
listed first row wins that contest for every fit judged so, so the shipped figures are unchanged.

``pool``: the median of the same kind of figure solved for the other targets in the same fold
(e.g. another chip's sustained fraction), filled in once the last fit of that kind is solved
(later fits are solved with it in force); when none is left, ``unfitted``. An FP8 efficiency is
pooled as a ratio: the median over the chips solved in the fold of FP8 efficiency / the chip's
bf16 efficiency, times this chip's bf16 efficiency, at its bf16 shape (:func:`_pool` says why).
``unfitted``: the schema's meaning of "not fitted" (efficiency and sustained fraction 1.0, no
FP8 entry, the profile's ``legacy_mma_fraction``, the profile's own step overhead). A figure
taken from a measurement is a fit of a calibration row, never copied into a profile (issue 27:
the h200 and mi300x MAMF efficiencies were copied, and their shapes were another row's).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from workbench.cost import attention_class as ac
from workbench.errors import first_invalid
from workbench.fidelity._input import CorpusError, StrictModel, check_data
from workbench.fidelity.reproduce import fit_request_overhead, fit_step_overhead, reproduce
from workbench.fidelity.schema import GemmSetup, PublishedRow
from workbench.hw._schema_engines import FormatEfficiency
from workbench.hw._yaml import StrictYamlError, load_strict
from workbench.hw.schema import Hardware
from workbench.hw.stack import (
    MIN_FRACTION,
    Stack,
    list_stacks,
    load_stack,
    patched_stacks,
    stacks_dir,
)
from workbench.ir.dtypes import dtype_info
from workbench.mapper import clear_cache

__all__ = [
    "FITS",
    "FITS_PATH",
    "STACK_KINDS",
    "Fit",
    "FitState",
    "applied",
    "check_stack_rows",
    "load_fits",
    "shipped",
    "solve_fits",
    "stack_fits",
]

_FP8 = "fp8_e4m3"
#: The format each 8-bit efficiency kind is written to (matrix_engine.format_efficiency).
_FORMAT = {"fp8_efficiency": _FP8, "int8_efficiency": "int8"}
#: Stack figures a stack file may mark ``fitted: true`` (seconds, or a training step's
#: efficiency; solved per stack).
STACK_KINDS = ("step_overhead_s", "request_overhead_s", "training_efficiency")


def stack_fits() -> tuple[Fit, ...]:
    """One fit per stack figure marked ``fitted: true`` in stacks/*.yaml.

    Stacks whose figure names the same calibration rows share one fit (one value written to
    each of them): e.g. every TensorRT-LLM release's step overhead, solved on the NeMo
    inference row (NeMo exports TensorRT-LLM engines).
    """
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for name in list_stacks():
        stack = load_stack(name)
        for kind in STACK_KINDS:
            fig = getattr(stack, kind)
            if fig is not None and fig.fitted:
                groups.setdefault((kind, fig.rows), []).append(name)
    return tuple(
        Fit(name=f"{kind} ({', '.join(t)})", kind=kind, targets=tuple(t), rows=rows, pool=False)
        for (kind, rows), t in groups.items()
    )


def check_stack_rows(row_ids: set[str] | frozenset[str]) -> None:
    """Refuse a stack figure ``fitted: true`` whose ``rows`` name a row not in the corpus.

    Such a row would leave the figure silently unfitted in every fold; the stack file is named
    with the row, in one line.

    Args:
        row_ids: Every row id of the published corpus.

    Raises:
        CorpusError: The first stack figure naming an unknown row.
    """
    for name in list_stacks():
        stack = load_stack(name)
        for kind in type(stack).model_fields:
            fig = getattr(stack, kind)
            unknown = [r for r in getattr(fig, "rows", ()) if r not in row_ids]
            if unknown:
                raise CorpusError(
                    f"{stacks_dir() / f'{name}.yaml'}: {kind}.rows: {unknown[0]!r} is no row of "
                    "the published corpus"
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class Fit:
    """One fitted figure.

    Attributes:
        name: Unique label, e.g. ``h100-sxm sustained_fraction``.
        kind: What is fitted (``efficiency``, ``fp8_efficiency``, ``sustained_fraction``,
            ``softmax_exposed``, ``warp_mma_fraction``, ``step_overhead_s``,
            ``request_overhead_s``, ``training_efficiency``); ``pool`` fallbacks
            take the median over the fits of the same kind.
        targets: Hardware profiles (or the attention class, or the stacks, stacks/*.yaml) the
            value is written to.
        rows: Corpus row ids the figure may be solved from: chosen per fold by the fold's own
            rows where enough judge them (``_choose_row``), else the first listed.
        pool: Whether a fit with none of its rows left takes the median of its kind.
    """

    name: str
    kind: str
    targets: tuple[str, ...]
    rows: tuple[str, ...]
    pool: bool = True


#: The chip and attention-class fits, as data: which figure, its targets and its corpus rows.
FITS_PATH = Path(__file__).with_name("data") / "fits.yaml"


class _FitEntry(StrictModel):
    """One fit in ``data/fits.yaml``."""

    name: str = Field(description="Unique label, e.g. ``h100-sxm sustained_fraction``.")
    kind: Literal[
        "efficiency", "fp8_efficiency", "int8_efficiency", "sustained_fraction",
        "softmax_exposed", "warp_mma_fraction",
    ] = Field(description="What is fitted.")  # fmt: skip
    targets: tuple[str, ...] = Field(
        min_length=1, description="Hardware profiles or attention classes written to."
    )
    rows: tuple[str, ...] = Field(
        description="Corpus row ids it may be solved from, chosen per fold by the fold's other "
        "rows where at least 3 judge them, else the first listed (none: always "
        "pooled, e.g. an INT8 efficiency as FP8's ratio)."
    )
    pool: bool = Field(
        default=True, description="Whether, with none of its rows, it takes its kind's median."
    )

    @model_validator(mode="after")
    def _rows_or_pool(self) -> _FitEntry:
        if not self.rows and not self.pool:
            raise ValueError("a fit with no rows must pool (pool: true)")
        return self


class _FitsFile(StrictModel):
    """``data/fits.yaml``: the chip and attention-class fits in solving order."""

    schema_version: Literal[1] = Field(description="Version of this file's schema.")
    fits: tuple[_FitEntry, ...] = Field(description="The fits, in solving order.")


def load_fits(path: Path = FITS_PATH) -> tuple[Fit, ...]:
    """The chip and attention-class fits of ``path`` (default: the shipped ``data/fits.yaml``).

    Raises:
        CorpusError: Unreadable file or invalid content, in one line naming the file.
    """
    try:
        data = load_strict(path.read_text(encoding="utf-8"))
        check_data(data)
        entries = _FitsFile.model_validate(data).fits
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({type(exc).__name__})") from None
    except (CorpusError, StrictYamlError) as exc:
        raise CorpusError(f"{path}: {exc}") from None
    except ValidationError as exc:
        raise CorpusError(f"{path}: {first_invalid(exc)}".replace("\n", " ")) from None
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise CorpusError(f"{path}: a fit name is repeated")
    return tuple(
        Fit(name=e.name, kind=e.kind, targets=e.targets, rows=e.rows, pool=e.pool) for e in entries
    )


#: Every fitted figure, in solving order (a later fit is solved on the earlier ones' values).
FITS: tuple[Fit, ...] = (
    *load_fits(),
    *stack_fits(),  # NOTE: after the chip figures: a stack's overhead is what they leave
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FitState:
    """The fitted figures of one fold: a value (None = unfitted) and where it came from.

    Attributes:
        values: Fit name -> fitted value (fraction, or seconds for a step overhead), or None.
        shapes: Fit name -> GEMM shape (m, n, k) the efficiency was measured at, if any.
        origin: Fit name -> the row id it was solved from, ``pooled`` or ``unfitted``.
        judged: Fit name -> (judging rows, whether the listed order won) for each fit that had
            two or more candidate rows in the fold (:func:`_choose_row`); 0 judging rows: too
            few to judge, the listed order stood.
    """

    values: Mapping[str, float | None]
    shapes: Mapping[str, tuple[int, int, int]]
    origin: Mapping[str, str]
    judged: Mapping[str, tuple[int, bool]] = field(default_factory=dict)


def _bisect(rate: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """The x in [lo, hi] where a monotone ``rate(x)`` meets ``target`` (either direction)."""
    rising = rate(hi) > rate(lo)
    for _ in range(30):
        mid = (lo + hi) / 2
        if (rate(mid) < target) == rising:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _solve_one(fit: Fit, row: PublishedRow, profiles: Mapping[str, Hardware]) -> float:
    """The value of ``fit`` that reproduces ``row`` on ``profiles`` (earlier fits applied)."""
    hw = profiles[row.hardware]
    s = row.setup
    if fit.kind in ("efficiency", "fp8_efficiency", "int8_efficiency"):
        assert isinstance(s, GemmSetup)
        return row.measured_si / hw.peak_flops(s.dtype)
    if fit.kind == "sustained_fraction":
        return row.measured_si / hw.offchip.bandwidth_bytes_per_s
    if fit.kind == "softmax_exposed":
        name = fit.targets[0]

        def rate(e: float) -> float:
            with _classes({name: e}):
                return reproduce(row, hw).predicted

        return _bisect(rate, row.measured_si, 0.0, 1.0)
    if fit.kind == "warp_mma_fraction":

        def warp_rate(f: float) -> float:
            return reproduce(row, _warp(hw, f)).predicted

        return _bisect(warp_rate, row.measured_si, 0.05, 1.0)
    if fit.kind == "request_overhead_s":
        return fit_request_overhead(row, hw)
    if fit.kind == "training_efficiency":
        return _solve_training_efficiency(row, hw)
    return fit_step_overhead(row, hw)


def _solve_training_efficiency(row: PublishedRow, hw: Hardware) -> float:
    """The stack's training step efficiency that reproduces a training row (bisection).

    The row's predicted rate (tokens/s or MFU) rises with the efficiency, its compute kernels
    taking ``1 / e`` of their mapped time; solved in [MIN_FRACTION, 1] (1: the kernels as
    mapped already run at or below the measured rate).
    """
    stack = load_stack(row.stack)

    def rate(e: float) -> float:
        with patched_stacks({row.stack: _with(stack, "training_efficiency", e)}):
            return reproduce(row, hw).predicted

    if rate(1.0) <= row.measured_si:
        return 1.0
    return _bisect(rate, row.measured_si, MIN_FRACTION, 1.0)


def solve_fits(
    rows: tuple[PublishedRow, ...], profiles: Mapping[str, Hardware], fits: tuple[Fit, ...] = FITS
) -> FitState:
    """Solve every fit from ``rows`` (the training rows of a fold), in order.

    A fit with none of its rows falls back once the last fit of its kind is solved (see
    :func:`_pool`), so every later fit is solved with the fallback in force.

    Args:
        rows: The rows a fit may use; a fit whose rows are all absent falls back.
        profiles: Hardware profiles by name as shipped (every fitted field is overwritten).
        fits: The fits to solve.

    Returns:
        The :class:`FitState`.
    """
    by_id = {r.id: r for r in rows}
    values: dict[str, float | None] = {}
    shapes: dict[str, tuple[int, int, int]] = {}
    origin: dict[str, str] = {}
    judged: dict[str, tuple[int, bool]] = {}
    last = {f.kind: f.name for f in fits}
    for fit in fits:
        state = FitState(values=values, shapes=shapes, origin=origin)
        cands = [by_id[i] for i in fit.rows if i in by_id]
        row, n_judges = _choose_row(fit, cands, rows, state, profiles)
        if len(cands) > 1:
            judged[fit.name] = (n_judges, row is cands[0])
        if row is not None:
            with applied(state, profiles) as fitted:
                values[fit.name] = _solve_one(fit, row, fitted)
            origin[fit.name] = row.id
            if isinstance(row.setup, GemmSetup):
                shapes[fit.name] = (row.setup.m, row.setup.n, row.setup.k)
        else:
            values[fit.name], origin[fit.name] = None, "unfitted"
        if last[fit.kind] == fit.name:
            _pool(fits, fit.kind, values, shapes, origin, profiles)
    return FitState(values=values, shapes=shapes, origin=origin, judged=judged)


#: Rows a fold must hold, besides a fit's own candidate rows, to choose among the candidates by
#: their error on those rows; with fewer, the order the fit lists them in stands.
MIN_JUDGE_ROWS = 3


def _judges(fit: Fit, row: PublishedRow, rows: tuple[PublishedRow, ...]) -> list[PublishedRow]:
    """The fold's rows that judge ``fit``'s candidate ``row``.

    Its chips, its category, its kind of setup and format width, and none of the fit's own
    candidates (so that every candidate faces the same rows).
    """
    width = _width(row)
    return [
        r
        for r in rows
        if r.hardware in fit.targets
        and r.category == row.category
        and r.setup.kind == row.setup.kind
        and _width(r) == width
        and r.id not in fit.rows
    ]


def _width(row: PublishedRow) -> float | None:
    """Bytes per element of a row's format (fp16 and bf16 run alike on a tensor engine)."""
    dtype = getattr(row.setup, "dtype", None)
    return None if dtype is None else dtype_info(dtype).bytes


def _trial(
    fit: Fit, row: PublishedRow, state: FitState, profiles: Mapping[str, Hardware]
) -> FitState:
    """``state`` with ``fit`` solved on ``row`` (the earlier fits in force)."""
    with applied(state, profiles) as fitted:
        value = _solve_one(fit, row, fitted)
    shapes = dict(state.shapes)
    if isinstance(row.setup, GemmSetup):
        shapes[fit.name] = (row.setup.m, row.setup.n, row.setup.k)
    return FitState(values={**state.values, fit.name: value}, shapes=shapes, origin=state.origin)


def _choose_row(
    fit: Fit,
    cands: list[PublishedRow],
    rows: tuple[PublishedRow, ...],
    state: FitState,
    profiles: Mapping[str, Hardware],
) -> tuple[PublishedRow | None, int]:
    """The candidate row ``fit`` is solved from in this fold, and how many rows judged it.

    Issue 27: which row a fit prefers is re-decided per fold, not fixed by hand.

    With two or more candidates left in the fold, each is solved in turn and judged by the
    median |error| it gives the fold's other rows of the same chips, category, setup and format
    (:func:`_judges`); the lowest wins. With one candidate, or fewer than
    :data:`MIN_JUDGE_ROWS` judging rows, or candidates of different kinds, the listed order
    stands. The held-out publication's rows are not in ``rows``, so they never judge.
    """
    if len(cands) < 2:
        return (cands[0] if cands else None), 0
    judges = _judges(fit, cands[0], rows)
    if len(judges) < MIN_JUDGE_ROWS or any(_judges(fit, c, rows) != judges for c in cands[1:]):
        return cands[0], 0
    scored = []
    for i, row in enumerate(cands):
        with applied(_trial(fit, row, state, profiles), profiles) as fitted:
            errs = [abs(reproduce(r, fitted[r.hardware]).predicted / r.measured_si - 1.0)
                    for r in judges]  # fmt: skip
        scored.append((statistics.median(errs), i, row))
    return min(scored, key=lambda t: (t[0], t[1]))[2], len(judges)


def _pool(
    fits: tuple[Fit, ...],
    kind: str,
    values: dict[str, float | None],
    shapes: dict[str, tuple[int, int, int]],
    origin: dict[str, str],
    profiles: Mapping[str, Hardware],
) -> None:
    """Fill in the ``pool`` fallback of every unsolved fit of ``kind`` (in place).

    The fallback is the median of the figure over the fits of that kind solved from their own
    rows in this fold (other chips, or another class). An 8-bit efficiency (FP8, INT8) is pooled
    as a ratio instead: the median, over the chips whose FP8 efficiency is solved from their own
    rows, of FP8 efficiency over that chip's own large-GEMM (bf16) efficiency, times this chip's
    bf16 efficiency, at its bf16 measurement's shape. NOTE: an 8-bit GEMM runs on the same engine
    at twice the 16-bit rate, fed by the same memories, so how far below its peak it lands
    depends on the chip's own GEMM efficiency; taking another chip's FP8 fraction as is would
    carry that chip's bf16 efficiency over too. The ratio is a measured one (no factor is
    assumed). An INT8 GEMM, which no corpus row measures at a large shape, takes the FP8 ratio
    (assumption: the same doubled rate on the same tensor cores, as FP8 on Hopper; on Ampere and
    Ada INT8 is the 8-bit format the engine doubles). With no FP8 fit solved the figure stays
    unfitted (the bf16 efficiency applies, the schema's meaning).
    """
    same = [f for f in fits if f.kind == kind]
    src = "fp8_efficiency" if kind in _FORMAT else kind
    solved = [
        f
        for f in fits
        if f.kind == src and origin.get(f.name, "") in f.rows and values[f.name] is not None
    ]
    if not solved:
        return
    state = FitState(values=values, shapes=shapes, origin=origin)
    with applied(state, profiles) as fitted:
        eff = {
            f.name: fitted[f.targets[0]].matrix_engine
            for f in (*same, *solved)
            if f.targets[0] in fitted
        }
    for fit in same:
        if not fit.pool or origin[fit.name] != "unfitted":
            continue
        if kind not in _FORMAT:
            values[fit.name] = statistics.median(values[f.name] or 0.0 for f in solved)
            origin[fit.name] = "pooled"
            continue
        me = eff[fit.name]
        if me.efficiency_shape is None:
            continue  # NOTE: no shape to measure the pooled figure at: stays unfitted
        ratio = statistics.median((values[f.name] or 0.0) / eff[f.name].efficiency for f in solved)
        values[fit.name] = min(1.0, ratio * me.efficiency)
        shapes[fit.name] = me.efficiency_shape
        origin[fit.name] = "pooled"


def shipped(profiles: Mapping[str, Hardware], rows: tuple[PublishedRow, ...]) -> dict[str, float]:
    """The value each fit has in the shipped profiles, attention classes and corpus rows."""
    out: dict[str, float] = {}
    for fit in FITS:
        t = fit.targets[0]
        if fit.kind == "efficiency":
            out[fit.name] = profiles[t].matrix_engine.efficiency
        elif fit.kind in _FORMAT:
            fe = profiles[t].matrix_engine.format_efficiency
            out[fit.name] = fe[_FORMAT[fit.kind]].efficiency
        elif fit.kind == "sustained_fraction":
            out[fit.name] = profiles[t].offchip.sustained_fraction
        elif fit.kind == "softmax_exposed":
            out[fit.name] = ac.CLASSES[t].softmax_exposed
        elif fit.kind == "warp_mma_fraction":
            out[fit.name] = profiles[t].software.attention_warp_mma_fraction or 0.0
        else:
            out[fit.name] = getattr(load_stack(t), fit.kind).value or 0.0
    return out


def _with(stack: Stack, kind: str, v: float | None) -> Stack:
    """``stack`` with figure ``kind``'s value set to ``v`` (None: the profile's own)."""
    fig = getattr(stack, kind).model_copy(update={"value": v})
    return stack.model_copy(update={kind: fig})


def _warp(hw: Hardware, f: float | None) -> Hardware:
    sw = hw.software.model_copy(update={"attention_warp_mma_fraction": f})
    return hw.model_copy(update={"software": sw})


def _patch(hw: Hardware, fit: Fit, v: float | None, shape: tuple[int, int, int] | None) -> Hardware:
    """``hw`` with ``fit``'s field set to ``v`` (None: the field's unfitted meaning)."""
    me = hw.matrix_engine
    if fit.kind == "efficiency":
        upd: dict[str, object] = {"efficiency": v if v is not None else 1.0}
        if shape is not None or v is None:
            upd["efficiency_shape"] = shape
        return hw.model_copy(update={"matrix_engine": me.model_copy(update=upd)})
    if fit.kind in _FORMAT:
        fmt = _FORMAT[fit.kind]
        fe = dict(me.format_efficiency)
        if v is None:
            fe.pop(fmt, None)
        else:
            old = fe.get(fmt)
            fe[fmt] = FormatEfficiency(efficiency=min(v, 1.0), shape=shape or old.shape)  # type: ignore[union-attr]
        return hw.model_copy(
            update={"matrix_engine": me.model_copy(update={"format_efficiency": fe})}
        )
    if fit.kind == "sustained_fraction":
        level = hw.offchip.model_copy(update={"sustained_fraction": min(v or 1.0, 1.0)})
        return hw.model_copy(update={"memory": (*hw.memory[:-1], level)})
    return _warp(hw, v)


@contextmanager
def _classes(values: Mapping[str, float | None]) -> Iterator[None]:
    """Attention classes with their ``softmax_exposed`` replaced, restored on exit."""
    saved = dict(ac.CLASSES)
    for name, v in values.items():
        ac.CLASSES[name] = replace(saved[name], softmax_exposed=1.0 if v is None else v)
    clear_cache()  # NOTE: cached schedules were costed with the classes as they were
    try:
        yield
    finally:
        ac.CLASSES.clear()
        ac.CLASSES.update(saved)
        clear_cache()


@contextmanager
def applied(state: FitState, profiles: Mapping[str, Hardware]) -> Iterator[dict[str, Hardware]]:
    """Profiles, attention classes and stacks with ``state``'s figures in force.

    Yields:
        The patched profiles by name; the fitted stacks answer
        :func:`workbench.hw.stack.load_stack` for the block (a row names its stack).
    """
    out = dict(profiles)
    classes: dict[str, float | None] = {}
    stacks: dict[str, Stack] = {}
    for fit in FITS:
        if fit.name not in state.values:
            continue
        v = state.values[fit.name]
        if fit.kind == "softmax_exposed":
            classes[fit.targets[0]] = v
        elif fit.kind in STACK_KINDS:
            for t in fit.targets:
                stacks[t] = _with(stacks.get(t) or load_stack(t), fit.kind, v)
        else:
            for t in fit.targets:
                if t in out:
                    out[t] = _patch(out[t], fit, v, state.shapes.get(fit.name))

    with _classes(classes), patched_stacks(stacks):
        yield out
