"""Measured runs in: profiler traces (Kineto JSON, Nsight Systems SQLite) -> :class:`MeasuredRun`.

This package sits low in the pipeline, beside ``models/``: it imports ``errors``, ``ir`` and ``hw``
at most. Matching measured kernels to a mapping sheet lives in
:mod:`workbench.review.join.matching`, where both are known.

Modules: :mod:`~workbench.evidence.run` (the types, statistics over repeats, JSON round trip),
:mod:`~workbench.evidence.kineto` and :mod:`~workbench.evidence.nsys` (readers and test writers),
:mod:`~workbench.evidence.categories` (kernel classification rules),
:mod:`~workbench.evidence.timeline` (per-iteration wall, kernel, copy and gap time),
:class:`Intervals` (the one union of time intervals every busy-time figure uses),
:mod:`~workbench.evidence.breakdown` (GPU step windows; HTA's temporal breakdown per rank),
:mod:`~workbench.evidence.copies` (memcpys and memsets by direction: bytes, bandwidth),
:mod:`~workbench.evidence.launches` (host-side launches per stream: runtime call time, launch
delay, queue length),
:mod:`~workbench.evidence.merge` (per-rank traces of one job, merged into one run),
:mod:`~workbench.evidence.job` (a job's folder: each rank reduced on its own to a small summary),
:mod:`~workbench.evidence.stragglers` (the summaries combined: the job's step time, collective
waits, straggler ranks and their kernel category), :mod:`~workbench.evidence.jobgen` (generated
job folders for tests and benchmarks) and
:mod:`~workbench.evidence.compare` (the shift between two runs, beyond noise or not).

>>> import tempfile, pathlib
>>> k = MeasuredKernel(name="sm90_xmma_gemm_f16f16_f32", category="gemm", rule="name~gemm",
...                    start_s=1.0, duration_s=2e-3, device=0, stream=7, iteration=1)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.json"
>>> run = read_trace(write_kineto_trace(path, [k]))
>>> run.format, run.kernels[0].category, run.repeats, run.tag("driver")
('kineto', 'gemm', 1, 'unknown')
"""

from __future__ import annotations

import os
from pathlib import Path

from workbench.evidence._intervals import Intervals
from workbench.evidence._source import DEFAULT_MAX_BYTES, check_trace_file, sniff
from workbench.evidence.breakdown import RankBreakdown, temporal_breakdown
from workbench.evidence.categories import classify
from workbench.evidence.compare import Shift, compare_runs, paired_shift95, shift_interval95
from workbench.evidence.kineto import read_kineto, read_kineto_and_operators, write_kineto_trace
from workbench.evidence.merge import merge_runs, read_rank_traces
from workbench.evidence.nsys import read_nsys, write_nsys_sqlite
from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import (
    CATEGORIES,
    IterationStats,
    MeasuredKernel,
    MeasuredRun,
    TraceError,
)
from workbench.evidence.timeline import time_by_name, union_s

__all__ = [
    "CATEGORIES",
    "DEFAULT_MAX_BYTES",
    "Intervals",
    "IterationStats",
    "MeasuredKernel",
    "MeasuredRun",
    "RankBreakdown",
    "Shift",
    "TraceError",
    "classify",
    "compare_runs",
    "merge_runs",
    "paired_shift95",
    "read_kineto",
    "read_nsys",
    "read_rank_traces",
    "read_trace",
    "read_trace_and_operators",
    "shift_interval95",
    "temporal_breakdown",
    "time_by_name",
    "union_s",
    "write_kineto_trace",
    "write_nsys_sqlite",
]


def read_trace(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    step_range: str | None = None,
) -> MeasuredRun:
    """Read a profiler trace, detecting its format from its first bytes.

    Kineto / PyTorch profiler JSON (plain or gzip, e.g. ``.json``/``.json.gz``) and Nsight Systems
    SQLite exports (``.sqlite``/``.db``) are read; see :mod:`workbench.evidence.kineto` and
    :mod:`workbench.evidence.nsys`.

    Args:
        path: The trace file.
        max_bytes: Largest trace accepted, bytes (on disk; also decompressed for gzip).
        step_range: Nsight Systems only: the NVTX range that marks a step (``"train_step"``;
            None: ``ProfilerStep#N``-like names, then benchmark measure ranges).

    Returns:
        The measured run.

    Raises:
        TraceError: One line naming the file and what is wrong (and where).
    """
    p, nsys = _checked(path, max_bytes, step_range)
    if nsys:
        return read_nsys(p, max_bytes=max_bytes, step_range=step_range)
    return read_kineto(p, max_bytes=max_bytes)


def read_trace_and_operators(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    step_range: str | None = None,
) -> tuple[MeasuredRun, RecordedOps]:
    """:func:`read_trace` and the trace's operators, the file read and parsed once.

    Args:
        path: The trace file.
        max_bytes: Largest trace accepted, bytes (on disk; also decompressed for gzip).
        step_range: As :func:`read_trace`.

    Returns:
        The measured run and its operators
        (:func:`~workbench.evidence.operators.read_operators`'s answer; none for an Nsight
        Systems export, which records no ``cpu_op`` events).

    Raises:
        TraceError: One line naming the file and what is wrong (and where).
    """
    p, nsys = _checked(path, max_bytes, step_range)
    if nsys:
        run = read_nsys(p, max_bytes=max_bytes, step_range=step_range)
        return run, RecordedOps(ops=(), by_correlation={}, shapes_recorded=False)
    return read_kineto_and_operators(p, max_bytes=max_bytes)


def _checked(
    path: str | os.PathLike[str], max_bytes: int, step_range: str | None
) -> tuple[Path, bool]:
    """The checked path, and whether it is an Nsight Systems export (else Kineto JSON)."""
    p = check_trace_file(path, max_bytes)
    if sniff(p) == "nsys":
        return p, True
    if step_range is not None:
        raise TraceError(f"{p}: --step-range names an NVTX range; a Kineto trace has none")
    return p, False
