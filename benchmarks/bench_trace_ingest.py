"""Ingest a generated Kineto trace beside Holistic Trace Analysis's parser: time and peak memory.

Run: ``python benchmarks/bench_trace_ingest.py [--size-mb 200] [--big-mb 1000] [--no-hta]``.
It writes, into a temporary folder, a Kineto trace of about ``--size-mb`` MB with the event mix of
a real training step: ``ProfilerStep#N`` ranges, an ``aten::`` ``cpu_op`` and a
``cudaLaunchKernel`` (or ``cudaMemcpyAsync``) runtime event per GPU activity, linked by
correlation id, kernels on two streams (compute and a side stream), host-to-device and
device-to-host memcpys, with the GPU lagging the host a little more each step. Then, each in its
own child process (so the two never share a heap), it reads the trace with
:func:`workbench.evidence.read_trace` and with HTA 0.5's ``TraceAnalysis(trace_dir=...)`` (its
parser, ``hta.common.trace.parse_trace_file``, plus the per-rank set-up a user gets), and prints
wall time, peak resident memory (``ru_maxrss`` of the child, MiB, and the rise over its resident
memory after imports) and the ratios. Last, it reads a ``--big-mb`` trace with the workbench
alone. Goals (issue 17): at least 5x faster than HTA and at most 1/3 of its peak memory on the
200 MB trace; under 1 GiB peak on the 1 GB trace. Missed goals are printed as such.

Not part of the test suite (it takes minutes at the default sizes); small sizes run in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_KERNELS = (
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1", 400.0),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, cutlass::bf16>>", 3e2),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", 50.0),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>", 60.0),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps>>", 40.0),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 250.0),
)
_OPS = ("aten::mm", "aten::_flash_attention_forward", "aten::gelu", "aten::native_layer_norm",
        "aten::mean", "c10d::allreduce_")  # fmt: skip
_PER_STEP = 2000
# NOTE: real correlation ids run into the millions; HTA 0.5 fails on a trace whose ids fit in 16
# bits while its event indices do not (it downcasts the column, then writes indices into it).
_FIRST_CORRELATION = 1_000_000
_GOAL_SPEEDUP = 5.0
_GOAL_MEMORY_SHARE = 1 / 3
_GOAL_BIG_MIB = 1024.0


def write_trace(path: Path, target_bytes: int, *, distinct: bool = False) -> dict[str, int]:
    """Write a Kineto trace of about ``target_bytes`` to ``path``; counts of what it holds.

    ``distinct``: every kernel gets a name of its own (``..._<n>``), the worst case for
    classification and interning.
    """
    n = steps = 0
    host_us, gpu_us = 1_000.0, 1_200.0
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, '
                '"name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, '
                '"numSms": 108}], '
                '"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1}, '
                '"traceEvents": [\n')  # fmt: skip
        first = True
        while f.tell() < target_bytes:
            step_start = host_us
            lines = []
            for i in range(_PER_STEP):
                n += 1
                corr = _FIRST_CORRELATION + n
                memcpy = i % 50 == 0
                name, dur = ("Memcpy HtoD (Pinned -> Device)", 80.0) if memcpy else _KERNELS[i % 6]
                if distinct and not memcpy:
                    name = f"{name}_{n}"
                op = "aten::copy_" if memcpy else _OPS[i % 6]
                stream = 20 if i % 6 == 5 else 7
                gpu_us = max(gpu_us, host_us + 5.0) + 2.0
                lines.append(
                    f'{{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": 100, "tid": 100, '
                    f'"ts": {host_us:.3f}, "dur": 6.0, "args": {{"External id": {n}, '
                    f'"Sequence number": {n}, "Fwd thread id": 0, "Record function id": 0}}}}'
                )
                launch = "cudaMemcpyAsync" if memcpy else "cudaLaunchKernel"
                lines.append(
                    f'{{"ph": "X", "cat": "cuda_runtime", "name": "{launch}", "pid": 100, '
                    f'"tid": 100, "ts": {host_us + 1.0:.3f}, "dur": 4.0, "args": '
                    f'{{"External id": {n}, "cbid": 211, "correlation": {corr}}}}}'
                )
                if memcpy:
                    lines.append(
                        f'{{"ph": "X", "cat": "gpu_memcpy", "name": "{name}", "pid": 0, '
                        f'"tid": {stream}, "ts": {gpu_us:.3f}, "dur": {dur}, "args": {{'
                        f'"External id": {n}, "device": 0, "context": 1, "stream": {stream}, '
                        f'"correlation": {corr}, "bytes": 4194304, '
                        '"memory bandwidth (GB/s)": 52.4}}'
                    )
                else:
                    lines.append(
                        f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, '
                        f'"tid": {stream}, "ts": {gpu_us:.3f}, "dur": {dur}, "args": {{'
                        f'"External id": {n}, "queued": 0, "device": 0, "context": 1, '
                        f'"stream": {stream}, "correlation": {corr}, "registers per thread": 168, '
                        '"shared memory": 65536, "blocks per SM": 1.2, "warps per SM": 9.6, '
                        '"grid": [132, 4, 1], "block": [256, 1, 1], '
                        '"est. achieved occupancy %": 12}}'
                    )
                host_us += 10.0
                gpu_us += dur
            # NOTE: the step's range covers its launches; the GPU finishes later (it lags).
            lines.append(
                f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{steps}", '
                f'"pid": 100, "tid": 100, "ts": {step_start:.3f}, '
                f'"dur": {host_us - step_start:.3f}, "args": {{"External id": 0}}}}'
            )
            f.write(("" if first else ",\n") + ",\n".join(lines))
            first = False
            steps += 1
            host_us += 500.0
        f.write("\n]}\n")
    return {"activities": n, "steps": steps, "bytes": path.stat().st_size}


def _child(which: str, path: str) -> None:
    """Read ``path`` with one side, print its figures as one JSON line."""
    if which == "hta":
        import logging

        logging.disable(logging.WARNING)
        from hta.trace_analysis import TraceAnalysis
    else:
        from workbench.evidence import read_trace
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    if which == "hta":
        analysis = TraceAnalysis(trace_dir=str(Path(path).parent), include_last_profiler_step=True)
        events = sum(len(df) for df in analysis.t.traces.values())
    else:
        run = read_trace(path)
        events = len(run.kernels)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(json.dumps({"seconds": seconds, "peak_mib": peak, "base_mib": base, "rows": events}))


def _measure(which: str, path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", which, str(path)],
        capture_output=True, text=True, check=False, env={**os.environ},
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{which} failed on {path}:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _line(label: str, r: dict[str, float]) -> str:
    rise = r["peak_mib"] - r["base_mib"]
    return (
        f"{label:<10} {r['seconds']:8.2f} s   peak RSS {r['peak_mib']:7.0f} MiB "
        f"(+{rise:.0f} MiB over imports), {int(r['rows'])} rows"
    )


def _verdict(ok: bool) -> str:
    return "goal met" if ok else "GOAL NOT MET"


def main() -> None:
    """Generate the traces, read them, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=200.0, help="side-by-side trace, MB")
    parser.add_argument("--big-mb", type=float, default=1000.0, help="workbench-only trace, MB")
    parser.add_argument("--no-hta", action="store_true", help="skip HTA (workbench side only)")
    parser.add_argument(
        "--distinct-mb", type=float, default=0.0,
        help="also read a trace of this size, MB, whose kernels all have distinct names",
    )  # fmt: skip
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rank0" / "trace.json"
        path.parent.mkdir()
        made = write_trace(path, int(args.size_mb * 1e6))
        print(
            f"trace      {made['bytes'] / 1e6:.1f} MB: {made['activities']} GPU activities "
            f"(each with a cpu_op and a runtime launch), {made['steps']} ProfilerSteps"
        )
        ours = _measure("workbench", path)
        print(_line("workbench", ours))
        if not args.no_hta:
            hta = _measure("hta", path)
            print(_line("HTA 0.5", hta))
            speedup = hta["seconds"] / ours["seconds"]
            share = ours["peak_mib"] / hta["peak_mib"]
            rise = (ours["peak_mib"] - ours["base_mib"]) / (hta["peak_mib"] - hta["base_mib"])
            print(f"speed      {speedup:.1f}x HTA's ({_verdict(speedup >= _GOAL_SPEEDUP)}: >= 5x)")
            print(
                f"memory     {share:.2f} of HTA's peak RSS, {rise:.2f} of its rise over imports "
                f"({_verdict(share <= _GOAL_MEMORY_SHARE)}: <= 1/3)"
            )
        path.unlink()
        if args.big_mb > 0:
            made = write_trace(path, int(args.big_mb * 1e6))
            big = _measure("workbench", path)
            print(f"big trace  {made['bytes'] / 1e6:.1f} MB, {made['activities']} activities")
            print(_line("workbench", big))
            ok = big["peak_mib"] < _GOAL_BIG_MIB
            print(f"bounded    peak {big['peak_mib']:.0f} MiB ({_verdict(ok)}: < 1 GiB)")
            path.unlink()
        if args.distinct_mb > 0:
            made = write_trace(path, int(args.distinct_mb * 1e6), distinct=True)
            print(f"distinct   {made['bytes'] / 1e6:.1f} MB, {made['activities']} distinct names")
            print(_line("workbench", _measure("workbench", path)))


if __name__ == "__main__":
    main()
