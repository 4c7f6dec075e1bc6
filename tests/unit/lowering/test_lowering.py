import pytest

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.ir import Elementwise, Graph, Linear, RMSNorm
from workbench.lowering import lower
from workbench.models import build_graph
from workbench.options import FUSION_RULES, MapOptions, TileOverride


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


def _names(kernels):
    return [k.name for k in kernels]


def test_epilogue_fusion_folds_bias_activation_and_residual(h100):
    ops = (
        Linear(
            name="fc", inputs=("x",), tokens=(64,), in_features=256, out_features=256, bias=True
        ),
        Elementwise(name="act", inputs=("fc",), op="gelu", shape=(64, 256)),
        Elementwise(name="res", inputs=("act", "x"), op="add", shape=(64, 256)),
    )
    kernels = lower(Graph(name="g", ops=ops), h100, MapOptions())
    assert len(kernels) == 1
    k = kernels[0]
    assert k.ops == ("fc", "act", "res")
    assert k.fusion == ("gemm_epilogue",)
    # two intermediates (fc, act) not written and re-read: 2 x 2 x 64*256*2 bytes
    assert k.saved_bytes == 2 * 2 * 64 * 256 * 2
    unfused = lower(Graph(name="g", ops=ops), h100, MapOptions(disabled_fusion=("gemm_epilogue",)))
    assert _names(unfused) == ["fc", "act"]  # the elementwise chain still fuses act + res
    assert unfused[1].fusion == ("elementwise_chain",)
    none = lower(
        Graph(name="g", ops=ops),
        h100,
        MapOptions(disabled_fusion=("gemm_epilogue", "elementwise_chain")),
    )
    assert _names(none) == ["fc", "act", "res"]


def test_no_fusion_when_the_intermediate_has_two_consumers(h100):
    ops = (
        Linear(name="fc", inputs=("x",), tokens=(8,), in_features=16, out_features=16),
        Elementwise(name="a", inputs=("fc",), op="relu", shape=(8, 16)),
        Elementwise(name="b", inputs=("fc",), op="silu", shape=(8, 16)),
    )
    assert len(lower(Graph(name="g", ops=ops), h100, MapOptions())) == 3


def test_row_fusion_that_overflows_sram_is_refused_with_reason():
    tiny = load_hardware("eyeriss")
    cols = 64 * 1024
    ops = (
        RMSNorm(name="n", inputs=("x",), shape=(4, cols)),
        Elementwise(name="s", inputs=("n",), op="scale", shape=(4, cols)),
    )
    kernels = lower(Graph(name="g", ops=ops), tiny, MapOptions())
    assert len(kernels) == 2
    assert any("refused" in note for note in kernels[0].notes)


def test_flash_attention_on_and_off(h100):
    g = build_graph("gpt2", seq=128)
    fused = lower(g, h100, MapOptions())
    assert any(k.kind == "attention" and "flash_attention" in k.fusion for k in fused)
    unfused = lower(g, h100, MapOptions(disabled_fusion=("flash_attention",)))
    names = _names(unfused)
    assert "layers.0.attn.sdpa.qk" in names
    assert "layers.0.attn.sdpa.softmax" in names
    assert "layers.0.attn.sdpa.pv" in names


def test_layout_transform_inserted_once_with_propagation(h100):
    g = build_graph("resnet50")
    ks = lower(g, h100, MapOptions())
    assert sum(k.kind == "layout" for k in ks) == 1
    assert all(k.layout == "NHWC" for k in ks if k.kind == "conv")
    every = lower(g, h100, MapOptions(layout_propagation=False, disabled_fusion=("layout_fold",)))
    convs = sum(k.kind == "conv" for k in every)
    assert sum(k.kind == "layout" for k in every) == 2 * convs


def test_nchw_on_tensor_cores_pays_the_librarys_internal_transposes(h100):
    # Tensor-core convolutions run channels-last; cuDNN converts an NCHW input to NHWC and the
    # output back (NVIDIA, Convolutional Layers User's Guide), so NCHW is never free there.
    ks = lower(build_graph("resnet50"), h100, MapOptions(layout="NCHW"))
    convs = [k for k in ks if k.kind == "conv" and k.engine == "matrix"]
    assert sum(k.kind == "layout" for k in ks) >= 2 * len(convs)
    assert all("internally" in k.notes[-1] for k in convs)


def test_an_engine_that_wants_nchw_needs_no_transform(h100):
    me = h100.matrix_engine.model_copy(update={"preferred_layout": "NCHW"})
    nchw = h100.model_copy(update={"matrix_engine": me})
    ks = lower(build_graph("resnet50"), nchw, MapOptions(layout="NCHW"))
    assert not any(k.kind == "layout" for k in ks)


def test_a_strided_one_by_one_conv_reads_only_the_pixels_it_samples(h100):
    # ResNet's downsample is a 1 x 1 conv at stride 2: in NHWC it reads one pixel in four (each
    # pixel's channels contiguous); an engine running NCHW reads every other row whole (the
    # skipped elements share the sampled ones' 32-byte sectors).
    g = build_graph("resnet50", batch=2)
    op = g.op("layer2.0.downsample.conv")
    whole = op.input_tensors()[0].nbytes
    plain = next(o for o in g.ops if o.name == "layer2.0.conv1.conv")  # 1 x 1, stride 1
    me = h100.matrix_engine.model_copy(update={"preferred_layout": "NCHW"})
    nchw = h100.model_copy(update={"matrix_engine": me})
    for hw, options, share in ((h100, MapOptions(), 0.25), (nchw, MapOptions(layout="NCHW"), 0.5)):
        ks = {k.name: k for k in lower(g, hw, options)}
        k = ks["layer2.0.downsample.conv"]
        assert "layer2.0.add" in k.ops  # the block's residual add, fused: it reads the residual
        weights = sum(t.nbytes for n in k.ops for t in g.op(n).weight_tensors())  # conv, BN
        residual = op.output_tensor().nbytes
        assert k.bytes_read == pytest.approx(share * whole + weights + residual, abs=2)
        assert ks[plain.name].bytes_read >= plain.input_tensors()[0].nbytes  # reads it all


def test_dtype_override_by_glob(h100):
    g = build_graph("gpt2", seq=64)
    ks = lower(g, h100, MapOptions(dtype_overrides=(("*.attn.sdpa", "fp32"),)))
    sdpa = next(k for k in ks if k.name == "layers.0.attn.sdpa")
    assert sdpa.dtype == "fp32"
    assert sdpa.engine == "vector"  # H100 tensor cores have no plain fp32


def test_barrier_per_layer(h100):
    g = build_graph("gpt2", seq=64)
    ks = lower(g, h100, MapOptions(barrier_per_layer=True))
    assert sum(k.barriers for k in ks) >= 12  # one per transformer block at least


def test_options_validation():
    with pytest.raises(WorkbenchError, match="unknown fusion rule"):
        MapOptions(disabled_fusion=("nope",))
    with pytest.raises(WorkbenchError, match="unknown dtype"):
        MapOptions(dtype="fp7")
    with pytest.raises(WorkbenchError, match="launch"):
        MapOptions(launch="sometimes")
    with pytest.raises(WorkbenchError, match="MxNxK"):
        TileOverride.parse("q_proj=12x")
    assert TileOverride.parse("*q=64x32x16").matches("layers.0.q")
    assert set(FUSION_RULES) >= {"gemm_epilogue", "flash_attention"}
