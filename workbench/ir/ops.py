"""Operators of the graph: what each computes, how many FLOPs, how many bytes.

The operators live in :mod:`~workbench.ir.ops_base` (the base class and conventions),
:mod:`~workbench.ir.ops_gemm`, :mod:`~workbench.ir.ops_vector` and
:mod:`~workbench.ir.ops_collective`; this module re-exports them all.

The conventions every op follows (FLOPs, bytes, one output tensor named after the op) are
stated once, in :mod:`~workbench.ir.ops_base`.
"""

from workbench.ir.ops_base import (
    _BINARY,
    ELEMENTWISE_FLOPS,
    LAYER_TYPES,
    LAYERNORM_FLOPS,
    RMSNORM_FLOPS,
    SOFTMAX_FLOPS,
    Op,
    Tensor,
    _positive,
)
from workbench.ir.ops_collective import AllGather, AllReduce, AllToAll
from workbench.ir.ops_gemm import Attention, Conv2d, Linear, MatMul
from workbench.ir.ops_vector import (
    Dequantize,
    Elementwise,
    Embedding,
    LayerNorm,
    Pool,
    Quantize,
    Reduce,
    RMSNorm,
    Softmax,
    Transpose,
)

__all__ = [
    "ELEMENTWISE_FLOPS",
    "LAYERNORM_FLOPS",
    "LAYER_TYPES",
    "RMSNORM_FLOPS",
    "SOFTMAX_FLOPS",
    "_BINARY",
    "AllGather",
    "AllReduce",
    "AllToAll",
    "Attention",
    "Conv2d",
    "Dequantize",
    "Elementwise",
    "Embedding",
    "LayerNorm",
    "Linear",
    "MatMul",
    "Op",
    "Pool",
    "Quantize",
    "RMSNorm",
    "Reduce",
    "Softmax",
    "Tensor",
    "Transpose",
    "_positive",
]
