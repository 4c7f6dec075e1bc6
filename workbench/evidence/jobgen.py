"""Generate a job's folder of per-rank Kineto traces (tests, benchmarks, lessons), streamed.

A synchronous data-parallel job, simulated on one common clock and written on each rank's own
(each rank's timestamps carry a different offset, so nothing may compare them across ranks). Each
step, on every rank::

    for bucket in range(buckets):
        for layer in range(layers):
            gemm          (gemm_s)
            elementwise   (elementwise_s)
        all-reduce        starts when this rank arrives; the data moves once the last rank has
                          arrived (transfer_s), so an early rank waits inside the kernel
    next step starts when every rank has finished its last all-reduce (plus host_gap_s)

``slow=(rank, category, factor)`` makes one rank's kernels of one category (``gemm``,
``elementwise`` or ``collective``) ``factor`` times as long: its peers then wait for it in the
all-reduces (a slow GEMM), or for its late exit from one (a slow collective). ``jitter`` is a
seeded zero-mean relative noise on every kernel. Events are written one by one (a 200 MB rank
never sits in memory), atomically.

>>> import tempfile
>>> files = write_job_folder(tempfile.mkdtemp(), ranks=2, steps=3, layers=2)
>>> [f.name for f in files]
['rank-0.json', 'rank-1.json']
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from workbench.evidence._source import atomic_path

__all__ = ["JobShape", "write_job_folder"]

_NAMES = {
    "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
    "elementwise": "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>",
    "collective": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, ncclWork*)",
}
#: Bytes one generated kernel (its launch event and itself) takes in the file, about.
_BYTES_PER_KERNEL = 400


@dataclass(frozen=True, slots=True, kw_only=True)
class JobShape:
    """Durations of the generated job's kernels, s (base values, before slowing and jitter)."""

    gemm_s: float = 200e-6
    elementwise_s: float = 30e-6
    transfer_s: float = 400e-6
    host_gap_s: float = 50e-6


