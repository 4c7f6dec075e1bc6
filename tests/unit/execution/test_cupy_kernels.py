import numpy as np
import pytest

from workbench.execution import get_backend
from workbench.execution.cupy_kernels import (
    fits_fused_epilogue,
    fused_epilogue_cupy,
    fused_epilogue_numpy,
    online_softmax_cupy,
    online_softmax_numpy,
)
from workbench.execution.reference import gemm_ref, softmax_ref


def _has_gpu() -> bool:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_backend("cupy").is_gpu


needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="needs CuPy and a CUDA device")

EPILOGUES = [("bias",), ("relu",), ("bias", "gelu"), ("bias", "silu", "residual"), ("residual",)]


def _epilogue_case(rng):
    acc = rng.standard_normal((9, 7)).astype(np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    res = rng.standard_normal((9, 7)).astype(np.float32)
    return acc, bias, res


@pytest.mark.parametrize("ep", EPILOGUES)
def test_fused_epilogue_numpy_twin(ep, rng):
    acc, bias, res = _epilogue_case(rng)
    got = fused_epilogue_numpy(acc, ep, bias, res)
    ref = gemm_ref(acc, np.eye(7), epilogue=ep, bias=bias, residual=res)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_fits_fused_epilogue():
    assert fits_fused_epilogue(("bias", "relu", "residual"))
    assert not fits_fused_epilogue(())
    assert not fits_fused_epilogue(("relu", "bias"))
    assert not fits_fused_epilogue(("bias", "quantize_int8"))


@pytest.mark.parametrize("col_tile", [1, 7, 256])
def test_online_softmax_numpy_twin(col_tile, rng):
    x = (rng.standard_normal((5, 300)) * 10).astype(np.float32)
    np.testing.assert_allclose(online_softmax_numpy(x, col_tile=col_tile), softmax_ref(x),
                               rtol=1e-5, atol=1e-7)  # fmt: skip


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("ep", EPILOGUES)
def test_fused_epilogue_cupy(ep, rng):
    import cupy

    acc, bias, res = _epilogue_case(rng)
    got = fused_epilogue_cupy(cupy.asarray(acc), ep, cupy.asarray(bias), cupy.asarray(res))
    np.testing.assert_allclose(cupy.asnumpy(got), fused_epilogue_numpy(acc, ep, bias, res),
                               rtol=1e-5, atol=1e-5)  # fmt: skip


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("shape", [(1, 1), (3, 255), (64, 4099)])
def test_online_softmax_cupy(shape, rng):
    import cupy

    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    got = cupy.asnumpy(online_softmax_cupy(cupy.asarray(x)))
    np.testing.assert_allclose(got, softmax_ref(x), rtol=1e-4, atol=1e-6)
