"""Measure a CUDA device with CuPy, for ``workbench calibrate --backend cupy``.

:func:`probe_gpu` returns plain data (no CuPy objects) that
:func:`workbench.hw.calibrate.gpu_profile` turns into a hardware profile:

* ``matmul_flops_per_s``: achieved FLOP/s of ``cupy.matmul`` on square matrices per workbench
  dtype, the best over the sizes timed (quick: 2048; full: 4096 and 8192), 2 FLOPs per
  multiply-add. fp32 and fp16 always; CuPy has no bf16. TF32: CuPy reads ``CUPY_TF32`` once, at
  import, so the probe cannot switch it safely; when it was set to 1 before CuPy imported,
  float32 matmuls run on the tensor cores and their rate is reported as ``tf32`` instead of
  ``fp32``.
* ``copy_bytes_per_s``: device-to-device ``cudaMemcpy`` of a large buffer (quick 256 MiB, full
  1 GiB), counted as bytes read + bytes written per second (the host probe's convention).
* ``launch_s``: per-launch cost of a tiny elementwise kernel (``cupy.add`` on 16 elements,
  preallocated output): wall time of a burst of launches and one synchronize, over the burst.
* device facts from ``cupy.cuda.runtime.getDeviceProperties``: name, SM count, total memory,
  L2 size, shared memory per SM, clock (when the runtime still reports it).

GPU times use CUDA events around a batch of calls (the best of several rounds: other work on
the device only ever adds time). CuPy is imported lazily, only here (the import-layer rule).
"""

from __future__ import annotations

import functools
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

from workbench.errors import WorkbenchError
from workbench.execution.backend import get_backend

__all__ = ["NoGPUError", "probe_gpu"]

#: Matmul sides and copy size (MiB) by ``quick``.
_MATMUL_SIDES = {True: (2048,), False: (4096, 8192)}
_COPY_MIB = {True: 256, False: 1024}


class NoGPUError(WorkbenchError):
    """CuPy or a CUDA device is not available, so a GPU probe cannot run."""


