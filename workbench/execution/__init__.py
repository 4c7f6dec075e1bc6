"""Tensor execution: run mapped kernels tile by tile on NumPy or CuPy, with traces.

Every kernel here has a float64 reference in :mod:`workbench.execution.reference` that the
tests compare against. CuPy is imported lazily, only in this package.
"""

from workbench.execution.attention import attention_fused, attention_unfused
from workbench.execution.backend import Backend, get_backend, resolve_backend, sync, to_numpy
from workbench.execution.conv import conv2d
from workbench.execution.elementwise import ACTIVATIONS, elementwise_chain
from workbench.execution.errors import ExecutionError
from workbench.execution.gemm import EPILOGUES, GEMM_DTYPES, OUTPUT_FORMAT, gemm
from workbench.execution.quant import (
    QUANT_FORMATS,
    QualityMetrics,
    Quantized,
    dequantize,
    error_metrics,
    fake_quantize,
    quantize,
    round_to_format,
)
from workbench.execution.rows import layernorm, reduce, rmsnorm, softmax
from workbench.execution.trace import Trace, TraceEvent

__all__ = [
    "ACTIVATIONS",
    "EPILOGUES",
    "GEMM_DTYPES",
    "OUTPUT_FORMAT",
    "QUANT_FORMATS",
    "Backend",
    "ExecutionError",
    "QualityMetrics",
    "Quantized",
    "Trace",
    "TraceEvent",
    "attention_fused",
    "attention_unfused",
    "conv2d",
    "dequantize",
    "elementwise_chain",
    "error_metrics",
    "fake_quantize",
    "gemm",
    "get_backend",
    "layernorm",
    "quantize",
    "reduce",
    "resolve_backend",
    "rmsnorm",
    "round_to_format",
    "softmax",
    "sync",
    "to_numpy",
]
