import onnx
import onnx_fixtures as fx
import pytest

from workbench.errors import IngestError
from workbench.ir import Conv2d, Elementwise, Linear, MatMul, Reduce, Reshape, Softmax, Transpose
from workbench.models import OnnxImport, from_onnx


def test_mlp_gemm_maps_to_linear_with_bias_and_elides_dropout():
    g = from_onnx(fx.mlp_gemm(), batch=32)
    assert [(op.name, op.kind) for op in g.ops] == [
        ("h1", "Linear"), ("a1", "Elementwise"), ("h2", "Linear"), ("probs", "Softmax"),
    ]  # fmt: skip
    fc2 = g.op("h2")
    assert isinstance(fc2, Linear)
    assert (fc2.tokens, fc2.in_features, fc2.out_features, fc2.bias) == ((32,), 256, 10, True)
    assert g.op("h2").inputs == ("a1",)  # Dropout elided by renaming the edge
    assert g.op("h1").dtype == "fp32"
    assert g.params == 784 * 256 + 256 + 256 * 10 + 10
    assert g.matmul_flops == 2 * 32 * (784 * 256 + 256 * 10)
    # bias adds + relu + softmax(5 per element)
    assert g.flops - g.matmul_flops == 32 * 256 + 32 * 10 + 32 * 256 + 5 * 32 * 10


def test_symbolic_batch_defaults_to_one(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(fx.mlp_gemm(), path)
    g = from_onnx(path)
    assert g.op("h1").tokens == (1,)
    assert g.meta_dict()["source"] == str(path)


def test_tiny_conv_net():
    g = from_onnx(fx.tiny_conv())
    c1, dw = g.op("c1"), g.op("c2")
    assert isinstance(c1, Conv2d)
    assert (c1.stride, c1.padding, c1.bias, c1.output_shape()) == (2, 1, True, (1, 8, 16, 16))
    assert (dw.groups, dw.dilation, dw.padding, dw.output_shape()) == (8, 2, 2, (1, 8, 16, 16))
    bn = g.op("bn1")
    assert isinstance(bn, Elementwise)
    assert (bn.op, bn.channel_axis, bn.params) == ("affine", 1, 16)
    assert g.op("p1").output_shape() == (1, 8, 8, 8)
    assert g.op("gap").op == "global_avg"
    assert isinstance(g.op("flat"), Reshape)
    assert g.op("flat").bytes_read == 0
    assert g.op("logits").tokens == (1,)
    assert c1.macs == 16 * 16 * 8 * 3 * 9
    assert dw.macs == 16 * 16 * 8 * 9
    assert g.params == (8 * 27 + 8) + 16 + 8 * 9 + (8 * 5 + 5)


def test_attention_like_matmuls_with_views():
    g = from_onnx(fx.tiny_attention(b=2, h=4, s=16, d=8))
    assert isinstance(g.op("kt"), Transpose)
    qk, pv = g.op("scores.op"), g.op("out.op")
    assert isinstance(qk, MatMul)
    assert (qk.batch, qk.m, qk.n, qk.k, qk.layer_type) == (8, 16, 16, 8, "attention")
    assert (pv.batch, pv.m, pv.n, pv.k) == (8, 16, 8, 16)
    assert g.op("scores").output_shape() == (2, 4, 16, 16)  # view back to the ONNX shape
    assert g.op("scaled").op == "scale"
    assert isinstance(g.op("p"), Softmax)
    assert g.op("p").dtype == "fp16"
    assert isinstance(g.op("mean.op"), Reduce)
    assert g.op("mean").output_shape() == (2, 4, 1, 8)
    assert g.matmul_flops == 2 * 2 * (8 * 16 * 16 * 8)


def test_unsupported_ops_reported_in_one_line():
    with pytest.raises(IngestError) as info:
        from_onnx(fx.with_unsupported())
    msg = str(info.value)
    assert "\n" not in msg
    assert "Cos (node 'cosine')" in msg
    assert "NonZero (node 'nonzero')" in msg


def test_lenient_import_returns_report():
    result = from_onnx(fx.with_unsupported(), strict=False)
    assert isinstance(result, OnnxImport)
    assert result.unsupported == ("Cos (node 'cosine')", "NonZero (node 'nonzero')")
    assert [op.name for op in result.graph.ops] == ["r", "y"]
    assert "c" in {t.name for t in result.graph.inputs}  # skipped node's output is an input


def test_unreadable_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all \xff\xfe")
    with pytest.raises(IngestError, match=r"bad\.onnx: not a readable ONNX model"):
        from_onnx(bad)