def _cupy() -> Any:
    """The CuPy module with a usable device, or :class:`NoGPUError` saying why not."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bk = get_backend("cupy")
    if bk.name != "cupy" or not bk.is_gpu:
        why = str(caught[0].message).removesuffix("; using NumPy") if caught else "no CuPy"
        raise NoGPUError(f"no CUDA device: {why}")
    return bk.xp


def _event_time(cp: Any, fn: Callable[[], object], *, rounds: int, min_round_s: float) -> float:
    """Best per-call device time of ``fn`` over ``rounds`` batches (CUDA events), seconds."""
    for _ in range(2):  # warm-up: cuBLAS handle, kernel selection, memory pool
        fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def batch(number: int) -> float:
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        return float(cp.cuda.get_elapsed_time(start, end)) * 1e-3 / number

    one = batch(1)
    number = max(1, min(1000, int(min_round_s / max(one, 1e-7))))
    return min(batch(number) for _ in range(rounds))


def _matmul_rates(cp: Any, sizes: tuple[int, ...], rounds: int) -> dict[str, dict[int, float]]:
    """FLOP/s of square ``cupy.matmul`` per workbench dtype and side."""
    float32 = "tf32" if os.environ.get("CUPY_TF32") == "1" else "fp32"
    out: dict[str, dict[int, float]] = {float32: {}, "fp16": {}}
    for n in sizes:
        a = cp.random.standard_normal((n, n), dtype=cp.float32)
        b = cp.random.standard_normal((n, n), dtype=cp.float32)
        for key, dt in ((float32, cp.float32), ("fp16", cp.float16)):
            x, y = a.astype(dt), b.astype(dt)
            z = cp.empty((n, n), dtype=dt)
            call = functools.partial(cp.matmul, x, y, out=z)
            out[key][n] = 2.0 * n**3 / _event_time(cp, call, rounds=rounds, min_round_s=0.05)
    return out


def _copy_rate(cp: Any, nbytes: int, rounds: int) -> float:
    """Device-to-device memcpy, (read + write) bytes / s."""
    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    call = functools.partial(dst.data.copy_from_device, src.data, src.nbytes)
    return 2.0 * src.nbytes / _event_time(cp, call, rounds=rounds, min_round_s=0.05)


def _launch_s(cp: Any, bursts: int) -> float:
    """Per-launch wall time of a 16-element ``cupy.add`` in bursts of 1000, best burst, s."""
    a = cp.ones(16, dtype=cp.float32)
    out = cp.empty_like(a)
    dev = cp.cuda.Device()
    cp.add(a, a, out=out)
    dev.synchronize()
    best = float("inf")
    for _ in range(bursts):
        t0 = time.perf_counter()
        for _ in range(1000):
            cp.add(a, a, out=out)
        dev.synchronize()
        best = min(best, (time.perf_counter() - t0) / 1000)
    return best


def _device_facts(cp: Any) -> dict[str, Any]:
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"]
    cc = dev.compute_capability
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": str(cc),
        "sm_count": int(props["multiProcessorCount"]),
        "total_memory_bytes": int(props["totalGlobalMem"]),
        "l2_bytes": int(props.get("l2CacheSize", 0) or 0),
        "smem_per_sm_bytes": int(props.get("sharedMemPerMultiprocessor", 0) or 0),
        # NOTE: clockRate (kHz) is gone from CUDA 13's properties; 0 = not reported.
        "clock_hz": float(props.get("clockRate", 0) or 0) * 1e3,
    }


def probe_gpu(quick: bool = False) -> dict[str, Any]:
    """Measure the current CUDA device (module docstring for each figure).

    Args:
        quick: Matmul at 2048 only, a 256 MiB copy and fewer rounds (seconds on an H200);
            otherwise 4096 and 8192 and a 1 GiB copy.

    Returns:
        Plain data: ``device`` (name, compute_capability, sm_count, total_memory_bytes,
        l2_bytes, smem_per_sm_bytes, clock_hz; 0 = not reported), ``matmul_flops_per_s``
        (dtype -> best FLOP/s), ``matmul_by_size`` (dtype -> {side: FLOP/s}),
        ``copy_bytes_per_s`` (bytes/s), ``launch_s`` (seconds), ``quick`` and ``notes`` (how
        each figure was measured).

    Raises:
        NoGPUError: CuPy does not import or sees no device ('no CUDA device: ...').
    """
    cp = _cupy()
    sizes = _MATMUL_SIDES[quick]
    rounds = 3 if quick else 5
    copy_bytes = _COPY_MIB[quick] * 2**20
    facts = _device_facts(cp)
    pool = cp.get_default_memory_pool()
    by_size = _matmul_rates(cp, sizes, rounds)
    pool.free_all_blocks()
    copy = _copy_rate(cp, copy_bytes, rounds)
    pool.free_all_blocks()
    launch = _launch_s(cp, rounds)
    peaks = {k: max(v.values()) for k, v in by_size.items()}
    side_text = "; ".join(
        f"{k} " + ", ".join(f"{n}: {r / 1e12:.3g}" for n, r in v.items())
        for k, v in by_size.items()
    )
    tf32_note = (
        "float32 matmul reported as tf32: CUPY_TF32=1 was set before CuPy imported"
        if "tf32" in peaks
        else "tf32 not measured: CuPy reads CUPY_TF32 only at import (set CUPY_TF32=1 before "
        "running to time tf32 in place of fp32)"
    )
    return {
        "device": facts,
        "matmul_flops_per_s": peaks,
        "matmul_by_size": by_size,
        "copy_bytes_per_s": copy,
        "launch_s": launch,
        "quick": quick,
        "notes": (
            f"matmul TFLOP/s by dtype and side ({side_text}): cupy.matmul into a preallocated "
            f"output, CUDA events around a batch, best of {rounds} batches; peak = best side",
            tf32_note,
            "bf16 not measured: CuPy has no bfloat16 dtype",
            f"copy {copy / 1e9:.4g} GB/s: device-to-device cudaMemcpy of "
            f"{copy_bytes // 2**20} MiB, (read + write) bytes / best batch time (CUDA events)",
            f"launch {launch * 1e6:.3g} us: 16-element cupy.add, wall time of 1000 async "
            f"launches + one synchronize / 1000, best of {rounds} bursts",
            "device facts from cupy.cuda.runtime.getDeviceProperties",
        ),
    }
