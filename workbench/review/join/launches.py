"""The host-side launch section of ``workbench trace``: per stream, as JSON and as text.

The figures are :func:`workbench.evidence.launches.launch_stats` (Holistic Trace Analysis's
runtime call time, launch delay and queue length); this module only lays them out.
"""

from __future__ import annotations

from typing import Any

from workbench._format import fmt_time
from workbench.evidence.launches import Summary, launch_stats
from workbench.evidence.run import MeasuredRun

__all__ = ["launch_doc", "launch_lines"]


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


def launch_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The section as text: one line per stream (nothing when no launch was linked)."""
    if not rows:
        return []
    lines = [
        "host-side launches per stream (HTA's definitions, every step): runtime call, launch "
        "delay (start - call end), queue length"
    ]
    for r in rows:
        rank = "-" if r["rank"] is None else r["rank"]
        stream = "-" if r["stream"] is None else r["stream"]
        rt, delay, q = r["runtime_call_s"], r["launch_delay_s"], r["queue_length"]
        lines.append(
            f"  rank {rank} stream {stream}: {r['launches']} launches; call median "
            f"{fmt_time(rt['median'])} (mean {fmt_time(rt['mean'])}); delay median "
            f"{fmt_time(delay['median'])}, p95 {fmt_time(delay['p95'])}, max "
            f"{fmt_time(delay['max'])}; queue mean {q['mean']:.3g}, max {q['max']:.0f}"
        )
    return lines