def layers_for(target_bytes: int, *, steps: int, buckets: int) -> int:
    """Layers per bucket that make a rank's file about ``target_bytes`` bytes."""
    per_layer = 2 * _BYTES_PER_KERNEL * steps * buckets
    return max(1, target_bytes // per_layer)


def write_job_folder(
    folder: str | os.PathLike[str],
    *,
    ranks: int = 4,
    steps: int = 6,
    buckets: int = 4,
    layers: int = 8,
    jitter: float = 0.0,
    slow: tuple[int, str, float] | None = None,
    shape: JobShape | None = None,
    seed: int = 0,
    gz: bool = False,
) -> list[Path]:
    """Write one Kineto trace per rank into ``folder`` (created if missing).

    Args:
        folder: Where the rank files go (``rank-R.json`` or ``.json.gz``).
        ranks: World size.
        steps: ``ProfilerStep#N`` steps (numbered from 1).
        buckets: All-reduces per step.
        layers: GEMM + elementwise pairs before each all-reduce.
        jitter: Relative standard deviation of the seeded noise on every kernel.
        slow: ``(rank, category, factor)``: that rank's kernels of that category last
            ``factor`` times as long.
        shape: Base durations (:class:`JobShape`).
        seed: Seed of the noise.
        gz: Write gzip-compressed files.

    Returns:
        The files written, in rank order.
    """
    shape = shape or JobShape()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    rngs = [random.Random(seed * 1_000_003 + r) for r in range(ranks)]
    paths = [out / f"rank-{r}.json{'.gz' if gz else ''}" for r in range(ranks)]
    with contextlib.ExitStack() as stack:
        # NOTE: LIFO: the files close before their temporary paths are renamed into place
        tmps = [stack.enter_context(atomic_path(p)) for p in paths]
        opener = gzip.open if gz else open
        files: list[IO[str]] = [
            stack.enter_context(opener(t, "wt", encoding="utf-8")) for t in tmps
        ]
        writers = _Writers(files)
        t = 1.0
        for step in range(1, steps + 1):
            t = _step(writers, rngs, step, t, buckets, layers, jitter, slow, shape)
        writers.finish(t)
    return paths


def _factor(rank: int, category: str, slow: tuple[int, str, float] | None) -> float:
    return slow[2] if slow is not None and slow[0] == rank and slow[1] == category else 1.0


def _step(
    w: _Writers,
    rngs: list[random.Random],
    step: int,
    t0: float,
    buckets: int,
    layers: int,
    jitter: float,
    slow: tuple[int, str, float] | None,
    shape: JobShape,
) -> float:
    """Write one step on every rank from common time ``t0``; the next step's start, s."""
    n = len(rngs)
    w.step_marker(step, t0)
    now = [t0] * n

    def dur(r: int, category: str, base: float) -> float:
        noise = 1.0 + rngs[r].gauss(0.0, jitter) if jitter else 1.0
        return max(base * _factor(r, category, slow) * noise, 1e-7)

    for _ in range(buckets):
        for r in range(n):
            for _ in range(layers):
                now[r] = w.kernel(r, "gemm", now[r], dur(r, "gemm", shape.gemm_s))
                now[r] = w.kernel(r, "elementwise", now[r], dur(r, "elementwise",
                                                                 shape.elementwise_s))  # fmt: skip
        last = max(now)
        for r in range(n):
            end = last + dur(r, "collective", shape.transfer_s)
            now[r] = w.kernel(r, "collective", now[r], end - now[r])
    return max(now) + shape.host_gap_s


class _Writers:
    """One open Kineto file per rank, written event by event on the rank's own clock."""

    def __init__(self, files: list[IO[str]]) -> None:
        self.files = files
        self.ranks = len(files)
        # NOTE: real correlation ids run into the millions (HTA 0.5 fails on a multi-rank trace
        # whose ids fit in 16 bits while its event indices do not)
        self.corr = [1_000_000] * self.ranks
        self.steps: list[list[tuple[int, float]]] = [[] for _ in files]
        self.first = [True] * self.ranks
        for r, f in enumerate(files):
            head = {
                "schemaVersion": 1,
                "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                      "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
                "distributedInfo": {"backend": "nccl", "rank": r, "world_size": self.ranks},
            }  # fmt: skip
            f.write("{\n")
            for key, value in head.items():
                f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
            f.write('  "traceEvents": [\n')

    def _emit(self, r: int, text: str) -> None:
        f = self.files[r]
        if not self.first[r]:
            f.write(",\n")
        self.first[r] = False
        f.write(text)

    def _us(self, r: int, t: float) -> float:
        """Common time ``t`` on rank ``r``'s clock, microseconds (each rank its own offset)."""
        return round((t + 1000.0 * r) * 1e6, 3)

    def step_marker(self, step: int, t: float) -> None:
        for r in range(self.ranks):
            self.steps[r].append((step, t - 20e-6))

    def kernel(self, r: int, category: str, start: float, duration: float) -> float:
        self.corr[r] += 1
        c = self.corr[r]
        stream = 20 if category == "collective" else 7
        self._emit(r, f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", '
                      f'"pid": 1, "tid": 1, "ts": {self._us(r, start - 5e-6)}, "dur": 2.0, '
                      f'"args": {{"correlation": {c}}}}}')  # fmt: skip
        self._emit(r, f'{{"ph": "X", "cat": "kernel", "name": {json.dumps(_NAMES[category])}, '
                      f'"pid": 0, "tid": {stream}, "ts": {self._us(r, start)}, '
                      f'"dur": {round(duration * 1e6, 3)}, "args": {{"device": 0, '
                      f'"stream": {stream}, "correlation": {c}}}}}')  # fmt: skip
        return start + duration

    def finish(self, end: float) -> None:
        for r in range(self.ranks):
            marks = [*self.steps[r], (None, end)]
            for (step, start), (_, stop) in itertools.pairwise(marks):
                self._emit(r, f'{{"ph": "X", "cat": "user_annotation", '
                              f'"name": "ProfilerStep#{step}", "pid": 1, "tid": 1, '
                              f'"ts": {self._us(r, start)}, '
                              f'"dur": {round((stop - start) * 1e6, 3)}}}')  # fmt: skip
            self.files[r].write("\n  ]\n}\n")
