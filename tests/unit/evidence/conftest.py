"""Traces built in-process for the evidence tests (no downloads)."""

from __future__ import annotations

import pytest

from workbench.evidence import MeasuredKernel

#: One training-like step: (name, grid, block, duration in ms).
STEP = (
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", (132, 1, 1), (384, 1, 1), 1.0),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 4>>", (64, 32, 1), (128, 1, 1), 2.0),
    ("void at::native::vectorized_elementwise_kernel<4, Gelu>", (8192, 1, 1), (128, 1, 1), 0.5),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)", (8, 1, 1), (512, 1, 1), 1.5),
)


def step_kernels(
    iterations: int = 5, *, gap_ms: float = 0.25, slow: float = 1.0, idle_ms: float = 1.0
):
    """Kernels of ``iterations`` steps back to back, one stream, with a memcpy at each step's end.

    Each step: kernel durations sum to 5 ms * ``slow`` (gemm scaled by ``slow``), with ``gap_ms``
    of idle time after each kernel, a 0.2 ms memcpy, and ``idle_ms`` before the next step.
    """
    out = []
    t = 10.0
    for it in range(iterations):
        for name, grid, block, ms in STEP:
            d = ms * 1e-3 * (slow if "gemm" in name else 1.0)
            out.append(
                MeasuredKernel(name=name, category="other", rule="", start_s=t, duration_s=d,
                               device=0, stream=7, iteration=it, grid=grid, block=block,
                               registers_per_thread=128, shared_memory_bytes=49152)
            )  # fmt: skip
            t += d + gap_ms * 1e-3
        out.append(
            MeasuredKernel(name="Memcpy DtoH", category="copy", rule="", start_s=t,
                           duration_s=2e-4, device=0, stream=8, iteration=it, kind="memcpy",
                           bytes=1 << 20)
        )  # fmt: skip
        t += 2e-4 + idle_ms * 1e-3
    return out


@pytest.fixture
def kernels():
    return step_kernels()


H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
        "numSms": 132}  # fmt: skip


@pytest.fixture
def make_steps():
    """:func:`step_kernels`, for tests that need other step shapes."""
    return step_kernels


@pytest.fixture
def h100():
    """A ``deviceProperties`` entry as Kineto writes it (a copy per test)."""
    return dict(H100)
