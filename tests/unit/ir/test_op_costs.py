"""Every op's FLOP, byte and parameter formula against hand-computed numbers."""

import pytest

from workbench.ir import (
    AllGather,
    AllReduce,
    Attention,
    Conv2d,
    Dequantize,
    Elementwise,
    Embedding,
    LayerNorm,
    Linear,
    MatMul,
    Pool,
    Quantize,
    Reduce,
    Reshape,
    RMSNorm,
    Slice,
    Softmax,
    Transpose,
)


def test_matmul():
    op = MatMul(name="mm", inputs=("a", "b"), batch=3, m=4, n=5, k=6, dtype="fp16")
    assert op.matmul_flops == 2 * 3 * 4 * 5 * 6 == 720
    assert op.vector_flops == 0
    assert op.bytes_read == (3 * 4 * 6 + 3 * 6 * 5) * 2 == 324
    assert op.bytes_written == 3 * 4 * 5 * 2 == 120
    assert op.params == 0


def test_linear_with_bias_and_int4_weight():
    op = Linear(
        name="fc", inputs=("x",), tokens=(2, 3), in_features=8, out_features=4, bias=True,
        weight_dtype="int4",
    )  # fmt: skip
    assert op.m == 6
    assert op.matmul_flops == 2 * 6 * 8 * 4 == 384
    assert op.vector_flops == 6 * 4 == 24  # bias add
    assert op.params == 8 * 4 + 4 == 36
    # x: 6*8 bf16 = 96 B; W: 32 int4 = 16 B; bias: 4 bf16 = 8 B
    assert op.bytes_read == 96 + 16 + 8
    assert op.bytes_written == 6 * 4 * 2
    tied = Linear(
        name="h", inputs=("x",), tokens=(1,), in_features=8, out_features=4, tied_weight=True
    )
    assert tied.params == 0
    assert tied.bytes_read == 8 * 2 + 32 * 2  # the shared weight is still read


@pytest.mark.parametrize(
    ("kw", "out_hw", "macs", "params"),
    [
        # dense 3x3, padded 1, stride 1: 8x8 out; 8*8 * 16 * 4*9
        ({"in_channels": 4, "out_channels": 16, "kernel_h": 3, "kernel_w": 3, "padding": 1},
         (8, 8), 8 * 8 * 16 * 4 * 9, 16 * 4 * 9),
        # strided 3x3, pad 1, stride 2: (8+2-3)//2+1 = 4
        ({"in_channels": 4, "out_channels": 16, "kernel_h": 3, "kernel_w": 3, "padding": 1,
          "stride": 2}, (4, 4), 4 * 4 * 16 * 4 * 9, 16 * 4 * 9),
        # dilated 3x3 dil 2, no pad: span 5 -> 8-5+1 = 4
        ({"in_channels": 4, "out_channels": 16, "kernel_h": 3, "kernel_w": 3, "dilation": 2},
         (4, 4), 4 * 4 * 16 * 4 * 9, 16 * 4 * 9),
        # depthwise 3x3 pad 1: each of 4 channels sees one input channel
        ({"in_channels": 4, "out_channels": 4, "kernel_h": 3, "kernel_w": 3, "padding": 1,
          "groups": 4}, (8, 8), 8 * 8 * 4 * 1 * 9, 4 * 1 * 9),
    ],
)  # fmt: skip
def test_conv2d(kw, out_hw, macs, params):
    op = Conv2d(name="c", inputs=("x",), batch=2, height=8, width=8, **kw)
    assert (op.out_h, op.out_w) == out_hw
    assert op.macs == 2 * macs
    assert op.matmul_flops == 4 * macs
    assert op.params == params
    x = 2 * kw["in_channels"] * 64 * 2
    assert op.bytes_read == x + params * 2
    assert op.bytes_written == 2 * kw["out_channels"] * out_hw[0] * out_hw[1] * 2


def test_conv2d_bias_nhwc():
    op = Conv2d(
        name="c", inputs=("x",), batch=1, in_channels=3, height=4, width=4, out_channels=2,
        kernel_h=1, kernel_w=1, bias=True, layout="NHWC",
    )  # fmt: skip
    assert op.output_shape() == (1, 4, 4, 2)
    assert op.vector_flops == 2 * 16
    assert op.params == 6 + 2


def test_attention_prefill_causal():
    op = Attention(name="a", inputs=("q", "k", "v"), batch=2, heads=4, kv_heads=4, q_len=8,
                   kv_len=8, head_dim=16, causal=True)  # fmt: skip
    pairs = 8 * 9 // 2  # 36 (query i sees i+1 keys)
    assert op.score_pairs == pairs
    assert op.matmul_flops == 4 * 2 * 4 * 16 * pairs  # QK^T and PV, 2 FLOPs per MAC
    assert op.vector_flops == 6 * 2 * 4 * pairs  # scale + softmax(5)
    assert op.bytes_read == 3 * 2 * 8 * 64 * 2
    assert op.bytes_written == 2 * 8 * 64 * 2


def test_attention_non_causal_and_gqa():
    op = Attention(name="a", inputs=("q", "k", "v"), batch=1, heads=8, kv_heads=2, q_len=4,
                   kv_len=4, head_dim=8, causal=False)  # fmt: skip
    assert op.score_pairs == 16
    assert op.matmul_flops == 4 * 8 * 8 * 16
    assert op.input_shapes() == ((1, 4, 64), (1, 4, 16), (1, 4, 16))
    # q 64 + k 16 + v 16 elements per token, bf16
    assert op.bytes_read == 4 * (64 + 16 + 16) * 2


