"""The host-side launch section of ``workbench trace``: one JSON row per rank and stream.

The figures are :func:`workbench.evidence.launches.launch_stats` (Holistic Trace Analysis's
runtime call time, launch delay and queue length); this module only lays them out
(:func:`workbench.report.trace_text.launch_lines` renders them).
"""

from __future__ import annotations

from typing import Any

from workbench.evidence.launches import Summary, launch_stats
from workbench.evidence.run import MeasuredRun

__all__ = ["launch_doc"]


def _summary(s: Summary) -> dict[str, float]:
    return {"mean": s.mean, "median": s.median, "p95": s.p95, "max": s.maximum}


def launch_doc(run: MeasuredRun) -> list[dict[str, Any]]:
    """One JSON-safe row per rank and stream (seconds; queue lengths are counts)."""
    return [
        {
            "rank": r.rank,
            "stream": r.stream,
            "launches": r.launches,
            "runtime_call_s": _summary(r.runtime),
            "launch_delay_s": _summary(r.delay),
            "queue_length": _summary(r.queue),
        }
        for r in launch_stats(run)
    ]
