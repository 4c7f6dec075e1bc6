"""Candidate times of one mapspace as arrays, and the helpers every scorer shares.

A scorer (:mod:`workbench.cost.score_gemm`, :mod:`workbench.cost.score_kernels`) turns a
mapspace's arrays into compute, pipeline and per-level memory times; :func:`finish` takes the
execution time as the max of the pipeline and every level's traffic time and builds the sort key
the search ranks by (spilling candidates after every fitting one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from workbench.cost.issue import tile_issue
from workbench.hw.schema import Hardware

__all__ = ["Scored", "at", "finish", "memory_times", "next_level", "with_issue"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored:
    """Times of every candidate of one mapspace (arrays) and the chosen index."""

    compute_s: np.ndarray
    pipeline_s: np.ndarray
    exec_s: np.ndarray
    memory_s: dict[str, np.ndarray]
    key: np.ndarray  # sort key: execution time, spilling candidates after every fitting one
    issue_s: np.ndarray | float = 0.0  # software tile-issue time inside pipeline_s (hosts)

    def top(self, k: int) -> np.ndarray:
        """Indices of the ``k`` best candidates, best first (ties keep mapspace order)."""
        key = self.key.ravel()
        if k == 1:
            return np.array([int(np.argmin(key))])
        if k < key.size:
            part = np.argpartition(key, k - 1)[:k]
            return part[np.lexsort((part, key[part]))]
        return np.argsort(key, kind="stable")


def at(values: np.ndarray | float, shape: tuple[int, ...], i: int) -> float:
    """Candidate ``i`` (a flat index) of an array that broadcasts to the mapspace ``shape``."""
    return np.broadcast_to(values, shape).flat[i]


def memory_times(hw: Hardware, traffic: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Seconds to move each level's traffic at its sustained bandwidth."""
    return {
        lvl.name: traffic[lvl.name] / lvl.sustained_bytes_per_s
        for lvl in hw.memory
        if lvl.name in traffic
    }


def next_level(hw: Hardware):
    """The memory level just outside the per-core SRAM (where K-step loads come from)."""
    s = hw.memory.index(hw.sram)
    return hw.memory[s + 1]


def with_issue(sc: Scored, issue_s: np.ndarray | float) -> Scored:
    """``sc`` with its software tile-issue time (hosts) recorded."""
    return replace(sc, issue_s=issue_s)


def finish(kernel, hw, traffic, compute, pipeline, fits, mem=None, penalty=0.0) -> Scored:
    """Execution time and sort key of every candidate, seconds.

    ``exec = max(pipeline, level time + ramp for every level)``: a level's bytes stream at its
    bandwidth only after the first request has come back, and the kernel ends when its last
    stores have landed (:class:`~workbench.cost.issue.Streaming`); the pipeline
    carries its own prologue and drain.
    """
    mem = mem if mem is not None else memory_times(hw, traffic)
    streaming = tile_issue(hw).streaming(kernel, hw)
    exec_s = pipeline.copy()
    for name, t in mem.items():
        exec_s = np.maximum(exec_s, t + streaming.ramp_s[name])
    stream = streaming.serial_s
    if stream > 0:
        # NOTE: streaming the issuing core does itself adds to the calls (0 on chips).
        exec_s = np.maximum(exec_s, pipeline + stream)
    # Spilling candidates sort after every fitting one.
    key = exec_s + penalty + np.where(fits, 0.0, 1e9)
    return Scored(compute_s=compute, pipeline_s=pipeline, exec_s=exec_s, memory_s=mem, key=key)
