"""Holistic Trace Analysis run on a trace directory: the reference the breakdown is checked against.

HTA reads every ``.json``/``.json.gz`` file of a directory, one per rank (the rank from the file's
``distributedInfo``). ``include_last_profiler_step=True`` keeps the last step's kernels, so its
span is the workbench's (all step windows); HTA's default drops the last step.
"""

from __future__ import annotations

import atexit
import functools
import logging
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

hta_analysis = pytest.importorskip(
    "hta.trace_analysis", reason="HolisticTraceAnalysis (the 'test' extra) is not installed"
)


def hta_load(directory: Path, *, include_last_step: bool = True) -> Any:
    """HTA's ``TraceAnalysis`` of every rank file in ``directory`` (last step included or not)."""
    logging.disable(logging.WARNING)  # HTA logs each file it parses
    try:
        return hta_analysis.TraceAnalysis(
            trace_dir=str(directory), include_last_profiler_step=include_last_step
        )
    finally:
        logging.disable(logging.NOTSET)


@functools.cache
def hta_load_file(source: Path, *, include_last_step: bool = True) -> Any:
    """:func:`hta_load` of one trace file alone in a directory, parsed once per session.

    HTA takes a few seconds per megabyte; the tests that read the same real trace share its
    analysis (they only query it). ``source`` is copied into a fresh temporary directory.
    """
    directory = Path(tempfile.mkdtemp(prefix="hta-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    shutil.copy(source, directory / source.name)
    return hta_load(directory, include_last_step=include_last_step)


def hta_breakdown(directory: Path | Any) -> dict[int, dict[str, float | None]]:
    """Per rank: HTA's ``idle_pct``, ``compute_pct``, ``non_compute_pct``, ``comm_overlap_pct``.

    ``directory`` may also be an analysis :func:`hta_load` returned.
    """
    analysis = hta_load(directory) if isinstance(directory, Path) else directory
    temporal = analysis.get_temporal_breakdown(visualize=False)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    out: dict[int, dict[str, float | None]] = {}
    for row in temporal.to_dict("records"):
        span = float(row["kernel_time(us)"])  # first kernel start to last kernel end
        out[int(row["rank"])] = {
            "idle_pct": 100 * float(row["idle_time(us)"]) / span,
            "compute_pct": 100 * float(row["compute_time(us)"]) / span,
            "non_compute_pct": 100 * float(row["non_compute_time(us)"]) / span,
            "span_us": span,
        }
    for row in overlap.to_dict("records"):
        ratio = float(row["comp_comm_overlap_pctg"]) / 100
        out[int(row["rank"])]["comm_overlap_pct"] = None if math.isnan(ratio) else 100 * ratio
    return out


def hta_step_periods(analysis: Any, rank: int) -> dict[int, float]:
    """Per ``ProfilerStep`` (as HTA assigns GPU kernels to steps, by correlation): the time from
    its first GPU activity to the next step's, s; the last step is left out."""
    df = analysis.t.get_trace(rank)
    gpu = df[df["stream"].ge(0) & df["iteration"].ge(0)]
    firsts = gpu.groupby("iteration")["ts"].min().sort_values()
    steps = [int(i) for i in firsts.index]
    starts = [float(t) for t in firsts.to_numpy()]
    return {steps[n]: (starts[n + 1] - starts[n]) * 1e-6 for n in range(len(steps) - 1)}


def hta_last_step_s(analysis: Any, rank: int) -> float:
    """The last ``ProfilerStep``'s window as HTA assigns its kernels: from its first GPU activity
    to the end of its own last one, s (HTA gives it no period: no next step)."""
    df = analysis.t.get_trace(rank)
    gpu = df[df["stream"].ge(0) & df["iteration"].ge(0)]
    last = gpu[gpu["iteration"] == gpu["iteration"].max()]
    return float((last["ts"] + last["dur"]).max() - last["ts"].min()) * 1e-6
