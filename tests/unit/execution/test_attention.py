import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.execution import ExecutionError, Trace, attention_fused, attention_unfused
from workbench.execution.reference import attention_ref

from .conftest import FAST


def _qkv(rng, b, hq, hkv, lq, lk, d):
    q = rng.standard_normal((b, hq, lq, d)).astype(np.float32)
    k = rng.standard_normal((b, hkv, lk, d)).astype(np.float32)
    v = rng.standard_normal((b, hkv, lk, d)).astype(np.float32)
    return q, k, v


@FAST
@given(
    b=st.integers(1, 2), hkv=st.integers(1, 2), group=st.integers(1, 3), lq=st.integers(1, 24),
    extra=st.integers(0, 24), d=st.sampled_from([1, 4, 8, 16]), causal=st.booleans(),
    q_tile=st.integers(1, 16), kv_tile=st.integers(1, 16), seed=st.integers(0, 999),
)  # fmt: skip
def test_fused_equals_unfused_equals_reference(b, hkv, group, lq, extra, d, causal, q_tile,
                                               kv_tile, seed):  # fmt: skip
    q, k, v = _qkv(np.random.default_rng(seed), b, hkv * group, hkv, lq, lq + extra, d)
    ref = attention_ref(q, k, v, causal=causal)
    un = attention_unfused(q, k, v, causal=causal, backend="numpy")
    fu = attention_fused(q, k, v, causal=causal, q_tile=q_tile, kv_tile=kv_tile, backend="numpy")
    np.testing.assert_allclose(un, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fu, ref, rtol=1e-4, atol=1e-5)


def test_decode_single_query_long_kv(rng):
    q, k, v = _qkv(rng, 1, 8, 2, 1, 1000, 32)  # GQA 4:1, decode step
    ref = attention_ref(q, k, v, causal=True)
    np.testing.assert_allclose(attention_fused(q, k, v, causal=True, kv_tile=128), ref,
                               rtol=1e-4, atol=1e-5)  # fmt: skip
    # A decode query sits at the last position, so causal and non-causal agree.
    np.testing.assert_allclose(attention_ref(q, k, v), ref, rtol=1e-12)


def test_causal_mask_uses_kv_cache_offset(rng):
    q, k, v = _qkv(rng, 1, 1, 1, 2, 5, 4)
    out = attention_unfused(q, k, v, causal=True)
    # Query 0 sits at position 3 and sees keys 0..3 only.
    manual = attention_ref(q[:, :, :1], k[:, :, :4], v[:, :, :4])
    np.testing.assert_allclose(out[:, :, :1], manual, rtol=1e-5, atol=1e-6)


def test_mqa_heads_share_kv(rng):
    q, k, v = _qkv(rng, 1, 4, 1, 6, 6, 8)
    q[:, 1] = q[:, 0]
    out = attention_fused(q, k, v, q_tile=4, kv_tile=4)
    np.testing.assert_allclose(out[:, 0], out[:, 1], rtol=1e-6)


def test_fused_trace_skips_masked_tiles(rng):
    q, k, v = _qkv(rng, 1, 1, 1, 16, 16, 4)
    full, causal = Trace(), Trace()
    attention_fused(q, k, v, q_tile=4, kv_tile=4, trace=full)
    attention_fused(q, k, v, q_tile=4, kv_tile=4, causal=True, trace=causal)
    assert len(full) == 16
    assert len(causal) == 10  # lower triangle of 4x4 tiles, diagonal included
    assert full.total_flops == 4 * 16 * 16 * 4
    un = Trace()
    attention_unfused(q, k, v, trace=un)
    assert [e.kernel for e in un] == ["attention.scores", "attention.softmax", "attention.pv"]


def test_fused_peak_memory_is_tile_sized():
    rng = np.random.default_rng(0)
    q, k, v = _qkv(rng, 1, 1, 1, 1024, 1024, 16)

    def peak(fn):
        tracemalloc.start()
        fn()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    fused = peak(lambda: attention_fused(q, k, v, q_tile=64, kv_tile=64))
    unfused = peak(lambda: attention_unfused(q, k, v))
    assert unfused >= 1024 * 1024 * 4  # the score matrix exists
    assert fused < unfused / 4


@pytest.mark.parametrize(
    ("shapes", "kwargs", "match"),
    [
        (((1, 3, 4, 8), (1, 2, 4, 8)), {}, "Hq % Hkv"),
        (((1, 2, 5, 8), (1, 2, 4, 8)), {"causal": True}, "Lq <= Lkv"),
        (((1, 2, 4, 8), (1, 2, 4, 8)), {"q_tile": 0}, "positive"),
        (((2, 4, 8), (1, 2, 4, 8)), {}, "need q"),
    ],
)
def test_bad_input(shapes, kwargs, match):
    q = np.ones(shapes[0], np.float32)
    k = np.ones(shapes[1], np.float32)
    with pytest.raises(ExecutionError, match=re_escape(match)):
        attention_fused(q, k, k, **kwargs)


def re_escape(s):
    import re

    return re.escape(s)


def test_scale_argument(rng):
    q, k, v = _qkv(rng, 1, 2, 2, 5, 5, 8)
    ref = attention_ref(q, k, v, scale=0.5)
    np.testing.assert_allclose(attention_fused(q, k, v, scale=0.5, q_tile=2, kv_tile=3), ref,
                               rtol=1e-4, atol=1e-5)  # fmt: skip
    assert not np.allclose(ref, attention_ref(q, k, v), atol=1e-3)
    assert math.isclose(1 / math.sqrt(8), 0.3535533905932738)
