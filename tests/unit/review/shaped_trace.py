"""Small Kineto traces with recorded shapes (``record_shapes=True``), for the expected-vs-measured
and measured-pair tests: each step runs the same operator calls, each call a ``cpu_op`` with
``Input Dims``/``Input type`` holding its runtime launches, each launch one kernel on the GPU."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: One call: (operator, input dims, input types, [(kernel name, duration s), ...]).
Call = tuple[str, list[list[int]], list[str], list[tuple[str, float]]]


def write_shaped_trace(
    path: Path,
    calls: Sequence[Call],
    *,
    steps: int = 4,
    device: str = "NVIDIA A100-SXM4-80GB",
    extra_per_step_s: Sequence[float] | None = None,
    metadata: dict[str, Any] | None = None,
    shapes: bool = True,
    wrap: str | None = None,
    module: str = "",
) -> Path:
    """Write ``steps`` ProfilerSteps of ``calls``; ``extra_per_step_s[i]`` idles step i longer.

    ``wrap`` nests every call inside an outer ``cpu_op`` of that name (``aten::linear`` around
    ``aten::addmm``), as PyTorch records them; the innermost one launched the kernels. ``module``
    is every call's ``Module Hierarchy`` (``with_modules=True``).
    """
    events: list[dict[str, Any]] = []
    t_cpu, t_gpu, corr, ext = 0.0, 1000.0, 1, 1
    for step in range(steps):
        step_start = t_cpu
        gpu_step_start = t_gpu
        for name, dims, types, kernels in calls:
            op_start = t_cpu
            inner: list[dict[str, Any]] = []
            for kname, dur in kernels:
                t_cpu += 2.0
                events.append(_runtime(t_cpu, corr))
                events.append(_kernel(kname, t_gpu, dur * 1e6, corr))
                t_gpu += dur * 1e6 + 1.0
                corr += 1
            t_cpu += 2.0
            args: dict[str, Any] = {"External id": ext, "Module Hierarchy": module}
            if shapes:
                args.update({"Input Dims": dims, "Input type": types})
            inner.append(_op(name, op_start + 0.5, t_cpu - op_start - 0.5, args))
            ext += 1
            if wrap:
                inner.append(_op(wrap, op_start, t_cpu - op_start + 0.5, {"External id": ext}))
                ext += 1
            events.extend(inner)
            t_cpu += 1.0
        extra = extra_per_step_s[step] if extra_per_step_s else 0.0
        t_gpu = max(t_gpu, gpu_step_start) + 50.0 + extra * 1e6
        t_cpu = max(t_cpu, t_gpu - 40.0)
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1,
             "tid": 1, "ts": step_start, "dur": t_cpu - step_start}
        )  # fmt: skip
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device, "computeMajor": 8, "computeMinor": 0}],
        **(metadata or {}),
        "traceEvents": events,
    }
    path.write_text(json.dumps(doc))
    return path


def _op(name: str, ts: float, dur: float, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _runtime(ts: float, corr: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 1.0, "args": {"correlation": corr, "External id": corr}}  # fmt: skip


def _kernel(name: str, ts: float, dur: float, corr: int) -> dict[str, Any]:
    args = {"device": 0, "stream": 7, "correlation": corr, "External id": corr}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


MM = ("aten::mm", [[4096, 4096], [4096, 4096]], ["float", "float"])
SGEMM = "volta_sgemm_128x64_nn"
TENSOROP = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
