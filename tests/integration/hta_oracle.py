"""Holistic Trace Analysis run on a trace directory: the reference the breakdown is checked against.

HTA reads every ``.json``/``.json.gz`` file of a directory, one per rank (the rank from the file's
``distributedInfo``). ``include_last_profiler_step=True`` keeps the last step's kernels, so its
span is the workbench's (all step windows); HTA's default drops the last step.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

hta_analysis = pytest.importorskip(
    "hta.trace_analysis", reason="HolisticTraceAnalysis (the 'test' extra) is not installed"
)


def hta_breakdown(directory: Path) -> dict[int, dict[str, float | None]]:
    """Per rank: HTA's ``idle_pct``, ``compute_pct``, ``non_compute_pct``, ``comm_overlap_pct``."""
    logging.disable(logging.WARNING)  # HTA logs each file it parses
    try:
        analysis = hta_analysis.TraceAnalysis(
            trace_dir=str(directory), include_last_profiler_step=True
        )
        temporal = analysis.get_temporal_breakdown(visualize=False)
        overlap = analysis.get_comm_comp_overlap(visualize=False)
    finally:
        logging.disable(logging.NOTSET)
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
