"""Graph validation: every error is one line naming the op."""

import math

import pytest

from workbench.errors import GraphError
from workbench.hw import load_hardware
from workbench.ir import Conv2d, Elementwise, Graph, Linear, MatMul, Reshape, Slice
from workbench.ir.ops_base import MAX_ELEMENTS
from workbench.mapper import map_model


def _lin(name, x, k=8, n=8, tokens=(2,), **kw):
    return Linear(name=name, inputs=(x,), tokens=tokens, in_features=k, out_features=n, **kw)


def test_valid_graph_edges_and_totals():
    a = _lin("a", "x")
    b = _lin("b", "a", n=4)
    g = Graph(name="g", ops=(a, b))
    assert g.producer("a") is a
    assert g.producer("x") is None
    assert g.consumers("a") == (b,)
    assert [t.name for t in g.inputs] == ["x"]
    assert [t.name for t in g.outputs] == ["b"]
    assert g.params == 64 + 32
    assert g.by_layer_type()["mlp"] == g.flops


def test_topological_reorders():
    a, b = _lin("a", "x"), _lin("b", "a")
    assert [op.name for op in Graph(name="g", ops=(b, a)).ops] == ["a", "b"]


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ((_lin("a", "x"), _lin("b", "a", k=16)),
         r"op 'b': input 'a' has shape \(2, 8\) from op 'a' but 'b' expects \(2, 16\)"),
        ((_lin("a", "x"), _lin("b", "a", dtype="fp16")),
         r"op 'b': input 'a' is bf16 from op 'a' but 'b' expects fp16"),
        ((_lin("a", "x"), _lin("a", "x")), r"duplicate op name 'a'"),
        ((_lin("a", "b"), _lin("b", "a")), r"cycle through ops a, b"),
        ((_lin("a", "x"), _lin("b", "x", k=4)), r"op 'b': graph input 'x' expected as \(2, 4\)"),
    ],
)  # fmt: skip
def test_graph_errors(ops, message):
    with pytest.raises(GraphError, match=message) as info:
        Graph(name="g", ops=ops)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: _lin("fc", "x", k=0), r"op 'fc': in_features must be positive"),
        (lambda: _lin("fc", "x", tokens=(2, -1)), r"op 'fc': tokens must be positive"),
        (lambda: _lin("fc", "x", dtype="fp12"), r"op 'fc': unknown dtype 'fp12'"),
        (lambda: _lin("fc", "x", weight_dtype="int3"), r"op 'fc': unknown dtype 'int3'"),
        (lambda: _lin("fc", "x", layer_type="misc"), r"op 'fc': unknown layer_type 'misc'"),
        (lambda: Elementwise(name="e", inputs=("x",), op="add", shape=(2,)),
         r"op 'e': add expects 2 input"),
        (lambda: Elementwise(name="e", inputs=("x",), op="cube", shape=(2,)),
         r"op 'e': unknown elementwise kind 'cube'"),
        (lambda: Elementwise(name="e", inputs=("x",), op="bias", shape=(2,), channel_axis=3),
         r"op 'e': channel_axis 3 out of range"),
        (lambda: Conv2d(name="c", inputs=("x",), batch=1, in_channels=6, height=4, width=4,
                        out_channels=4, kernel_h=3, kernel_w=3, groups=4),
         r"op 'c': groups=4 must divide"),
        (lambda: Conv2d(name="c", inputs=("x",), batch=1, in_channels=3, height=2, width=2,
                        out_channels=4, kernel_h=3, kernel_w=3),
         r"op 'c': kernel 3x3 does not fit"),
        (lambda: Reshape(name="r", inputs=("x",), shape=(2, 3), to=(4, 2)),
         r"op 'r': cannot reshape"),
        (lambda: Slice(name="s", inputs=("x",), shape=(2, 3), axis=1, start=2, stop=4),
         r"op 's': slice \[2, 4\) out of range"),
    ],
)  # fmt: skip
def test_op_errors_name_the_op(build, message):
    with pytest.raises(GraphError, match=message):
        build()


def test_an_op_past_the_64_bit_arithmetic_is_one_graph_error():
    # 2^80 output elements overflowed the tile search (ZeroDivisionError from a trace's shapes).
    with pytest.raises(GraphError, match="beyond what the cost arithmetic handles"):
        MatMul(name="big", inputs=("a", "b"), dtype="fp16", m=2**40, n=2**40, k=64)


def test_huge_but_countable_ops_map_to_finite_times():
    # 2^61 x 2^1 output elements, 2^91 FLOPs: the padded-FLOP count is a float, not a wrapped int64.
    hw = load_hardware("a100-80gb")
    for op in (
        MatMul(name="tall", inputs=("a", "b"), dtype="fp16", m=2**61, n=2, k=1),
        MatMul(name="cube", inputs=("a", "b"), dtype="fp16", m=2**30, n=2**30, k=2**30),
    ):
        (km,) = map_model(Graph(name="g", ops=(op,)), hw).kernels
        assert math.isfinite(km.cost.total_s)
        assert km.cost.total_s > 0
        assert km.tiling.padded_flops >= op.flops
    assert MAX_ELEMENTS == 2**62
