"""The adapter runs mapper kernels as mapped and matches the float64 reference."""

import dataclasses

import numpy as np
import pytest

from workbench.execution import ExecutionError
from workbench.execution import reference as ref
from workbench.execution.measure import Measurement, measure
from workbench.execution.run import execute, make_inputs
from workbench.hw import load_hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.options import MapOptions

F = "fp32"
GRAPH = Graph(
    name="small",
    ops=(
        O.Linear(
            name="fc",
            inputs=("x",),
            tokens=(37,),
            in_features=70,
            out_features=50,
            bias=True,
            dtype=F,
        ),
        O.Elementwise(name="act", inputs=("fc",), op="gelu", shape=(37, 50), dtype=F),
        O.Elementwise(name="res", inputs=("act", "r"), op="add", shape=(37, 50), dtype=F),
        O.RMSNorm(name="norm", inputs=("res",), shape=(37, 50), dtype=F),
        O.Conv2d(
            name="conv",
            inputs=("img",),
            batch=2,
            in_channels=6,
            height=9,
            width=9,
            out_channels=8,
            kernel_h=3,
            kernel_w=3,
            stride=2,
            padding=1,
            dtype=F,
            layout="NCHW",
        ),
        O.Attention(
            name="att",
            inputs=("q", "k", "v"),
            batch=1,
            heads=4,
            kv_heads=2,
            q_len=20,
            kv_len=20,
            head_dim=16,
            dtype=F,
        ),
    ),
)


@pytest.fixture(scope="module")
def mapping():
    return map_model(GRAPH, load_hardware("teaching"), MapOptions(dtype=F, layout="NHWC"))


def _run(mapping, name):
    km = mapping.kernel(name)
    inputs = make_inputs(km.kernel, 0, "numpy", graph=GRAPH)
    return km, inputs, execute(km, inputs, graph=GRAPH, backend="numpy")


def test_gemm_with_fused_epilogue_matches_reference(mapping):
    km, inp, res = _run(mapping, "fc")
    assert km.kernel.ops == ("fc", "act", "res")
    want = ref.gemm_ref(inp["a"], inp["b"], epilogue=("bias", "gelu"), bias=inp["fc.bias"])
    np.testing.assert_allclose(res.output, want + inp["r"], atol=1e-4, rtol=1e-4)
    assert res.tile == km.tiling.shape


def test_conv_nchw_runs_the_inserted_transform(mapping):
    names = [k.kernel.name for k in mapping.kernels]
    assert "conv.to_nhwc" in names
    _, inp, res = _run(mapping, "conv")
    want = ref.conv2d_ref(
        inp["x"].transpose(0, 2, 3, 1), inp["w"], stride=(2, 2), padding=(1, 1)
    ).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(res.output, want, atol=1e-4)
    assert any("NCHW -> NHWC" in n for n in res.notes)


def test_fused_attention_matches_reference(mapping):
    _, inp, res = _run(mapping, "att")
    want = ref.attention_ref(inp["q"], inp["k"], inp["v"], causal=True)
    np.testing.assert_allclose(res.output, want, atol=1e-4)


def test_rmsnorm_matches_reference(mapping):
    _, inp, res = _run(mapping, "norm")
    np.testing.assert_allclose(res.output, ref.rmsnorm_ref(inp["x"], inp["gamma"]), atol=1e-4)


def test_unfused_attention_chain_matches_reference():
    g = Graph(name="a", ops=(GRAPH.ops[-1],))
    mm = map_model(
        g, load_hardware("teaching"), MapOptions(dtype=F, disabled_fusion=("flash_attention",))
    )
    names = [k.kernel.name for k in mm.kernels]
    assert names == ["att.qk", "att.softmax", "att.pv"]
    q = np.random.default_rng(1).standard_normal((1, 4, 20, 16)).astype(np.float32)
    k = np.random.default_rng(2).standard_normal((1, 4, 20, 16)).astype(np.float32)
    v = np.random.default_rng(3).standard_normal((1, 4, 20, 16)).astype(np.float32)
    s = execute(
        mm.kernels[0],
        {"a": q.reshape(4, 20, 16), "b": k.reshape(4, 20, 16).transpose(0, 2, 1)},
        graph=g,
        backend="numpy",
    ).output
    p = execute(mm.kernels[1], {"x": s}, graph=g, backend="numpy").output
    o = execute(
        mm.kernels[2],
        {"a": p.reshape(4, 20, 20), "b": v.reshape(4, 20, 16)},
        graph=g,
        backend="numpy",
    ).output
    np.testing.assert_allclose(
        o.reshape(1, 4, 20, 16), ref.attention_ref(q, k, v, causal=True), atol=1e-4
    )


def test_split_k_and_raster_are_honoured(mapping):
    km = mapping.kernel("fc")
    t = dataclasses.replace(km.tiling, tile_m=16, tile_n=8, tile_k=16, split_k=2, raster="nm")
    inp = make_inputs(km.kernel, 0, "numpy", graph=GRAPH)
    a = execute((km.kernel, km.tiling), inp, graph=GRAPH, backend="numpy").output
    b = execute((km.kernel, t), inp, graph=GRAPH, backend="numpy")
    np.testing.assert_allclose(a, b.output, atol=1e-4)
    assert "split-K 2" in b.method
    assert "raster nm" in b.method


def test_collective_is_refused_with_a_reason(mapping):
    km = mapping.kernel("fc")
    coll = dataclasses.replace(km.kernel, kind="collective", gemm=None)
    with pytest.raises(ExecutionError, match="between chips"):
        execute((coll, km.tiling), backend="numpy")


def test_conv_without_graph_says_why(mapping):
    km = mapping.kernel("conv")
    with pytest.raises(ExecutionError, match="needs the graph"):
        execute(km, backend="numpy")


def test_bad_item_is_refused():
    with pytest.raises(ExecutionError, match="KernelMapping"):
        execute("fc", backend="numpy")


def test_measure_summarises_repeats(mapping):
    km = mapping.kernel("norm")
    m = measure(km.kernel, km.tiling, backend="numpy", graph=GRAPH, warmup=0, repeats=3)
    assert len(m.samples) == 3
    assert m.p10_s <= m.median_s <= m.p90_s
    assert Measurement.of([1.0, 2.0, 3.0]).median_s == 2.0
    with pytest.raises(ExecutionError):
        measure(km.kernel, km.tiling, backend="numpy", graph=GRAPH, repeats=0)
