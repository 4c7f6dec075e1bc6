"""ONNX import keeps the file's fixed dimensions and turns malformed graphs into one line."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from workbench.errors import IngestError
from workbench.ir import Linear, MatMul
from workbench.models import from_onnx


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _square_matmul(n: int, batch_dim) -> onnx.ModelProto:
    """x[batch, n, n] @ y[batch, n, n]: both operands are graph inputs."""
    node = helper.make_node("MatMul", ["x", "y"], ["z"], name="mm")
    return _model(
        [node], [_vi("x", [batch_dim, n, n]), _vi("y", [batch_dim, n, n])], [_vi("z", None)]
    )


def test_fixed_batch_is_kept_and_two_input_matmul_maps():
    # An 8192^3 MatMul exported at batch 1 stays 8192x8192x8192 (it was mapped as a GEMV).
    g = from_onnx(_square_matmul(8192, 1))
    (mm,) = [op for op in g.ops if isinstance(op, MatMul)]
    assert (mm.batch, mm.m, mm.n, mm.k) == (1, 8192, 8192, 8192)
    g8 = from_onnx(_square_matmul(64, 8), batch=2)
    (mm8,) = [op for op in g8.ops if isinstance(op, MatMul)]
    assert mm8.batch == 8  # --batch does not touch a fixed dimension
    assert "keeps its fixed batch 8" in g8.meta_dict()["batch_notes"]
    assert g8.meta_dict()["batch"] == 8


def test_symbolic_batch_is_set_and_override_is_reported():
    g = from_onnx(_square_matmul(64, "N"), batch=4)
    assert next(op for op in g.ops if isinstance(op, MatMul)).batch == 4
    assert "batch_notes" not in g.meta_dict()
    forced = from_onnx(_square_matmul(64, 8), batch=2, override_batch=True)
    assert next(op for op in forced.ops if isinstance(op, MatMul)).batch == 2
    assert "fixed batch 8 replaced by 2" in forced.meta_dict()["batch_notes"]


def test_fixed_leading_dim_of_a_linear_input_is_kept():
    w = onnx.numpy_helper.from_array(__import__("numpy").zeros((16, 4), "float32"), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["z"], name="fc")
    g = from_onnx(_model([node], [_vi("x", [8, 16])], [_vi("z", None)], [w]), batch=1)
    (fc,) = [op for op in g.ops if isinstance(op, Linear)]
    assert fc.tokens == (8,)


@pytest.mark.parametrize(
    ("nodes", "inputs", "needle"),
    [
        ([helper.make_node("MatMul", ["x"], ["z"], name="mm")], [_vi("x", [4, 4])], "needs 2"),
        (
            [helper.make_node("Relu", ["x"], [], name="r")],
            [_vi("x", [4, 4])],
            "Relu",
        ),
        (
            [helper.make_node("Conv", ["x", "w"], ["z"], name="c")],
            [_vi("x", [1, 3, 8]), _vi("w", [4, 3, 3])],
            "Conv",
        ),
    ],
    ids=["matmul-one-input", "node-without-output", "conv-on-3d"],
)
def test_malformed_nodes_are_one_line(nodes, inputs, needle):
    model = _model(nodes, inputs, [_vi("z", None)])
    with pytest.raises(IngestError) as info:
        from_onnx(model)
    text = str(info.value)
    assert needle in text
    assert "\n" not in text


def test_pipes_and_devices_are_refused_without_reading(tmp_path):
    import os

    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match="named pipe"):
        from_onnx(fifo)
    with pytest.raises(IngestError, match="character device"):
        from_onnx("/dev/zero")
