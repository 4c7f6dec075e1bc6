"""Lowering: operator graph -> kernels (engine, fusion, format, layout)."""

from workbench.lowering.kernel import AttentionProblem, GemmProblem, Kernel, RowProblem
from workbench.lowering.lower import lower

__all__ = ["AttentionProblem", "GemmProblem", "Kernel", "RowProblem", "lower"]
