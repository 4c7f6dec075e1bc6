"""A graph from a trace's recorded shapes: each operator call one ir op, in the format it ran."""

from __future__ import annotations

import pytest

from workbench.errors import GraphError
from workbench.evidence.operators import RecordedOp
from workbench.ir import AllReduce, Elementwise, Embedding, LayerNorm, MatMul, Reduce, Softmax
from workbench.models.from_trace import (
    BAD_RANK,
    MAX_TENSOR_ELEMENTS,
    gemm_format,
    graph_from_trace,
    profile_for_device,
)


def _call(name, dims, types, **args):
    return RecordedOp(name=name, input_dims=dims, input_types=types,
                      args=tuple((k, str(v)) for k, v in args.items()))  # fmt: skip


def _graph(calls, kernel="k"):
    names = {i: [kernel] for i in range(len(calls))}
    return graph_from_trace(calls, names, source="t.json", device="NVIDIA A100")


def test_gemms_become_matmuls_with_their_sizes():
    calls = [
        _call("aten::mm", ((64, 32), (32, 16)), ("float", "float")),
        _call("aten::addmm", ((16,), (64, 32), (32, 16), (), ()), ("float",) * 3 + ("Scalar",) * 2),
        _call("aten::bmm", ((8, 64, 32), (8, 32, 16)), ("c10::Half", "c10::Half")),
        _call("aten::baddbmm", ((8, 64, 16), (8, 64, 32), (8, 32, 16)), ("c10::BFloat16",) * 3),
        _call("aten::linear", ((2, 5, 32), (16, 32), (16,)), ("float",) * 3),
    ]
    tg = _graph(calls)
    mm, addmm, bmm, baddbmm, linear = (tg.graph.op(tg.op_of_call[i]) for i in range(5))
    assert all(isinstance(op, MatMul) for op in (mm, addmm, bmm, baddbmm, linear))
    assert (mm.m, mm.n, mm.k, mm.batch) == (64, 16, 32, 1)
    assert (addmm.m, addmm.n, addmm.k) == (64, 16, 32)  # the bias is the first input
    assert (bmm.batch, bmm.m, bmm.n, bmm.k, bmm.dtype) == (8, 64, 16, 32, "fp16")
    assert (baddbmm.batch, baddbmm.dtype) == (8, "bf16")
    assert (linear.m, linear.n, linear.k) == (10, 16, 32)


def test_vector_ops_norms_embedding_and_collectives():
    calls = [
        _call(
            "aten::native_layer_norm",
            ((1024, 512), (), (512,), (512,), ()),
            ("float", "", "float", "float", "Scalar"),
        ),
        _call("aten::_softmax", ((4, 128, 128), (), ()), ("c10::Half", "Scalar", "Scalar")),
        _call("aten::embedding", ((30000, 768), (8, 128)), ("float", "long")),
        _call("aten::mul", ((1024, 512), (1024, 512)), ("float", "float")),
        _call("aten::add_", ((512,), (), (512,)), ("float", "Scalar", "float")),
        _call("aten::sigmoid", ((1024, 512),), ("float",)),
        _call("aten::sum", ((979, 1024), ()), ("float", "")),
        _call(
            "record_param_comms",
            None,
            (),
            **{
                "Collective name": "allreduce",
                "In msg nelems": 4096,
                "Group size": 8,
                "dtype": "Float",
            },
        ),
    ]
    tg = _graph(calls)
    ops = [tg.graph.op(tg.op_of_call[i]) for i in range(len(calls))]
    ln, sm, emb, mul, add, sig, red, ar = ops
    assert isinstance(ln, LayerNorm)
    assert ln.shape == (1024, 512)
    assert isinstance(sm, Softmax)
    assert sm.dtype == "fp16"
    assert isinstance(emb, Embedding)
    assert (emb.vocab, emb.dim, emb.tokens) == (30000, 768, (8, 128))
    assert isinstance(mul, Elementwise)
    assert mul.op == "mul"
    assert mul.arity == 2
    assert isinstance(add, Elementwise)
    assert add.shape == (512,)
    assert isinstance(sig, Elementwise)
    assert sig.op == "sigmoid"
    assert isinstance(red, Reduce)
    assert red.shape == (979, 1024)
    assert isinstance(ar, AllReduce)
    assert (ar.shape, ar.chips) == ((4096,), 8)


