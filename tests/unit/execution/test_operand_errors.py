"""Kernel-API calls with operands that are not numeric arrays get the library's one-line error."""

import numpy as np
import pytest

from workbench.errors import WorkbenchError
from workbench.execution import attention_fused, conv2d, gemm, rmsnorm, softmax

TILES = {"tile_m": 2, "tile_n": 2, "tile_k": 2}


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: gemm(np.array([["a"]]), np.ones((1, 1)), **TILES), "gemm: operand A"),
        (lambda: gemm(np.ones((1, 1)), np.array([[object()]]), **TILES), "gemm: operand B"),
        (lambda: gemm([[1.0, 2.0], [3.0]], np.ones((2, 2)), **TILES), "gemm: operand A"),
        (lambda: rmsnorm(np.array([["x"]])), "rmsnorm: operand x"),
        (lambda: softmax(np.array(["x"])), "softmax: operand x"),
        (lambda: attention_fused("q", np.ones((1, 2, 4)), np.ones((1, 2, 4))), "operand q"),
        (lambda: conv2d(np.array([["x"]]), np.ones((1, 1, 1, 1))), "conv2d: operand x"),
    ],
)
def test_non_numeric_operand_is_one_line(call, needle):
    with pytest.raises(WorkbenchError) as info:
        call()
    message = str(info.value)
    assert needle in message
    assert "\n" not in message
