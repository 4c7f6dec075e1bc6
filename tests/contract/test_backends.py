"""Every execution kernel on every backend against its float64 reference."""

import warnings

import numpy as np
import pytest

from workbench import execution as ex
from workbench.execution import reference as ref


def _cupy_ready() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ex.get_backend("cupy").is_gpu


BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param(
        "cupy",
        id="cupy",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not _cupy_ready(), reason="needs CuPy and a CUDA device"),
        ],
    ),
]

RNG = np.random.default_rng(7)
A = RNG.standard_normal((45, 70)).astype(np.float32)
B = RNG.standard_normal((70, 33)).astype(np.float32)
BIAS = RNG.standard_normal(33).astype(np.float32)
X4 = RNG.standard_normal((2, 9, 9, 6)).astype(np.float32)
W4 = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32)
Q = RNG.standard_normal((1, 4, 20, 16)).astype(np.float32)
KV = RNG.standard_normal((1, 2, 30, 16)).astype(np.float32)
ROWS = RNG.standard_normal((13, 50)).astype(np.float32)


def _cases(xp):
    a, b, bias = xp.asarray(A), xp.asarray(B), xp.asarray(BIAS)
    x4, w4, q, kv, rows = (xp.asarray(t) for t in (X4, W4, Q, KV, ROWS))
    return {
        "gemm": (
            lambda bk: ex.gemm(a, b, tile_m=16, tile_n=8, tile_k=16, split_k=2,
                               epilogue=("bias", "gelu"), bias=bias, backend=bk),
            ref.gemm_ref(A, B, epilogue=("bias", "gelu"), bias=BIAS),
        ),
        "conv2d_nchw": (
            lambda bk: ex.conv2d(xp.ascontiguousarray(x4.transpose(0, 3, 1, 2)), w4, stride=2,
                                 padding=1, groups=2, layout="nchw", tile_m=16, tile_n=2,
                                 tile_k=8, backend=bk),
            ref.conv2d_ref(X4, W4, stride=(2, 2), padding=(1, 1), groups=2).transpose(0, 3, 1, 2),
        ),
        "attention_fused": (
            lambda bk: ex.attention_fused(q, kv, kv, causal=True, q_tile=8, kv_tile=8, backend=bk),
            ref.attention_ref(Q, KV, KV, causal=True),
        ),
        "attention_unfused": (
            lambda bk: ex.attention_unfused(q, kv, kv, causal=True, backend=bk),
            ref.attention_ref(Q, KV, KV, causal=True),
        ),
        "softmax": (lambda bk: ex.softmax(rows, col_tile=16, backend=bk), ref.softmax_ref(ROWS)),
        "layernorm": (lambda bk: ex.layernorm(rows, col_tile=16, backend=bk),
                      ref.layernorm_ref(ROWS)),
        "rmsnorm": (lambda bk: ex.rmsnorm(rows, col_tile=16, backend=bk), ref.rmsnorm_ref(ROWS)),
        "reduce_mean": (lambda bk: ex.reduce(rows, "mean", backend=bk),
                        ref.reduce_ref(ROWS, "mean")),
        "elementwise": (lambda bk: ex.elementwise_chain(rows, ("silu", "tanh"), tile=64,
                                                        backend=bk),
                        ref.elementwise_ref(ROWS, ("silu", "tanh"))),
    }  # fmt: skip


OPS = sorted(_cases(np))


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("op", OPS)
def test_op_matches_reference(name, op):
    bk = ex.get_backend(name)
    run, want = _cases(bk.xp)[op]
    got = run(bk)
    assert type(got).__module__.split(".")[0] == bk.xp.__name__
    np.testing.assert_allclose(ex.to_numpy(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", BACKENDS)
def test_quantize_round_trip(name):
    bk = ex.get_backend(name)
    x = bk.xp.asarray(ROWS)
    for fmt, bound in (("bf16", 2.0**-8), ("fp16", 2.0**-11)):
        err = ex.error_metrics(ex.fake_quantize(x, fmt, xp=bk.xp), ROWS)
        assert err.rel_error <= bound
    q = ex.quantize(x, "int8", axis=0, xp=bk.xp)
    assert float(abs(ex.to_numpy(ex.dequantize(q)) - ROWS).max()) <= float(q.scale.max()) / 2
