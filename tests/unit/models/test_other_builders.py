import pytest

from workbench.errors import WorkbenchError
from workbench.ir import Conv2d
from workbench.models import PRESETS, encoder_graph, mlp_graph, resnet50_graph


def test_encoder_is_bidirectional_post_norm_with_pooler():
    g = encoder_graph(PRESETS["bert-base"], batch=2, seq=16)
    attn = g.op("layers.0.attn.sdpa")
    assert (attn.causal, attn.kv_cache, attn.q_len, attn.kv_len) == (False, False, 16, 16)
    names = [op.name for op in g.ops]
    assert names[:6] == [
        "embed_tokens", "embed_positions", "embed_positions.add", "embed_token_types",
        "embed_token_types.add", "embed_norm",
    ]  # fmt: skip
    assert names.index("layers.0.attn_residual") < names.index("layers.0.attn_norm")
    assert g.op("layers.0.attn.q_proj").bias
    assert g.op("pooler.cls").output_shape() == (2, 1, 768)
    assert g.op("pooler.act").op == "tanh"
    assert g.ops[-1].name == "pooler.act"


def test_encoder_rejects_too_long():
    with pytest.raises(WorkbenchError, match="seq=513 exceeds its 512 learned positions"):
        encoder_graph(PRESETS["bert-base"], seq=513)


def test_resnet50_structure_v15_stride_on_3x3():
    g = resnet50_graph()
    convs = [op for op in g.ops if isinstance(op, Conv2d)]
    assert len(convs) == 53
    assert g.op("layer2.0.conv2.conv").stride == 2  # v1.5: stride on the 3x3
    assert g.op("layer2.0.conv1.conv").stride == 1
    assert g.op("layer2.0.downsample.conv").stride == 2
    assert g.op("stem.maxpool").output_shape() == (1, 64, 56, 56)
    assert g.op("avgpool").output_shape() == (1, 2048, 1, 1)
    assert g.op("fc").output_shape() == (1, 1000)
    bn = g.op("layer1.0.conv1.bn")
    assert (bn.op, bn.params, bn.layer_type) == ("affine", 128, "norm")
    assert g.consumers("layer4.2.add")[0].op == "relu"


def test_resnet50_nhwc_same_costs():
    a, b = resnet50_graph(batch=2), resnet50_graph(batch=2, layout="NHWC")
    assert (a.flops, a.params, a.bytes_read) == (b.flops, b.params, b.bytes_read)
    assert b.op("fc").tokens == (2,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch": 0}, "batch must be"),
        ({"image": 16}, "at least 32"),
        ({"layout": "CHWN"}, "layout"),
    ],
)
def test_resnet50_bad_input(kwargs, message):
    with pytest.raises(WorkbenchError, match=message):
        resnet50_graph(**kwargs)


def test_mlp_graph_counts():
    g = mlp_graph(batch=4, sizes=(784, 1024, 1024, 10))
    assert g.params == 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10
    assert g.matmul_flops == 2 * 4 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    assert [op.name for op in g.ops] == ["fc0", "act0", "fc1", "act1", "fc2"]
    with pytest.raises(WorkbenchError, match="at least 2 widths"):
        mlp_graph(sizes=(4,))
