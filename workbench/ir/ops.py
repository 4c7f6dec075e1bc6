"""Operators of the graph: what each computes, how many FLOPs, how many bytes.

The operators live in :mod:`~workbench.ir.ops_base` (the base class and conventions),
:mod:`~workbench.ir.ops_gemm`, :mod:`~workbench.ir.ops_vector` and
:mod:`~workbench.ir.ops_collective`; this module re-exports them all.

The conventions every op follows (FLOPs, bytes, one output tensor named after the op) are
stated once, in :mod:`~workbench.ir.ops_base`.
"""

# NOTE: each module's ``__all__`` names its operators once; this module adds them up.
from workbench.ir import ops_base, ops_collective, ops_gemm, ops_vector
from workbench.ir.ops_base import *  # noqa: F403
from workbench.ir.ops_base import _BINARY, _positive
from workbench.ir.ops_collective import *  # noqa: F403
from workbench.ir.ops_gemm import *  # noqa: F403
from workbench.ir.ops_vector import *  # noqa: F403

__all__ = ["_BINARY", "_positive"]
__all__ += ops_base.__all__
__all__ += ops_collective.__all__
__all__ += ops_gemm.__all__
__all__ += ops_vector.__all__
