"""Ingest a ~50 MB Kineto trace: time and peak memory of read_trace against json.load.

Run: ``python benchmarks/bench_trace_ingest.py [--mb 50]``. It writes a synthetic trace (kernels of
a transformer-like step, each with its ``cudaLaunchKernel`` runtime event and an ``aten::`` cpu_op,
``ProfilerStep#N`` annotations) with the library's own writer into a temporary folder, then times
:func:`workbench.evidence.read_trace` and, as the baseline in the same run, ``json.load`` of the
same file (which only parses: it builds no run). Peak memory is Python's allocations under
``tracemalloc``, measured in a second pass so tracing does not slow the timed one.
Goal (issue 11): ingest under 10 s, with memory bounded well under the whole-file load.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from workbench.evidence import MeasuredKernel, read_trace, write_kineto_trace

_STEP = (
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1", 4e-4),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false>>", 3e-4),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", 5e-5),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>", 6e-5),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps>>", 4e-5),
)
_KERNELS_PER_ITERATION = 2000


def synthetic_kernels(count: int) -> list[MeasuredKernel]:
    """``count`` kernels in iterations of 2,000, one stream, 5 us launch gaps."""
    out, t = [], 1.0
    for n in range(count):
        name, dur = _STEP[n % len(_STEP)]
        out.append(
            MeasuredKernel(
                name=name, category="other", rule="", start_s=t, duration_s=dur, device=0,
                stream=7, iteration=n // _KERNELS_PER_ITERATION, grid=(132, 4, 1),
                block=(256, 1, 1), registers_per_thread=168, shared_memory_bytes=65536,
            )
        )  # fmt: skip
        t += dur + 5e-6
    return out


def _measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(seconds, peak MiB): one timed call, then one call under tracemalloc."""
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak / 2**20


def main() -> None:
    """Write the trace, ingest it, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="trace size to aim for, MB")
    args = parser.parse_args()
    # NOTE: about 640 bytes of JSON per kernel (kernel + runtime + cpu_op event), measured.
    count = int(args.mb * 1e6 / 640)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        write_kineto_trace(path, synthetic_kernels(count), cpu_ops=True)
        size_mb = path.stat().st_size / 1e6
        run = read_trace(path)
        ours_s, ours_mib = _measure(lambda: read_trace(path))

        def baseline() -> object:
            with open(path, encoding="utf-8") as f:
                return json.load(f)

        base_s, base_mib = _measure(baseline)
    print(f"trace            {size_mb:.1f} MB, {len(run.kernels)} kernels, {run.repeats} steps")
    print(f"read_trace       {ours_s:.2f} s, peak {ours_mib:.0f} MiB (goal < 10 s)")
    print(f"json.load        {base_s:.2f} s, peak {base_mib:.0f} MiB (parse only, baseline)")
    print(f"memory ratio     {ours_mib / base_mib:.2f} of json.load's peak")
    print(f"median iteration {run.median_iteration_s() * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