def test_a_convolution_needs_its_concrete_stride_and_padding():
    dims = ((8, 64, 56, 56), (128, 64, 3, 3), (128,), (), (), (), (), (), ())
    types = ("float", "float", "float", "", "", "", "Scalar", "", "Scalar")
    concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    tg = _graph([_call("aten::convolution", dims, types, **{"Concrete Inputs": concrete})])
    (conv,) = tg.graph.ops
    assert (conv.batch, conv.in_channels, conv.out_channels) == (8, 64, 128)
    assert (conv.kernel_h, conv.stride, conv.padding, conv.groups) == (3, 2, 1, 1)
    plain = _call("aten::convolution", dims, types)
    with pytest.raises(GraphError):
        _graph([plain])
    assert dict(_graph([plain, _call("aten::mm", ((4, 4), (4, 4)), ("float",) * 2)]).skipped) == {
        "convolution without recorded stride/padding (Concrete Inputs)": 1
    }


@pytest.mark.parametrize(
    ("name", "dims"),
    [
        ("aten::mm", ((4, 8, 16), (16, 32))),  # a 3-D mm
        ("aten::mm", ((8, 16), (17, 32))),  # inner sizes disagree
        ("aten::addmm", ((32,), (8,), (16, 32))),
        ("aten::bmm", ((8, 16), (16, 32))),  # a 2-D bmm
        ("aten::bmm", ((2, 8, 16), (3, 16, 32))),  # batches disagree
        ("aten::baddbmm", ((4, 8, 32), (8, 16), (16, 32))),
        ("aten::linear", ((2, 5, 33), (16, 32))),
        ("aten::matmul", ((2, 5, 33), (32, 16))),
        (
            "aten::_scaled_dot_product_flash_attention",
            ((1, 8, 128, 64), (128, 64), (1, 8, 128, 64)),
        ),
        ("aten::_efficient_attention_forward", ((1, 8, 128, 64), (1, 8, 128, 64), (64,))),
        ("aten::convolution", ((1, 3, 32), (8, 3, 3, 3))),
    ],
)
def test_tensors_of_a_rank_the_operator_cannot_take_are_left_out_as_corrupt(name, dims):
    concrete = '["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]'
    bad = _call(name, dims, ("float",) * len(dims), **{"Concrete Inputs": concrete})
    good = _call("aten::mm", ((4, 4), (4, 4)), ("float",) * 2)
    assert dict(_graph([bad, good]).skipped) == {f"{name} {BAD_RANK}": 1}
    with pytest.raises(GraphError, match="left out as corrupt"):
        _graph([bad])


def test_a_convolution_with_absurd_stride_or_padding_is_left_out():
    dims = ((1, 3, 32, 32), (8, 3, 3, 3))
    for concrete in (
        "[[], [], [], ['" + "9" * 5000 + "'], ['0']]",
        "[[], [], [], [99, 99], [0, 0]]",
    ):
        bad = _call("aten::convolution", dims, ("float",) * 2, **{"Concrete Inputs": concrete})
        good = _call("aten::mm", ((4, 4), (4, 4)), ("float",) * 2)
        assert dict(_graph([bad, good]).skipped) == {f"aten::convolution {BAD_RANK}": 1}


def test_calls_with_the_same_signature_share_one_op():
    call = _call("aten::mm", ((64, 32), (32, 16)), ("float", "float"))
    tg = _graph([call, call, call])
    assert len(tg.graph.ops) == 1
    assert set(tg.op_of_call) == {0, 1, 2}
    assert len(set(tg.op_of_call.values())) == 1


def test_what_cannot_be_modelled_is_counted_by_reason():
    calls = [
        _call("aten::mm", ((64, 32), (32, 16)), ("float", "float")),
        _call(
            "fbgemm::split_embedding_codegen_lookup_function", ((0,), (480000,)), ("float", "float")
        ),
        _call("aten::sum", ((979, 1024), ()), ("int", "")),
        _call("record_param_comms", None, ()),
    ]
    skipped = dict(_graph(calls).skipped)
    assert skipped == {
        "not modelled: fbgemm::split_embedding_codegen_lookup_function": 1,
        "no floating-point tensor input": 1,
        "no shapes recorded": 1,
    }


def test_a_trace_without_shapes_gives_no_graph():
    calls = [_call("aten::mm", None, ())]
    with pytest.raises(GraphError, match="no shapes recorded"):
        _graph(calls)


@pytest.mark.parametrize(
    ("dtype", "kernel", "fmt"),
    [
        ("fp32", "volta_sgemm_128x64_nn", "fp32"),
        ("fp32", "ampere_sgemm_64x32_sliced1x4_tn", "fp32"),
        ("fp32", "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, true>", "fp32"),
        (
            "fp32",
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>",
            "tf32",
        ),
        ("fp32", "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16", "tf32"),
        ("fp32", "ampere_s16816gemm_128x128_ldg8_stages_32x5_nn", "tf32"),
        ("fp16", "volta_h884gemm_128x128_ldg8_nn", "fp16"),
    ],
)
def test_the_format_a_gemm_ran_in_comes_from_its_kernel_names(dtype, kernel, fmt):
    assert gemm_format(dtype, [kernel]) == fmt


