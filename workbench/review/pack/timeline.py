"""One layer's kernels before and after, for the review pack's timeline (seconds).

From a trace's own timestamps (gaps included) when a side came from a trace the model can re-map
(measured kernels matched to the sheet by :func:`workbench.review.join.matching.match_kernels`, on
the median iteration); else laid end to end from measured durations where recorded, else predicted.
"""

from __future__ import annotations

from typing import Any

from workbench.evidence import MeasuredRun
from workbench.review.decision.verdict import TriageReport
from workbench.review.records.reproduce import remap
from workbench.review.records.store import KernelResult, RunRecord

__all__ = ["layer_timeline"]


def _layer_of(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 and parts[1].isdigit() else ""


def layer_timeline(
    r: TriageReport, traces: tuple[MeasuredRun | None, MeasuredRun | None] = (None, None)
) -> tuple[str, tuple[dict[str, Any], ...]]:
    """One layer's kernels before and after, seconds from the layer's first kernel.

    From the trace's own timestamps (gaps included) when a side came from a trace the model
    can re-map, else laid end to end from measured durations where recorded, else predicted.
    """
    target = r.first_failing.kernel if r.first_failing else ""
    layer = _layer_of(target) or next(
        (_layer_of(k.name) for k in r.baseline.kernels if _layer_of(k.name)), ""
    )
    rows: list[dict[str, Any]] = []
    for side, rec, run in (
        ("baseline", r.baseline, traces[0]),
        ("candidate", r.candidate, traces[1]),
    ):
        stamped = _trace_rows(side, rec, run, layer) if run is not None else []
        if stamped:
            rows += stamped
            continue
        t = 0.0
        for k in rec.kernels:
            if _layer_of(k.name) != layer:
                continue
            d, src = _duration(k)
            rows.append(
                {"side": side, "kernel": k.name, "start_s": t, "end_s": t + d, "source": src,
                 "stream": f"in order ({src})"}
            )  # fmt: skip
            t += d
    return layer, tuple(rows)


def _trace_rows(side: str, rec: RunRecord, run: MeasuredRun, layer: str) -> list[dict[str, Any]]:
    """The layer's matched kernels at their trace timestamps (median iteration), or []."""
    from workbench.errors import WorkbenchError
    from workbench.review.join.matching import match_kernels

    mapping = remap(rec)
    if mapping is None:
        return []
    try:
        m = match_kernels(run, mapping)
    except WorkbenchError:
        return []
    picked = [
        (mapping.kernels[x.sheet_index].kernel.name, run.kernels[x.measured_index])
        for x in m.matches
        if _layer_of(mapping.kernels[x.sheet_index].kernel.name) == layer
    ]
    if not picked:
        return []
    t0 = min(k.start_s for _, k in picked)
    return [
        {
            "side": side,
            "kernel": name,
            "start_s": k.start_s - t0,
            "end_s": k.end_s - t0,
            "source": f"trace timestamps (iteration {m.iteration})",
            "stream": f"stream {k.stream}" if k.stream is not None else "stream (unknown)",
        }
        for name, k in picked
    ]


def _duration(k: KernelResult) -> tuple[float, str]:
    if k.measured_s is not None:
        return k.measured_s, "measured"
    return k.predicted_s, "predicted"