def test_attention_decode_with_cache():
    op = Attention(name="a", inputs=("q", "k", "v"), batch=2, heads=4, kv_heads=2, q_len=1,
                   kv_len=101, head_dim=8, kv_cache=True, kv_dtype="fp8_e4m3")  # fmt: skip
    assert op.score_pairs == 101  # the new token sees the 100 cached + itself
    assert op.matmul_flops == 4 * 2 * 4 * 8 * 101
    (cache,) = op.weight_tensors()
    assert cache.shape == (2, 2, 100, 16)
    new = 2 * 1 * (32 + 16 + 16) * 2  # q, k, v of the new token, bf16
    assert op.bytes_read == new + 2 * 2 * 100 * 16  # + cache, 1 byte each
    assert op.bytes_written == 2 * 32 * 2 + 2 * 2 * 16  # output + appended k and v (fp8)


def test_softmax_norms():
    sm = Softmax(name="s", inputs=("x",), shape=(2, 3, 8))
    assert sm.vector_flops == 5 * 48
    assert sm.bytes_read == sm.bytes_written == 96
    ln = LayerNorm(name="l", inputs=("x",), shape=(2, 3, 8))
    assert ln.vector_flops == 8 * 48
    assert ln.params == 16
    assert ln.bytes_read == 96 + 16 * 2
    rms = RMSNorm(name="r", inputs=("x",), shape=(2, 3, 8), dtype="fp32")
    assert rms.vector_flops == 5 * 48
    assert rms.params == 8
    assert rms.bytes_read == 48 * 4 + 8 * 4


@pytest.mark.parametrize(
    ("kind", "per_elem", "n_in", "params"),
    [
        ("relu", 1, 1, 0), ("gelu", 8, 1, 0), ("silu", 4, 1, 0), ("rope", 3, 1, 0),
        ("add", 1, 2, 0), ("mul", 1, 2, 0), ("swiglu", 5, 2, 0), ("scale", 1, 1, 0),
        ("bias", 1, 1, 8), ("affine", 2, 1, 16),
    ],
)  # fmt: skip
def test_elementwise(kind, per_elem, n_in, params):
    ins = ("a", "b")[:n_in]
    op = Elementwise(name="e", inputs=ins, op=kind, shape=(4, 8))
    assert op.vector_flops == per_elem * 32
    assert op.params == params
    assert op.bytes_read == n_in * 64 + params * 2
    assert op.bytes_written == 64


def test_elementwise_channel_axis_nchw():
    op = Elementwise(name="bn", inputs=("x",), op="affine", shape=(1, 3, 4, 5), channel_axis=1)
    assert op.params == 6
    assert op.weight_tensors()[0].shape == (2, 3)


def test_reduce_embedding_pool_transpose():
    r = Reduce(name="r", inputs=("x",), shape=(2, 3, 4), axis=1, op="mean")
    assert r.output_shape() == (2, 4)
    assert r.vector_flops == 24
    e = Embedding(name="e", tokens=(2, 5), vocab=1000, dim=16)
    assert e.params == 16000
    assert e.bytes_read == 4 * 10 + 10 * 16 * 2  # int32 ids + gathered rows only
    assert e.bytes_written == 10 * 16 * 2
    p = Pool(name="p", inputs=("x",), batch=1, channels=2, height=8, width=8, kernel=3, stride=2,
             padding=1)  # fmt: skip
    assert p.out_hw == (4, 4)
    assert p.vector_flops == 2 * 16 * 9
    g = Pool(name="g", inputs=("x",), batch=1, channels=2, height=8, width=8, op="global_avg")
    assert g.output_shape() == (1, 2, 1, 1)
    assert g.vector_flops == 128
    t = Transpose(name="t", inputs=("x",), shape=(2, 3, 4), perm=(0, 2, 1))
    assert t.output_shape() == (2, 4, 3)
    assert t.flops == 0
    assert t.bytes_read == t.bytes_written == 48
    assert t.layer_type == "layout"


def test_quantize_dequantize():
    q = Quantize(name="q", inputs=("x",), shape=(4, 8), to="int8")
    assert q.output_dtype == "int8"
    assert q.vector_flops == 64
    assert q.bytes_read == 64
    assert q.bytes_written == 32
    d = Dequantize(name="d", inputs=("q",), shape=(4, 8), source="int4")
    assert d.input_dtypes() == ("int4",)
    assert d.bytes_read == 16
    assert d.bytes_written == 64


@pytest.mark.parametrize("chips", [2, 4, 8])
def test_all_reduce_link_bytes(chips):
    op = AllReduce(name="ar", inputs=("x",), shape=(4, 1024), chips=chips)
    nbytes = 4 * 1024 * 2
    assert op.link_bytes == 2 * (chips - 1) / chips * nbytes
    assert op.vector_flops == 4096 * (chips - 1) // chips
    assert op.layer_type == "collective"


def test_all_gather():
    op = AllGather(name="ag", inputs=("x",), shape=(4, 256), chips=4)
    assert op.output_shape() == (4, 1024)
    assert op.link_bytes == 3 / 4 * 4 * 1024 * 2


def test_views():
    r = Reshape(name="r", inputs=("x",), shape=(2, 3, 4), to=(6, 4))
    assert r.output_shape() == (6, 4)
    assert r.flops == r.bytes_read == r.bytes_written == 0
    s = Slice(name="s", inputs=("x",), shape=(2, 10, 4), axis=1, start=9, stop=10)
    assert s.output_shape() == (2, 1, 4)
    assert s.bytes_read == s.bytes_written == 16
    assert s.flops == 0
