"""The sparse-tensor model's inputs (issue 28): hostile shapes, densities and options give one
clear line naming the field, valid ones finite, non-negative figures whose counts add up."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import WorkbenchError
from workbench.exercises.lesson14 import ENERGY
from workbench.scheduling.sparse import (
    FORMATS,
    MODES,
    SparseEinsum,
    SparseOpt,
    evaluate_sparse,
    format_bits,
)

HOSTILE = st.one_of(
    st.integers(-3, 300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([None, True, "4", 1.5, 0]),
)
DENSITY = st.one_of(st.floats(-0.5, 1.5), st.sampled_from([float("nan"), float("inf"), 1e-9]))


def _one_line(err: WorkbenchError) -> None:
    assert str(err)
    assert "\n" not in str(err)


@given(
    outputs=HOSTILE, reduction=HOSTILE, pes=HOSTILE, density=DENSITY,
    mode=st.sampled_from([*MODES, "fast"]), fmt=st.sampled_from([*FORMATS, "zip"]),
    structured=st.booleans(),
)  # fmt: skip
def test_sparse_model_inputs(outputs, reduction, pes, density, mode, fmt, structured):
    try:
        e = SparseEinsum(outputs=outputs, reduction=reduction, leader_density=density, pes=pes)
        opt = SparseOpt(mode=mode, leader_format=fmt, structured=structured)
    except WorkbenchError as err:
        _one_line(err)
        return
    _sane(e, opt)


@given(
    per_pe=st.integers(1, 40), pes=st.integers(1, 16), reduction=st.integers(1, 64),
    density=st.floats(0.001, 1.0), mode=st.sampled_from(MODES),
    fmt=st.sampled_from(FORMATS[1:]), structured=st.booleans(),
)  # fmt: skip
def test_valid_sparse_models_are_sane(per_pe, pes, reduction, density, mode, fmt, structured):
    e = SparseEinsum(outputs=per_pe * pes, reduction=reduction, leader_density=density, pes=pes)
    fmt = "uncompressed" if mode == "dense" else fmt
    _sane(e, SparseOpt(mode=mode, leader_format=fmt, structured=structured))


def _sane(e: SparseEinsum, opt: SparseOpt) -> None:
    s = evaluate_sparse(e, opt, ENERGY)
    figures = [s.cycles, *s.energy_pj.values(), s.computes.actual, s.computes.gated]
    assert all(isinstance(v, int | float) and math.isfinite(v) and v >= 0 for v in figures)
    c = s.computes
    assert math.isclose(c.actual + c.gated + c.skipped, e.macs)
    assert s.cycles <= e.macs // e.pes


@given(elements=HOSTILE, density=DENSITY, bits=HOSTILE, fmt=st.sampled_from([*FORMATS, "zip"]))
def test_format_bits_inputs(elements, density, bits, fmt):
    try:
        n = format_bits(elements, density, bits, fmt)
    except WorkbenchError as err:
        _one_line(err)
        return
    assert isinstance(n, int)
    assert n > 0
