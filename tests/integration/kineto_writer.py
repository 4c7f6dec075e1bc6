"""A small Kineto trace writer for tests: explicit host launch times, several streams, NCCL.

Unlike :func:`workbench.evidence.write_kineto_trace` (a launch just before every kernel), each
activity here is launched at a host time the test chooses, so the GPU can lag the host
(GPU-bound) or starve waiting for it (CPU-bound). Files are laid out as PyTorch writes them, and
as Holistic Trace Analysis reads them (``distributedInfo.rank``; ``rank-N.json`` names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CAT = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
_LAUNCH = {"kernel": "cudaLaunchKernel", "memcpy": "cudaMemcpyAsync", "memset": "cudaMemsetAsync"}


@dataclass
class Trace:
    """Events of one rank's trace; times in microseconds from 0."""

    rank: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    corr: int = 0

    def step(self, name: str, ts: float, dur: float, cat: str = "user_annotation") -> None:
        """A host-side range (``ProfilerStep#N``, ``[param|...|measure|...]``...)."""
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
        )

    def launch(
        self, name: str, launch_ts: float, ts: float, dur: float, *, stream: int = 7,
        kind: str = "kernel",
    ) -> None:  # fmt: skip
        """An activity started on the GPU at ``ts``, launched by the host at ``launch_ts``."""
        self.corr += 1
        self.events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": _LAUNCH[kind], "pid": 1, "tid": 1,
             "ts": launch_ts, "dur": 2.0, "args": {"correlation": self.corr}}
        )  # fmt: skip
        args: dict[str, Any] = {"device": 0, "stream": stream, "correlation": self.corr}
        if kind == "kernel":
            args.update(grid=[64, 1, 1], block=[256, 1, 1])
        else:
            args["bytes"] = 1 << 20
        self.events.append(
            {"ph": "X", "cat": _CAT[kind], "name": name, "pid": 0, "tid": stream, "ts": ts,
             "dur": dur, "args": args}
        )  # fmt: skip

    def write(self, directory: Path) -> Path:
        """Write ``rank-N.json`` into ``directory`` (made if absent); returns its path."""
        directory.mkdir(parents=True, exist_ok=True)
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8,
                                  "computeMinor": 0, "numSms": 108}],
            "distributedInfo": {"backend": "nccl", "rank": self.rank, "world_size": 2},
            "traceEvents": self.events,
        }  # fmt: skip
        path = directory / f"rank-{self.rank}.json"
        path.write_text(json.dumps(doc))
        return path


GEMM = "ampere_sgemm_128x64_nn"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ...)"


def gpu_bound(steps: int = 6, rank: int = 0) -> Trace:
    """Host launches a step in 1 ms; the GPU needs 10 ms (two streams), so it lags ever more."""
    t = Trace(rank=rank)
    gpu = 100.0
    for s in range(steps):
        host = 10.0 + 1000.0 * s
        t.step(f"ProfilerStep#{s}", host, 1000.0)
        for j in range(8):
            t.launch(GEMM, host + 50 + 100 * j, gpu, 1100.0)
            gpu += 1100.0 + 20.0
        # A side-stream kernel that outlives the step's last main-stream one.
        t.launch(ADD, host + 900, gpu - 600.0, 1500.0, stream=13)
        gpu += 300.0
    return t


def cpu_bound(steps: int = 5, rank: int = 0) -> Trace:
    """The GPU waits for the host: 2 ms of kernels in each 10 ms step."""
    t = Trace(rank=rank)
    for s in range(steps):
        host = 10.0 + 10000.0 * s
        t.step(f"ProfilerStep#{s}", host, 10000.0)
        for j in range(4):
            ts = host + 2000.0 * j + 100
            t.launch(ADD if j % 2 else GEMM, ts - 5, ts, 500.0)
    return t


def nccl_overlap(steps: int = 5, rank: int = 0) -> Trace:
    """Compute on stream 7 and an all-reduce on stream 20 that half overlaps it; a memcpy too."""
    t = Trace(rank=rank)
    for s in range(steps):
        host = 10.0 + 5000.0 * s
        t.step(f"ProfilerStep#{s}", host, 5000.0)
        t.launch(GEMM, host + 10, host + 100, 2000.0)
        t.launch(NCCL, host + 20, host + 1100, 2000.0, stream=20)
        t.launch(ADD, host + 30, host + 2150, 400.0)
        t.launch("Memcpy HtoD (Pageable -> Device)", host + 40, host + 3300, 300.0, kind="memcpy",
                 stream=21)  # fmt: skip
    return t


def memcpy_heavy(steps: int = 5, rank: int = 0) -> Trace:
    """Copies dominate: HtoD, DtoH and memsets on their own streams, a little compute."""
    t = Trace(rank=rank)
    for s in range(steps):
        host = 10.0 + 4000.0 * s
        t.step(f"ProfilerStep#{s}", host, 4000.0)
        t.launch("Memcpy HtoD (Pageable -> Device)", host + 5, host + 50, 1500.0, kind="memcpy",
                 stream=21)  # fmt: skip
        t.launch("Memset (Device)", host + 6, host + 1600, 100.0, kind="memset", stream=21)
        t.launch(GEMM, host + 7, host + 1000, 800.0)
        t.launch("Memcpy DtoH (Device -> Pinned)", host + 8, host + 1900, 1200.0, kind="memcpy",
                 stream=22)  # fmt: skip
    return t


def no_steps(rank: int = 0) -> Trace:
    """No step markers at all: a long idle warm-up, then a burst of kernels on two streams."""
    t = Trace(rank=rank)
    t.launch(GEMM, 5, 10, 50.0)
    for j in range(20):
        ts = 200000.0 + 300.0 * j
        t.launch(GEMM if j % 3 else ADD, ts - 10, ts, 250.0, stream=7 + j % 2)
    return t


KINDS = {
    "gpu_bound": gpu_bound,
    "cpu_bound": cpu_bound,
    "nccl_overlap": nccl_overlap,
    "memcpy_heavy": memcpy_heavy,
    "no_steps": no_steps,
}
