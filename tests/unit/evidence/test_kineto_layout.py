"""A trace hand-written in the exact layout PyTorch's profiler emits (epoch clock, extra args)."""

from __future__ import annotations

import json

import pytest

from workbench.evidence import read_trace

T0 = 1_700_000_000_000_000  # microseconds since the epoch, as older Kineto versions write


def _ev(cat, name, ts, dur, pid, tid, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _pytorch_layout_trace():
    common = {"Trace name": "PyTorch Profiler", "Trace iteration": 0}
    events = [
        {"name": "process_name", "ph": "M", "ts": T0, "pid": 0, "tid": 0,
         "args": {"name": "GPU 0"}},
        _ev("user_annotation", "ProfilerStep#7", T0 + 100, 4000, 4242, 4242, **common),
        _ev("user_annotation", "ProfilerStep#8", T0 + 4200, 4000, 4242, 4242, **common),
        _ev("cpu_op", "aten::mm", T0 + 150, 60, 4242, 4242, **common, **{"Input Dims": [[64, 64]]}),
        # The kernel event comes before its launch in the file, as Kineto writes them.
        _ev("kernel", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>",
            T0 + 900, 45, 0, 7, **{"External id": 11, "queued": 0, "device": 0, "context": 1,
            "stream": 7, "correlation": 11, "registers per thread": 232, "shared memory": 98304,
            "blocks per SM": 0.59, "warps per SM": 2.37, "grid": [32, 1, 2],
            "block": [128, 1, 1], "est. achieved occupancy %": 0}),
        _ev("cuda_runtime", "cudaLaunchKernel", T0 + 200, 10, 4242, 4242,
            **{"External id": 11, "cbid": 211, "correlation": 11}),
        # Launched in step 7 but running during step 8's CPU window: it belongs to step 7.
        _ev("kernel", "void at::native::vectorized_elementwise_kernel<4, AddFunctor>",
            T0 + 4300, 5, 0, 7, device=0, stream=7, correlation=12, grid=[80, 1, 1],
            block=[128, 1, 1], **{"registers per thread": 16, "shared memory": 0}),
        _ev("cuda_runtime", "cudaLaunchKernel", T0 + 4000, 8, 4242, 4242, correlation=12),
        _ev("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", T0 + 4400, 3, 0, 7,
            device=0, context=1, stream=7, correlation=13, bytes=4096,
            **{"memory bandwidth (GB/s)": 1.3}),
        _ev("cuda_runtime", "cudaMemcpyAsync", T0 + 4390, 4, 4242, 4242, correlation=13),
        _ev("kernel", "void at::native::reduce_kernel<512, 1>", T0 + 5000, 20, 0, 7,
            device=0, stream=7, correlation=14),
        _ev("cuda_runtime", "cudaLaunchKernel", T0 + 4900, 5, 4242, 4242, correlation=14),
        {"ph": "s", "id": 11, "pid": 4242, "tid": 4242, "ts": T0 + 200, "cat": "ac2g",
         "name": "ac2g"},
    ]  # fmt: skip
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB",
                              "totalGlobalMem": 42505207808, "computeMajor": 8,
                              "computeMinor": 0, "numSms": 108}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "traceEvents": events,
        "traceName": "host_4242.1700000000.pt.trace.json",
    }  # fmt: skip


def test_pytorch_layout_reads_with_steps_from_launches(tmp_path):
    path = tmp_path / "host.pt.trace.json"
    path.write_text(json.dumps(_pytorch_layout_trace(), indent=4))
    run = read_trace(path)
    assert [(k.category, k.iteration) for k in run.kernels] == [
        ("gemm", 7),
        ("elementwise", 7),
        ("copy", 8),
        ("reduction", 8),
    ]
    gemm = run.kernels[0]
    assert gemm.duration_s == pytest.approx(45e-6)
    assert gemm.start_s == pytest.approx(800e-6)  # from the first timed event, step 7 at T0 + 100
    assert gemm.grid == (32, 1, 2)
    assert gemm.registers_per_thread == 232
    assert run.tag("device") == "NVIDIA A100-SXM4-40GB"
    assert run.tag("compute_capability") == "8.0"
    assert run.tag("driver") == "unknown"
    # Step 7 on the GPU: T0 + 900..945 us and 4300..4305 us, and step 8 starts at T0 + 4400 us:
    # a 3500 us period with 50 us busy.
    step7 = run.iterations[0]
    assert step7.index == 7
    assert step7.wall_s == pytest.approx(3500e-6)
    assert step7.kernel_s == pytest.approx(50e-6)
    assert step7.gap_s == pytest.approx(3450e-6)
    # Step 8, the last, is its GPU span: from T0 + 4400 us to its last activity's end (its
    # CPU-side step, which runs on to T0 + 8200 us, is host time, not GPU period).
    step8 = run.iterations[1]
    assert step8.copy_s == pytest.approx(3e-6)
    assert step8.kernel_s == pytest.approx(20e-6)
    assert step8.wall_s == pytest.approx(620e-6)
