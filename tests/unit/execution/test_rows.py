import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from workbench.execution import ExecutionError, Trace, layernorm, reduce, rmsnorm, softmax
from workbench.execution.reference import layernorm_ref, reduce_ref, rmsnorm_ref, softmax_ref

from .conftest import FAST

mats = arrays(np.float32, st.tuples(st.integers(1, 9), st.integers(1, 40)),
              elements=st.floats(-30, 30, width=32))  # fmt: skip
tiles = st.tuples(st.integers(1, 10), st.integers(1, 17))


@FAST
@given(x=mats, t=tiles)
def test_softmax_variants_match_reference(x, t):
    ref = softmax_ref(x)
    for method in ("online", "two_pass"):
        got = softmax(x, row_tile=t[0], col_tile=t[1], method=method, backend="numpy")
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@FAST
@given(x=mats, t=tiles)
def test_layernorm_variants_match_reference(x, t):
    x = x + np.float32(100.0)  # a large mean stresses the one-pass variance
    g = np.linspace(0.5, 1.5, x.shape[1]).astype(np.float32)
    b = np.linspace(-1, 1, x.shape[1]).astype(np.float32)
    ref = layernorm_ref(x, g, b)
    # Centring in fp32 loses up to a few ulps of |x|; normalising scales that by 1/std.
    x64 = x.astype(np.float64)
    cond = np.abs(x64).max(-1, keepdims=True) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    bound = 16 * 2.0**-24 * cond * 1.5 + 1e-5 * (1 + np.abs(ref))
    for method in ("online", "two_pass"):
        got = layernorm(x, g, b, row_tile=t[0], col_tile=t[1], method=method, backend="numpy")
        assert np.all(np.abs(got - ref) <= bound), method


@FAST
@given(x=mats, t=tiles)
def test_rmsnorm_and_reductions_match_reference(x, t):
    g = np.linspace(0.5, 1.5, x.shape[1]).astype(np.float32)
    for method in ("online", "two_pass"):
        got = rmsnorm(x, g, row_tile=t[0], col_tile=t[1], method=method, backend="numpy")
        np.testing.assert_allclose(got, rmsnorm_ref(x, g), rtol=1e-4, atol=1e-5)
        for kind in ("sum", "mean", "max"):
            red = reduce(x, kind, row_tile=t[0], col_tile=t[1], method=method, backend="numpy")
            np.testing.assert_allclose(red, reduce_ref(x, kind), rtol=1e-5, atol=1e-3)


def test_leading_axes_are_rows_and_trace(rng):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    tr = Trace()
    y = softmax(x, row_tile=4, trace=tr)
    assert y.shape == x.shape
    assert len(tr) == math.ceil(15 / 4)
    assert tr.total_flops == 5 * x.size
    assert reduce(x, "max").shape == (3, 5)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: softmax(np.ones((2, 2)), method="three_pass"), "method"),
        (lambda: reduce(np.ones((2, 2)), "prod"), "kind"),
        (lambda: rmsnorm(np.ones((2, 0))), "at least one"),
        (lambda: layernorm(np.ones((2, 2)), row_tile=0), "positive"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ExecutionError, match=match):
        call()
