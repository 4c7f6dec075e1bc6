import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.execution import ExecutionError, Trace, conv2d
from workbench.execution.reference import conv2d_ref
from workbench.ir.ops import Conv2d

from .conftest import FAST


@st.composite
def conv_cases(draw):
    groups = draw(st.sampled_from([1, 2, "dw"]))
    cg = draw(st.integers(1, 4))
    c = cg * (2 if groups == 2 else 1) if groups != "dw" else draw(st.integers(1, 6))
    g = c if groups == "dw" else groups
    cg = c // g
    k = g * draw(st.integers(1, 3))
    r, s = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = draw(st.integers(1, 2))
    dil = draw(st.integers(1, 2))
    pad = draw(st.integers(0, 2))
    h = draw(st.integers(dil * (r - 1) + 1, 9))
    w = draw(st.integers(dil * (s - 1) + 1, 9))
    n, seed = draw(st.integers(1, 2)), draw(st.integers(0, 999))
    return {"n": n, "c": c, "k": k, "g": g, "r": r, "s": s, "h": h, "w": w,
            "stride": stride, "dil": dil, "pad": pad, "seed": seed}  # fmt: skip


def _run(case, layout, transform, tiles):
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((case["n"], case["h"], case["w"], case["c"])).astype(np.float32)
    w = rng.standard_normal((case["k"], case["c"] // case["g"], case["r"], case["s"]))
    w = w.astype(np.float32)
    xin = x if layout == "nhwc" else np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    kw = {"stride": case["stride"], "padding": case["pad"], "dilation": case["dil"],
          "groups": case["g"]}  # fmt: skip
    got = conv2d(xin, w, layout=layout, layout_transform=transform, tile_m=tiles[0],
                 tile_n=tiles[1], tile_k=tiles[2], backend="numpy", **kw)  # fmt: skip
    ref = conv2d_ref(x, w, stride=(case["stride"],) * 2, padding=(case["pad"],) * 2,
                     dilation=(case["dil"],) * 2, groups=case["g"])  # fmt: skip
    return got if layout == "nhwc" else got.transpose(0, 2, 3, 1), ref


@FAST
@given(
    case=conv_cases(), tiles=st.tuples(st.integers(1, 40), st.integers(1, 5), st.integers(1, 20))
)
def test_conv_all_layouts_match_reference(case, tiles):
    results = [_run(case, lay, tr, tiles) for lay, tr in (("nhwc", False), ("nchw", False),
                                                          ("nchw", True))]  # fmt: skip
    for got, ref in results:
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "case",
    [
        {"n": 1, "c": 8, "k": 8, "g": 8, "r": 3, "s": 3, "h": 9, "w": 9, "stride": 2, "dil": 1,
         "pad": 1, "seed": 0},  # depthwise, stride 2
        {"n": 2, "c": 4, "k": 6, "g": 1, "r": 3, "s": 3, "h": 10, "w": 8, "stride": 1, "dil": 2,
         "pad": 2, "seed": 1},  # dilation 2
    ],
)  # fmt: skip
def test_named_cases(case):
    for lay, tr in (("nhwc", False), ("nchw", False), ("nchw", True)):
        got, ref = _run(case, lay, tr, (7, 3, 5))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_conv_bias_relu_epilogue(rng):
    x = rng.standard_normal((1, 5, 5, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    got = conv2d(x, w, padding=1, epilogue=("bias", "relu"), bias=bias, tile_m=8, tile_n=2,
                 tile_k=9, backend="numpy")  # fmt: skip
    ref = np.maximum(conv2d_ref(x, w, padding=(1, 1)) + bias, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_conv_trace_flops_match_op():
    n, c, h, w, k, g = 2, 6, 7, 7, 6, 3
    x = np.ones((n, h, w, c), np.float32)
    wt = np.ones((k, c // g, 3, 3), np.float32)
    tr = Trace()
    conv2d(x, wt, stride=2, padding=1, groups=g, tile_m=10, tile_n=1, tile_k=4, trace=tr,
           backend="numpy")  # fmt: skip
    op = Conv2d(name="c", inputs=("x",), batch=n, in_channels=c, height=h, width=w,
                out_channels=k, kernel_h=3, kernel_w=3, stride=2, padding=1, groups=g)  # fmt: skip
    m = n * 4 * 4
    assert len(tr) == math.ceil(m / 10) * (k // g)
    assert tr.total_flops == op.matmul_flops


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"groups": 4}, "groups"), ({"layout": "chwn"}, "layout"), ({"stride": 0}, "positive")],
)
def test_conv_bad_input(kwargs, match):
    with pytest.raises(ExecutionError, match=match):
        conv2d(np.ones((1, 4, 4, 6)), np.ones((6, 6, 1, 1)), backend="numpy", **kwargs)


def test_conv_kernel_larger_than_input_raises():
    with pytest.raises(ExecutionError, match="empty"):
        conv2d(np.ones((1, 2, 2, 1)), np.ones((1, 1, 3, 3)), backend="numpy")
