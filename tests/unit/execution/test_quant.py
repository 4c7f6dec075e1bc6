import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from workbench.execution import ExecutionError, dequantize, error_metrics, fake_quantize, quantize
from workbench.execution.quant import FP8_MAX, round_bf16, round_fp8, round_to_format

from .conftest import FAST

normal_f32 = st.floats(
    min_value=-(2.0**100), max_value=2.0**100, allow_nan=False, width=32
).filter(lambda v: abs(v) > 2.0**-100)  # fmt: skip
vectors = arrays(np.float32, st.integers(1, 64), elements=normal_f32)


@FAST
@given(vectors)
def test_bf16_relative_error_at_most_half_ulp(x):
    y = round_bf16(x)
    assert np.all(np.abs(y - x) <= np.abs(x) * 2.0**-8)
    assert np.all((y.view(np.uint32) & 0xFFFF) == 0)


def test_bf16_ties_to_even():
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0).
    x = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8], np.float32)
    assert round_bf16(x).tolist() == [1.0, 1 + 2.0**-6]


def test_bf16_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32) * 1e3
    np.testing.assert_array_equal(round_bf16(x), x.astype(ml_dtypes.bfloat16).astype(np.float32))


@pytest.mark.parametrize(
    ("fmt", "ml_name"), [("fp8_e4m3", "float8_e4m3fn"), ("fp8_e5m2", "float8_e5m2")]
)
def test_fp8_grid_matches_ml_dtypes(fmt, ml_name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(1).standard_normal(20_000).astype(np.float32) * 40
    x = x[np.abs(x) < FP8_MAX[fmt]]
    want = x.astype(getattr(ml_dtypes, ml_name)).astype(np.float32)
    np.testing.assert_array_equal(round_fp8(x, fmt), want)


def test_fp8_saturates_at_format_max():
    big = np.array([1e6, -1e6, 449.0, 460.0], np.float32)
    assert round_fp8(big, "fp8_e4m3").tolist() == [448.0, -448.0, 448.0, 448.0]
    assert round_fp8(np.array([1e9], np.float32), "fp8_e5m2").tolist() == [57344.0]
    q = quantize(np.array([3.0, -7.0, 0.5], np.float32), "fp8_e4m3")
    assert np.abs(q.values).max() == 448.0
    assert not np.isinf(q.values).any()


def test_fp16_rounds_like_ieee_half():
    x = np.array([1 + 2.0**-12, 70000.0], np.float32)
    y = round_to_format(x, "fp16")
    assert y[0] == 1.0
    assert np.isinf(y[1])


@FAST
@given(arrays(np.float32, st.tuples(st.integers(1, 8), st.integers(1, 16)),
              elements=st.floats(-100, 100, width=32)))  # fmt: skip
def test_int8_per_channel_round_trip(x):
    q = quantize(x, "int8", axis=0)
    assert q.scale.shape == (x.shape[0], 1)
    assert np.abs(q.values).max() <= 127
    np.testing.assert_array_equal(q.values, np.rint(q.values))
    err = np.abs(dequantize(q) - x)
    assert np.all(err <= q.scale / 2 + 1e-6 * np.abs(x) + 1e-30)


def test_int8_channels_get_their_own_scale():
    x = np.array([[1.0, -2.0], [100.0, 50.0]], np.float32)
    q = quantize(x, "int8", axis=0)
    np.testing.assert_allclose(q.scale.ravel(), [2 / 127, 100 / 127], rtol=1e-6)


def test_int4_group_wise_with_ragged_last_group(rng):
    w = rng.standard_normal((300, 5)).astype(np.float32)
    q = quantize(w, "int4", axis=0, group_size=128)
    assert q.values.min() >= -8
    assert q.values.max() <= 7
    # Scales are constant inside a group and differ between groups.
    assert np.all(q.scale[:128] == q.scale[0])
    assert np.all(q.scale[256:] == q.scale[256])
    assert not np.all(q.scale[0] == q.scale[128])
    assert np.all(np.abs(dequantize(q) - w) <= q.scale / 2 + 1e-6)


def test_error_metrics_known_values():
    exact = np.array([1.0, -2.0, 3.0])
    m = error_metrics(exact * (1 + 1e-3), exact)
    assert math.isclose(m.rel_error, 1e-3, rel_tol=1e-6)
    assert math.isclose(m.snr_db, 60.0, rel_tol=1e-6)
    assert math.isclose(m.max_abs_error, 3e-3, rel_tol=1e-6)
    same = error_metrics(exact, exact)
    assert same.snr_db == math.inf
    assert same.rel_error == 0.0


def test_quality_ordering_of_formats(rng):
    x = rng.standard_normal((64, 256)).astype(np.float32)
    snr = {f: error_metrics(fake_quantize(x, f, axis=0), x).snr_db
           for f in ("fp16", "bf16", "int8", "fp8_e4m3", "fp8_e5m2", "int4")}  # fmt: skip
    assert snr["fp16"] > snr["bf16"] > snr["fp8_e4m3"] > snr["fp8_e5m2"]
    assert snr["int8"] > snr["int4"]


def test_bad_format_and_shapes_raise():
    with pytest.raises(ExecutionError, match="unknown format"):
        quantize(np.ones(3), "int2")
    with pytest.raises(ExecutionError, match="shapes differ"):
        error_metrics(np.ones(2), np.ones(3))
    with pytest.raises(ExecutionError, match="group_size"):
        quantize(np.ones(3), "int4", group_size=0)
