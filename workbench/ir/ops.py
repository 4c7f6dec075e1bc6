"""Operators of the graph: what each computes, how many FLOPs, how many bytes.

The operators live in :mod:`~workbench.ir.ops_base` (the base class and conventions),
:mod:`~workbench.ir.ops_gemm`, :mod:`~workbench.ir.ops_vector` and
:mod:`~workbench.ir.ops_collective`; this module re-exports them all.

Conventions (used by every op here and by everything downstream):

* **FLOPs**: a multiply-add counts as 2 FLOPs; every other arithmetic operation (add, max, exp,
  divide, compare, rsqrt) counts as 1. :attr:`Op.flops` is every FLOP the op performs;
  :attr:`Op.matmul_flops` is only the multiply-add part done by GEMM-like work (the "model FLOPs"
  of the PaLM paper, used as the MFU numerator).
* **Bytes**: :attr:`Op.bytes_read` is every activation input, weight and state tensor read once at
  its storage dtype; :attr:`Op.bytes_written` is every tensor written once. This is the compulsory
  (minimum) traffic of the op run alone; the mapper adds re-reads from tiling and removes traffic
  that fusion keeps on chip.
* Each op has exactly one output tensor, named after the op. Its activation inputs are named in
  :attr:`Op.inputs` (names of other ops' outputs or of graph inputs); weights and caches belong to
  the op itself (:meth:`Op.weight_tensors`).
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
