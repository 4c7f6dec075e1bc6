"""CuPy fused kernels, each with its NumPy twin beside it.

- A fused GEMM epilogue ``y = act(acc + bias) + residual`` as one ``cupy.ElementwiseKernel``:
  one read of the accumulator and one write, where the unfused form makes a pass per step.
- Row-wise online softmax as a ``cupy.RawKernel``: one block per row; each thread keeps a
  running (max, sum) over its strided columns (one pass), the block merges the pairs in shared
  memory, then writes ``exp(x - max) / sum``.

The NumPy twins compute the same thing the same way and share the tests; the CuPy versions run
only where a GPU is present (``scripts/gpu_check.py`` compares them).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from workbench.execution.elementwise import activate

__all__ = [
    "ONLINE_SOFTMAX_SOURCE",
    "fits_fused_epilogue",
    "fused_epilogue_cupy",
    "fused_epilogue_numpy",
    "online_softmax_cupy",
    "online_softmax_numpy",
]

# CUDA C expressions for each activation, on a float `v` (tanh-approximate GELU).
_ACT_CUDA = {
    "identity": "v",
    "relu": "fmaxf(v, 0.0f)",
    "gelu": "0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))",
    "silu": "v / (1.0f + expf(-v))",
    "sigmoid": "1.0f / (1.0f + expf(-v))",
    "tanh": "tanhf(v)",
    "exp": "expf(v)",
}


def _split_epilogue(epilogue: tuple[str, ...]) -> tuple[bool, str, bool] | None:
    """Parse an epilogue of the form ``[bias] [activation] [residual]``; None if it is not."""
    rest = list(epilogue)
    has_bias = bool(rest) and rest[0] == "bias"
    rest = rest[has_bias:]
    act = rest.pop(0) if rest and rest[0] in _ACT_CUDA else "identity"
    has_res = bool(rest) and rest[0] == "residual"
    rest = rest[has_res:]
    return None if rest else (has_bias, act, has_res)


def fits_fused_epilogue(epilogue: tuple[str, ...]) -> bool:
    """True when the epilogue is ``[bias] [activation] [residual]`` (the fused kernel's form)."""
    return bool(epilogue) and _split_epilogue(epilogue) is not None


def fused_epilogue_numpy(
    acc: np.ndarray, epilogue: tuple[str, ...], bias: Any = None, residual: Any = None
) -> np.ndarray:
    """NumPy twin of :func:`fused_epilogue_cupy`: ``act(acc + bias) + residual`` in float32."""
    parsed = _split_epilogue(epilogue)
    if parsed is None:
        raise ValueError(f"epilogue {epilogue} is not of the form [bias] [activation] [residual]")
    has_bias, act, has_res = parsed
    y = np.asarray(acc, dtype=np.float32)
    if has_bias:
        y = y + np.asarray(bias, dtype=np.float32)
    y = activate(act, y, np)
    if has_res:
        y = y + np.asarray(residual, dtype=np.float32)
    return y


@functools.cache
def _epilogue_kernel(has_bias: bool, act: str, has_res: bool) -> Any:
    import cupy

    params = (
        "float32 acc"
        + (", float32 bias" if has_bias else "")
        + (", float32 res" if has_res else "")
    )
    body = "float v = acc" + (" + bias" if has_bias else "") + ";\n"
    body += f"v = {_ACT_CUDA[act]};\n"
    body += "y = v" + (" + res" if has_res else "") + ";"
    return cupy.ElementwiseKernel(
        params, "float32 y", body, f"wb_epilogue_{act}_{has_bias}{has_res}"
    )


def fused_epilogue_cupy(
    acc: Any, epilogue: tuple[str, ...], bias: Any = None, residual: Any = None
) -> Any:
    """``act(acc + bias) + residual`` as one CuPy ElementwiseKernel (bias broadcasts over rows)."""
    parsed = _split_epilogue(epilogue)
    if parsed is None:
        raise ValueError(f"epilogue {epilogue} is not of the form [bias] [activation] [residual]")
    has_bias, act, has_res = parsed
    args = [acc] + ([bias] if has_bias else []) + ([residual] if has_res else [])
    return _epilogue_kernel(has_bias, act, has_res)(*args)


def online_softmax_numpy(x: np.ndarray, *, col_tile: int = 256) -> np.ndarray:
    """NumPy twin of the RawKernel: running (max, sum) over column tiles, then one write pass."""
    x = np.asarray(x, dtype=np.float32)
    rows, n = x.shape
    m = np.full((rows, 1), -np.inf, dtype=np.float32)
    s = np.zeros((rows, 1), dtype=np.float32)
    for c0 in range(0, n, col_tile):
        blk = x[:, c0 : c0 + col_tile]
        m_new = np.maximum(m, blk.max(axis=1, keepdims=True))
        s = s * np.exp(m - m_new) + np.exp(blk - m_new).sum(axis=1, keepdims=True)
        m = m_new
    return np.exp(x - m) / s


ONLINE_SOFTMAX_SOURCE = r"""
#define WB_NEG_INF __int_as_float(0xff800000)
extern "C" __global__
void wb_online_softmax(const float* __restrict__ x, float* __restrict__ y, const int n) {
    extern __shared__ float smem[];          // 2 * blockDim.x floats: running max, running sum
    const float* xr = x + (long long)blockIdx.x * n;
    float* yr = y + (long long)blockIdx.x * n;
    float m = WB_NEG_INF, s = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {     // one pass: online (max, sum)
        float v = xr[j];
        float m_new = fmaxf(m, v);
        s = s * expf(m - m_new) + expf(v - m_new);
        m = m_new;
    }
    float* sm = smem;
    float* ss = smem + blockDim.x;
    sm[threadIdx.x] = m;
    ss[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {   // merge (max, sum) pairs
        if (threadIdx.x < stride) {
            float m1 = sm[threadIdx.x], m2 = sm[threadIdx.x + stride];
            float mm = fmaxf(m1, m2);
            float s1 = (m1 == WB_NEG_INF) ? 0.0f : ss[threadIdx.x] * expf(m1 - mm);
            float s2 = (m2 == WB_NEG_INF) ? 0.0f : ss[threadIdx.x + stride] * expf(m2 - mm);
            sm[threadIdx.x] = mm;
            ss[threadIdx.x] = s1 + s2;
        }
        __syncthreads();
    }
    const float row_max = sm[0];
    const float inv_sum = 1.0f / ss[0];
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        yr[j] = expf(xr[j] - row_max) * inv_sum;
    }
}
"""

_THREADS = 256  # a power of two (the tree merge halves it)


@functools.cache
def _softmax_kernel() -> Any:
    import cupy

    return cupy.RawKernel(ONLINE_SOFTMAX_SOURCE, "wb_online_softmax")


def online_softmax_cupy(x: Any) -> Any:
    """Row-wise softmax of a 2-D float32 CuPy array with the online RawKernel."""
    import cupy

    x = cupy.ascontiguousarray(x, dtype=cupy.float32)
    rows, n = x.shape
    y = cupy.empty_like(x)
    if rows and n:
        _softmax_kernel()((rows,), (_THREADS,), (x, y, np.int32(n)), shared_mem=2 * _THREADS * 4)
    return y
