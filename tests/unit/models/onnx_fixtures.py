"""Small ONNX models built in-process with onnx.helper (no downloads)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _init(name: str, shape: tuple[int, ...], dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def _model(nodes, inputs, outputs, inits, name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def mlp_gemm() -> onnx.ModelProto:
    """x[N,784] -> Gemm(784x256)+bias -> Relu -> Dropout -> Gemm(256x10, transB) -> Softmax."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1"),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Dropout", ["a1"], ["d1"], name="drop"),
        helper.make_node("Gemm", ["d1", "w2", "b2"], ["h2"], name="fc2", transB=1),
        helper.make_node("Softmax", ["h2"], ["probs"], name="softmax", axis=-1),
    ]
    inits = [
        _init("w1", (784, 256)),
        _init("b1", (256,)),
        _init("w2", (10, 256)),
        _init("b2", (10,)),
    ]
    return _model(nodes, [x], [y], inits, "mlp")


def tiny_conv() -> onnx.ModelProto:
    """x[1,3,32,32] -> Conv s2, BN, Relu, dilated depthwise, MaxPool, GAP, Flatten, Gemm."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])
    nodes = [
        helper.make_node(
            "Conv", ["x", "cw", "cb"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]
        ),
        helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node(
            "Conv", ["r1", "dw"], ["c2"], name="dw", pads=[2, 2, 2, 2], dilations=[2, 2], group=8
        ),
        helper.make_node(
            "MaxPool", ["c2"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("GlobalAveragePool", ["p1"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["logits"], name="fc"),
    ]
    inits = [
        _init("cw", (8, 3, 3, 3)), _init("cb", (8,)),
        _init("g", (8,)), _init("b", (8,)), _init("m", (8,)), _init("v", (8,)),
        _init("dw", (8, 1, 3, 3)), _init("fw", (8, 5)), _init("fb", (5,)),
    ]  # fmt: skip
    return _model(nodes, [x], [y], inits, "tinyconv")


def tiny_attention(b: int = 2, h: int = 4, s: int = 16, d: int = 8) -> onnx.ModelProto:
    """q,k,v [b,h,s,d]: softmax(q @ k^T * scale) @ v, plus ReduceMean over seq (keepdims)."""
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT16, [b, h, s, d])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT16, [b, h, s, d])
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT16, [b, h, s, d])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT16, [b, h, s, d])
    mean = helper.make_tensor_value_info("mean", TensorProto.FLOAT16, [b, h, 1, d])
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"], name="pv"),
        helper.make_node("ReduceMean", ["out"], ["mean"], name="mean", axes=[2], keepdims=1),
    ]
    inits = [numpy_helper.from_array(np.array(0.125, dtype=np.float16), "scale")]
    return _model(nodes, [q, k, v], [out, mean], inits, "attn")


def with_unsupported() -> onnx.ModelProto:
    """Relu -> Cos (unsupported) -> Relu, and NonZero (unsupported) on the side."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    nz = helper.make_tensor_value_info("nz", TensorProto.INT64, [2, None])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Cos", ["r"], ["c"], name="cosine"),
        helper.make_node("Relu", ["c"], ["y"], name="relu2"),
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
    ]
    return _model(nodes, [x], [y, nz], [], "bad")
