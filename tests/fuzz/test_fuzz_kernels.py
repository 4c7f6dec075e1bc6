"""The execution kernels' Python API: hostile tile sizes, strides and options raise the
library's one-line :class:`ExecutionError`, never an AssertionError or TypeError (issue 13)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import workbench.execution as ex
from workbench.errors import WorkbenchError

#: NOTE: no huge sizes: a kernel asked for a 40 TiB padded input allocates it, as NumPy would.
sizes = st.sampled_from((0, -1, 1, 3, 16, True, 2.5, None, "4", (1,), (1, 2, 3), (1, 2)))
A = np.ones((8, 16), np.float32)
B = np.ones((16, 4), np.float32)
Q = np.ones((1, 2, 8, 4), np.float32)
X = np.ones((1, 8, 8, 3), np.float32)
W = np.ones((4, 3, 3, 3), np.float32)

CALLS = {
    "gemm": lambda s: ex.gemm(A, B, tile_m=s, tile_n=4, tile_k=4),
    "gemm_split": lambda s: ex.gemm(A, B, tile_m=4, tile_n=4, tile_k=4, split_k=s),
    "gemm_epilogue": lambda s: ex.gemm(A, B, tile_m=4, tile_n=4, tile_k=4, epilogue=s),
    "softmax": lambda s: ex.softmax(A, row_tile=s),
    "layernorm": lambda s: ex.layernorm(A, col_tile=s),
    "elementwise": lambda s: ex.elementwise_chain(A, ("relu",), tile=s),
    "attention": lambda s: ex.attention_fused(Q, Q, Q, q_tile=s),
    "conv_stride": lambda s: ex.conv2d(X, W, stride=s),
    "conv_padding": lambda s: ex.conv2d(X, W, padding=s),
    "conv_tile": lambda s: ex.conv2d(X, W, tile_m=s),
}


@given(call=st.sampled_from(sorted(CALLS)), size=sizes)
def test_kernel_api_errors_are_the_librarys_own(call, size):
    try:
        out, message = CALLS[call](size), ""
    except WorkbenchError as exc:
        out, message = None, str(exc)
    assert "\n" not in message
    assert out is None or np.isfinite(np.asarray(out)).all()
