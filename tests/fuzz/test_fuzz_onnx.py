"""ONNX files built in-process with ``onnx.helper``, then mutated (issue 13).

Valid small models (MLP, attention-like MatMuls, a conv net) get one mutation: an input dropped,
an output removed, an op type swapped, a dimension changed, the file truncated, a hostile graph
or node name. The CLI maps each: finite, sane results (and escaped HTML), or one line and exit 2.
"""

from __future__ import annotations

import numpy as np
import onnx
from fuzz_contract import (
    HOSTILE_TEXT,
    assert_contract,
    assert_safe_html,
    assert_safe_markdown,
    assert_sane_mapping,
    fresh,
    read_json,
    run_cli,
)
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper


def _init(name, shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _model(nodes, inputs, outputs, inits=(), name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp(batch):
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["a"], name="relu"),
        helper.make_node("Gemm", ["a", "w2"], ["y"], name="fc2", transB=1),
        helper.make_node("Softmax", ["y"], ["p"], name="softmax", axis=-1),
    ]
    inits = [_init("w1", (64, 32)), _init("b1", (32,)), _init("w2", (10, 32))]
    return _model(nodes, [_vi("x", [batch, 64])], [_vi("p", None)], inits, "mlp")


def attention(batch):
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
        helper.make_node("Transpose", ["o"], ["ot"], name="t", perm=[0, 2, 1, 3]),
    ]
    inputs = [
        _vi("q", [batch, 4, 16, 8]),
        _vi("kt", [batch, 4, 8, 16]),
        _vi("v", [batch, 4, 16, 8]),
    ]
    return _model(nodes, inputs, [_vi("ot", None)], (), "attention")


def convnet(batch):
    nodes = [
        helper.make_node("Conv", ["x", "cw"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["m"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["m"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw"], ["y"], name="fc"),
    ]
    inits = [_init("cw", (8, 3, 3, 3)), _init("fw", (8, 5))]
    return _model(nodes, [_vi("x", [batch, 3, 16, 16])], [_vi("y", None)], inits, "convnet")


BUILDERS = (mlp, attention, convnet)
OP_TYPES = ("MatMul", "Gemm", "Conv", "Relu", "Add", "Softmax", "Transpose", "Flatten", "Nope", "")
MUTATIONS = (
    "none", "drop_input", "no_output", "op_type", "dim", "rank", "truncate", "graph_name",
    "node_name", "elem_type", "duplicate_output",
)  # fmt: skip


def _mutate(model: onnx.ModelProto, kind: str, data: st.DataObject) -> bytes:
    g = model.graph
    node = g.node[data.draw(st.integers(0, len(g.node) - 1), label="node")]
    if kind == "drop_input" and node.input:
        del node.input[data.draw(st.integers(0, len(node.input) - 1), label="input")]
    elif kind == "no_output":
        del node.output[:]
    elif kind == "op_type":
        node.op_type = data.draw(st.sampled_from(OP_TYPES), label="op_type")
    elif kind in ("dim", "rank"):
        inp = g.input[data.draw(st.integers(0, len(g.input) - 1), label="graph input")]
        dims = inp.type.tensor_type.shape.dim
        if kind == "rank":
            del dims[-1]
        else:
            d = dims[data.draw(st.integers(0, len(dims) - 1), label="dim")]
            value = data.draw(st.sampled_from((0, -1, 1, 3, 10**6, 2**40, "N")), label="value")
            d.Clear()
            if isinstance(value, str):
                d.dim_param = value
            else:
                d.dim_value = value
    elif kind == "graph_name":
        g.name = data.draw(st.sampled_from(HOSTILE_TEXT), label="name")
    elif kind == "node_name":
        node.name = data.draw(st.sampled_from(HOSTILE_TEXT), label="name")
        node.output[0] = node.name  # the tensor name reaches the sheet as the kernel name
        for other in g.node:
            for i, name in enumerate(other.input):
                if other is not node and name == node.output[0]:
                    other.input[i] = node.name
    elif kind == "elem_type":
        g.input[0].type.tensor_type.elem_type = data.draw(
            st.sampled_from((0, 2, 7, 9, 11, 99)), label="elem"
        )
    elif kind == "duplicate_output" and len(g.node) > 1:
        g.node[1].output[0] = g.node[0].output[0]
    blob = model.SerializeToString()
    if kind == "truncate":
        blob = blob[: data.draw(st.integers(0, len(blob) - 1), label="cut")]
    return blob


@given(
    builder=st.sampled_from(BUILDERS),
    batch=st.sampled_from((1, 2, 8, "N")),
    kind=st.sampled_from(MUTATIONS),
    fmt=st.sampled_from(("json", "html", "md")),
    cli_batch=st.sampled_from((None, "1", "4")),
    data=st.data(),
)
def test_onnx_mutants(tmp_path, builder, batch, kind, fmt, cli_batch, data):
    model = builder(batch)
    blob = _mutate(model, kind, data)
    path = fresh(tmp_path, "model.onnx")
    path.write_bytes(blob)
    out = fresh(tmp_path, f"sheet.{fmt}")
    argv = ["map", "--onnx", str(path), "--hardware", "teaching", "--format", fmt]
    argv += ["--batch", cli_batch] if cli_batch else []
    outcome = assert_contract(
        run_cli(*argv, "--output", str(out)), names=(path.name,), outputs=(out,)
    )
    if outcome.code != 0:
        return
    text = out.read_text()
    hostile = next(
        (h for h in HOSTILE_TEXT if h in (model.graph.name, *[n.name for n in model.graph.node])),
        "",
    )
    if fmt == "json":
        assert_sane_mapping(read_json(out))
    elif fmt == "html":
        assert_safe_html(text, hostile)
    else:
        assert_safe_markdown(text, hostile)


def test_fixed_batch_is_kept_through_the_cli(tmp_path):
    path = tmp_path / "mm.onnx"
    node = helper.make_node("MatMul", ["x", "y"], ["z"], name="mm")
    path.write_bytes(
        _model(
            [node], [_vi("x", [1, 512, 512]), _vi("y", [1, 512, 512])], [_vi("z", None)]
        ).SerializeToString()
    )
    outcome = assert_contract(run_cli("map", "--onnx", str(path), "--format", "json"))
    doc = __import__("json").loads(outcome.out)
    assert doc["totals"]["model_flops"] == 2 * 512**3
    outcome = assert_contract(run_cli("map", "--onnx", str(path), "--batch", "4"))
    assert "keeps its fixed batch 1" in outcome.err
