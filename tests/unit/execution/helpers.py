"""Tolerances shared by the execution tests."""

import numpy as np

# Unit roundoff of each output format (half an ulp at 1.0).
OUT_EPS = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}
FP32_EPS = 2.0**-24


def gemm_bound(a64: np.ndarray, b64: np.ndarray, ref: np.ndarray, out_fmt: str) -> np.ndarray:
    """Elementwise error bound: fp32 accumulation over K plus rounding to the output format."""
    k = a64.shape[1]
    acc = 2 * k * FP32_EPS * (np.abs(a64) @ np.abs(b64))
    return 2 * (OUT_EPS[out_fmt] * np.abs(ref) + acc) + 1e-30
