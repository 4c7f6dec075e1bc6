import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.execution import ExecutionError, Trace, gemm
from workbench.execution.gemm import OUTPUT_FORMAT, k_slices, output_tiles, prepare_gemm_inputs
from workbench.execution.reference import gemm_ref
from workbench.ir.ops import MatMul

from .conftest import FAST
from .helpers import gemm_bound

dims = st.integers(1, 40)
tiles = st.integers(1, 48)


@FAST
@given(
    m=dims, n=dims, k=dims, tm=tiles, tn=tiles, tk=tiles,
    split=st.integers(1, 4), order=st.sampled_from(["mn", "nm"]),
    dtype=st.sampled_from(["fp32", "bf16", "fp16"]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_tiled_gemm_matches_reference(m, n, k, tm, tn, tk, split, order, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = gemm(a, b, tile_m=tm, tile_n=tn, tile_k=tk, split_k=split, loop_order=order,
               dtype=dtype, backend="numpy")  # fmt: skip
    a_q, b_q = prepare_gemm_inputs(a, b, dtype, np)
    ref = gemm_ref(a_q, b_q)
    assert got.shape == (m, n)
    assert np.all(np.abs(got - ref) <= gemm_bound(a_q.astype(float), b_q.astype(float), ref,
                                                  OUTPUT_FORMAT[dtype]))  # fmt: skip


@pytest.mark.parametrize("dtype", ["tf32", "fp8_e4m3", "fp8_e5m2", "int8", "int4"])
def test_low_precision_runs_on_quantized_inputs(dtype, rng):
    a = rng.standard_normal((33, 140)).astype(np.float32)
    b = rng.standard_normal((140, 17)).astype(np.float32)
    got = gemm(a, b, tile_m=16, tile_n=8, tile_k=32, split_k=2, dtype=dtype, backend="numpy")
    a_q, b_q = prepare_gemm_inputs(a, b, dtype, np)
    ref_q = gemm_ref(a_q, b_q)
    bound = gemm_bound(a_q.astype(float), b_q.astype(float), ref_q, OUTPUT_FORMAT[dtype])
    assert np.all(np.abs(got - ref_q) <= bound)
    # The quantization error itself is real (non-zero) and larger than fp32's.
    exact = gemm_ref(a, b)
    assert np.abs(got - exact).max() > np.abs(a @ b - exact).max()


@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
def test_epilogue_bias_activation_residual(act, rng):
    a = rng.standard_normal((19, 23)).astype(np.float32)
    b = rng.standard_normal((23, 11)).astype(np.float32)
    bias = rng.standard_normal(11).astype(np.float32)
    res = rng.standard_normal((19, 11)).astype(np.float32)
    ep = ("bias", act, "residual")
    got = gemm(a, b, tile_m=8, tile_n=4, tile_k=5, epilogue=ep, bias=bias, residual=res,
               backend="numpy")  # fmt: skip
    ref = gemm_ref(a, b, epilogue=ep, bias=bias, residual=res)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_quantize_epilogue_int8_static_and_dynamic(rng):
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    ref = gemm_ref(a, b)
    static = gemm(a, b, tile_m=4, tile_n=4, tile_k=8, epilogue=("quantize_int8",),
                  out_scale=0.1, backend="numpy")  # fmt: skip
    steps = static / 0.1
    np.testing.assert_allclose(steps, np.rint(steps), atol=1e-3)
    assert np.abs(steps).max() <= 127 + 1e-3
    dynamic = gemm(a, b, tile_m=4, tile_n=4, tile_k=8, epilogue=("quantize_fp8",), backend="numpy")
    assert np.abs(dynamic - ref).max() <= np.abs(ref).max() / 16 + 1e-6
    assert not np.allclose(dynamic, ref, rtol=0, atol=1e-7)


def test_raster_orders_cover_every_tile_once():
    seen_mn = [(i, j) for i, j, _, _ in output_tiles(10, 7, 3, 2, "mn")]
    seen_nm = [(i, j) for i, j, _, _ in output_tiles(10, 7, 3, 2, "nm")]
    assert seen_mn[:2] == [(0, 0), (0, 1)]
    assert seen_nm[:2] == [(0, 0), (1, 0)]
    assert sorted(seen_mn) == sorted(seen_nm)
    assert len(set(seen_mn)) == 4 * 4


@given(k=st.integers(1, 200), tk=st.integers(1, 64), split=st.integers(1, 8))
@FAST
def test_k_slices_partition_k_in_whole_steps(k, tk, split):
    sl = k_slices(k, tk, split)
    assert len(sl) == split
    assert sl[0][0] == 0
    assert sl[-1][1] == k
    for (_, e0), (s1, _) in itertools.pairwise(sl):
        assert e0 == s1
    assert all(s0 % tk == 0 for s0, e in sl if e > s0)


def test_trace_one_event_per_tile_and_flops_sum():
    m, n, k = 37, 29, 50
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    tr = Trace()
    gemm(a, b, tile_m=16, tile_n=8, tile_k=16, split_k=2, trace=tr, backend="numpy")
    op = MatMul(name="mm", inputs=("a", "b"), m=m, n=n, k=k)
    assert len(tr) == math.ceil(m / 16) * math.ceil(n / 8) * 2
    assert tr.total_flops == op.matmul_flops
    assert len({e.tile_index for e in tr}) == len(tr)
    assert all(e.elapsed_s >= 0 and e.bytes_touched > 0 and e.kernel == "gemm" for e in tr)
    starts = [e.start_s for e in tr]
    assert starts == sorted(starts)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tile_m": 0}, "positive"),
        ({"loop_order": "km"}, "loop_order"),
        ({"dtype": "fp64"}, "dtype"),
        ({"epilogue": ("bias",)}, "bias"),
        ({"epilogue": ("swish",)}, "swish"),
        ({"epilogue": ("quantize_int8", "relu")}, "last"),
    ],
)
def test_bad_input_raises(kwargs, match):
    args = {"tile_m": 4, "tile_n": 4, "tile_k": 4} | kwargs
    with pytest.raises(ExecutionError, match=match):
        gemm(np.ones((4, 4)), np.ones((4, 4)), backend="numpy", **args)


def test_shape_mismatch_raises():
    with pytest.raises(ExecutionError, match="A \\(M, K\\)"):
        gemm(np.ones((4, 3)), np.ones((4, 4)), tile_m=2, tile_n=2, tile_k=2, backend="numpy")