def test_a_tensor_core_kernel_makes_the_op_tf32():
    call = _call("aten::mm", ((64, 32), (32, 16)), ("float", "float"))
    tg = _graph([call], kernel="ampere_s16816gemm_128x128_ldg8_nn")
    assert tg.graph.ops[0].dtype == "tf32"


@pytest.mark.parametrize(
    ("device", "profile"),
    [
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
        ("Tesla T4", "t4"),
        ("NVIDIA A100-PG509-200", "a100-80gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA L4", "l4"),
        ("Some NPU", None),
    ],
)
def test_profile_from_the_device_name(device, profile):
    assert profile_for_device(device) == profile


def _world(calls, world_size):
    names = {i: ["ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"] for i in range(len(calls))}
    return graph_from_trace(calls, names, source="t.json", world_size=world_size)


def test_nccl_annotations_give_collectives_with_their_bytes_and_the_world_size():
    # Older PyTorch: record_param_comms records nothing; its nccl:<op> range holds the tensor.
    calls = [
        _call("nccl:all_to_all", ((2, 1024, 34820),), ("float",)),
        _call("nccl:all_to_all", ((1002496,),), ("int",)),
        _call("nccl:all_to_all", ((1000,),), ("long",)),
        _call("nccl:all_reduce", ((4432073,),), ("float",)),
        _call("nccl:all_gather", ((8, 16),), ("c10::BFloat16",)),
    ]
    ops = _world(calls, 2).graph.ops
    assert [type(op).__name__ for op in ops] == [
        "AllToAll", "AllToAll", "AllToAll", "AllReduce", "AllGather"
    ]  # fmt: skip
    a2a, ints, longs, ar, ag = ops
    assert a2a.output_tensor().nbytes == 2 * 1024 * 34820 * 4
    assert a2a.link_bytes == pytest.approx(2 * 1024 * 34820 * 4 / 2)  # half stays on the rank
    assert ints.output_tensor().nbytes == 1002496 * 4  # int32 travels as 4-byte words
    assert longs.output_tensor().nbytes == 1000 * 8  # int64 as 8
    assert ar.chips == 2
    assert ar.link_bytes == pytest.approx(4432073 * 4)
    assert ag.dtype == "bf16"
    assert ag.output_shape() == (8, 32)


def test_an_nccl_annotation_without_world_size_or_tensor_is_skipped_with_its_reason():
    calls = [
        _call("nccl:all_to_all", ((64,),), ("float",)),
        _call("nccl:all_reduce", ((),), ("Scalar",)),
        _call("nccl:reduce_scatter", ((64,),), ("float",)),
        _call("aten::mm", ((64, 32), (32, 16)), ("float", "float")),
    ]
    assert dict(_world(calls, None).skipped) == {
        "nccl:all_to_all without a known world size (distributedInfo)": 1,
        "nccl:all_reduce without a tensor's sizes": 1,
        "nccl:reduce_scatter without a known world size (distributedInfo)": 1,
    }
    assert dict(_world(calls, 4).skipped) == {
        "nccl:all_reduce without a tensor's sizes": 1,
        "not modelled: nccl:reduce_scatter": 1,
    }


def test_record_param_comms_with_out_of_range_counts_is_skipped_not_an_error():
    calls = [
        _call("record_param_comms", None, (), **{"Collective name": "all_reduce",
              "Out msg nelems": "9" * 400, "Group size": "8", "dtype": "Float"}),
        _call("aten::mm", ((64, 32), (32, 16)), ("float", "float")),
    ]  # fmt: skip
    assert dict(_graph(calls).skipped) == {"record_param_comms with byte counts out of range": 1}


def test_a_tensor_beyond_any_device_memory_is_left_out_not_mapped():
    big = 2**24  # 2^48 elements in one [2^24, 2^24] tensor: over the 2^47 bound
    calls = [
        _call("aten::mm", ((big, big), (big, 64)), ("float", "float")),
        _call("nccl:all_reduce", ((2**48,),), ("float",)),
        _call("aten::mm", ((64, 32), (32, 16)), ("float", "float")),
    ]
    graph = _world(calls, 8)
    assert len(graph.graph.ops) == 1
    assert dict(graph.skipped) == {
        "aten::mm with a tensor beyond any device's memory (over 2^47 elements)": 1,
        "nccl:all_reduce with a tensor beyond any device's memory (over 2^47 elements)": 1,
    }
    assert MAX_TENSOR_ELEMENTS == 2**47
