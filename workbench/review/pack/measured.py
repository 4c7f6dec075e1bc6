"""The first page of a measured pair's pack: what an HTA or ``nsys stats`` reviewer reads first.

Two runs read from profiler traces are compared as they ran, before any model:

- the paired per-step step time (:func:`workbench.evidence.compare_steps` through triage's
  ``shift``: steps aligned, per-step deltas, their 95% interval and sign test), with the window
  rule that drew the steps;
- the temporal breakdown of each run's median steady step (HTA's ``get_temporal_breakdown``
  parts): compute, communication (collective kernels; the part under compute said apart),
  memory (copies and sets), idle;
- the slowdown by kernel category: each category's kernel time per steady step (durations summed
  over streams, the median step), candidate minus baseline, and its share of the step's change;
- the per-stream view: kernel time per steady step on each device and stream;
- the top operator deltas: the ``cpu_op`` (or, without operators, the kernel) whose kernels moved
  most per step.

Rows only: :mod:`workbench.report._comparison` renders them (seconds in ``*_s`` columns,
fractions in ``*share`` columns).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from workbench._format import shift_line
from workbench.evidence import MeasuredRun
from workbench.review.decision.verdict import TriageReport
from workbench.review.join.pairs import shift_doc
from workbench.review.join.trace_summary import short_name
from workbench.review.join.windows import windows_doc, windows_lines
from workbench.review.records.store import RunRecord

__all__ = ["is_measured_pair", "measured_tables"]

#: ``(heading, rows, columns)``, as :data:`workbench.review.pack.content.Table`.
_Table = tuple[str, list[dict[str, Any]], tuple[str, ...]]
#: Operators (or kernels) the top-delta table lists.
TOP_OPERATORS = 10


def is_measured_pair(r: TriageReport) -> bool:
    """Whether both records were read from traces (each lists its steady step times)."""
    return bool(r.baseline.model.step_times_s and r.candidate.model.step_times_s)


def measured_tables(
    r: TriageReport, traces: tuple[MeasuredRun | None, MeasuredRun | None]
) -> list[_Table]:
    """The measured pair's first-page tables (none unless :func:`is_measured_pair`)."""
    if not is_measured_pair(r):
        return []
    tables = [_step_table(r)]
    runs = [(side, run) for side, run in zip(("baseline", "candidate"), traces, strict=True)]
    if all(run is not None for _, run in runs):
        tables.append(
            (
                "Measured: temporal breakdown of both runs (median steady step; communication: "
                "collective kernels, of it under compute apart; memory: copies and sets)",
                [_breakdown_row(side, run) for side, run in runs if run is not None],
                _BREAKDOWN_COLS,
            )
        )
    tables.append(
        (
            "Measured: slowdown by kernel category (kernel time per steady step, median step)",
            _category_rows(r),
            ("category", "baseline_s", "candidate_s", "delta_s", "change", "step_share"),
        )
    )
    if all(run is not None for _, run in runs):
        tables.append(
            (
                "Measured: per stream (kernel time per steady step)",
                _stream_rows(traces),  # type: ignore[arg-type]
                ("device", "stream", "baseline_s", "candidate_s", "delta_s"),
            )
        )
    tables.append(
        (
            f"Measured: top {TOP_OPERATORS} operator deltas (kernel time per step; an operator "
            "is the cpu_op that launched the kernels, else the kernel)",
            _operator_rows(r.baseline, r.candidate),
            ("operator", "baseline_s", "candidate_s", "delta_s"),
        )
    )
    return tables


_BREAKDOWN_COLS = (
    "run",
    "step",
    "wall_s",
    "compute_s",
    "compute_share",
    "communication_s",
    "communication_share",
    "under_compute_s",
    "memory_s",
    "memory_share",
    "idle_s",
    "idle_share",
)


def _step_table(r: TriageReport) -> _Table:
    b, c = r.baseline.model.step_times_s, r.candidate.model.step_times_s
    row: dict[str, Any] = {
        "metric": "step time",
        "baseline_s": statistics.median(b),
        "candidate_s": statistics.median(c),
        "steps": f"{len(b)} / {len(c)} steady",
        "evidence": shift_line(shift_doc(r.shift)) if r.shift is not None else "-",
    }
    windows = windows_doc(r.baseline, r.candidate)
    row["window"] = "; ".join(windows_lines(windows)) if windows is not None else "-"
    return (
        "Measured: step time, paired per step",
        [row],
        ("metric", "baseline_s", "candidate_s", "steps", "evidence", "window"),
    )


def _median_step(run: MeasuredRun) -> Any:
    steady = sorted(run.steady_iterations, key=lambda it: it.wall_s)
    return steady[(len(steady) - 1) // 2]


def _breakdown_row(side: str, run: MeasuredRun) -> dict[str, Any]:
    """One run's median steady step in HTA's parts, s, with each part's share of its wall."""
    it = _median_step(run)
    wall = it.wall_s
    parts = {
        "compute": it.compute_s,
        "communication": it.comm_s,
        "memory": it.copy_s,
        "idle": it.gap_s,
    }
    row: dict[str, Any] = {"run": side, "step": f"#{it.index}", "wall_s": wall}
    for part, v in parts.items():
        row[f"{part}_s"] = v if v is not None else "-"
        row[f"{part}_share"] = v / wall if v is not None and wall > 0 else "-"
    row["under_compute_s"] = it.overlap_s if it.overlap_s is not None else "-"
    return row


def _category_medians(record: RunRecord) -> dict[str, float]:
    m = record.measurement
    steps = dict(m.category_steps_s) if m is not None else {}
    return {cat: statistics.median(ts) for cat, ts in steps.items() if ts}


def _category_rows(r: TriageReport) -> list[dict[str, Any]]:
    """Per category: the median step's kernel time on each side, the change, its step share."""
    b, c = _category_medians(r.baseline), _category_medians(r.candidate)
    step = statistics.median(r.candidate.model.step_times_s) - statistics.median(
        r.baseline.model.step_times_s
    )
    rows = []
    for cat in sorted(set(b) | set(c), key=lambda k: -abs(c.get(k, 0.0) - b.get(k, 0.0))):
        vb, vc = b.get(cat, 0.0), c.get(cat, 0.0)
        if vb == 0.0 and vc == 0.0:
            continue  # NOTE: a category neither run launched says nothing
        rows.append(
            {
                "category": cat,
                "baseline_s": vb,
                "candidate_s": vc,
                "delta_s": vc - vb,
                "change": f"{(vc - vb) / vb:+.1%}" if vb > 0 else "new",
                "step_share": _share_text((vc - vb) / step) if step > 0 and vc > vb else "-",
            }
        )
    return rows


def _share_text(share: float) -> str:
    """A share of the step's change as a reviewer reads it (``59.3%``, ``<0.1%``)."""
    return f"{share:.1%}" if share >= 0.001 else "<0.1%"


def _per_stream(run: MeasuredRun) -> dict[tuple[str, str], float]:
    steady = {it.index for it in run.steady_iterations}
    out: dict[tuple[str, str], float] = defaultdict(float)
    for k in run.kernels:
        if k.iteration in steady:
            key = (_id(k.device), _id(k.stream))
            out[key] += k.duration_s
    n = max(len(steady), 1)
    return {key: t / n for key, t in out.items()}


def _id(v: int | None) -> str:
    return "-" if v is None else str(v)


def _stream_rows(traces: tuple[MeasuredRun, MeasuredRun]) -> list[dict[str, Any]]:
    b, c = (_per_stream(run) for run in traces)
    keys = sorted(set(b) | set(c), key=lambda k: -max(b.get(k, 0.0), c.get(k, 0.0)))
    return [
        {
            "device": device,
            "stream": stream,
            "baseline_s": b.get((device, stream), 0.0),
            "candidate_s": c.get((device, stream), 0.0),
            "delta_s": c.get((device, stream), 0.0) - b.get((device, stream), 0.0),
        }
        for device, stream in keys
    ]


def _operator_times(record: RunRecord) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for k in record.kernels:
        name = k.ops[0] if k.ops else f"kernel {short_name(k.name, 48)}"
        out[name] += k.measured_s or 0.0
    return out


def _operator_rows(base: RunRecord, cand: RunRecord) -> list[dict[str, Any]]:
    """The operators whose kernels moved most per step (either way), largest first."""
    b, c = _operator_times(base), _operator_times(cand)
    names = sorted(set(b) | set(c), key=lambda o: (-abs(c.get(o, 0.0) - b.get(o, 0.0)), o))
    return [
        {
            "operator": name,
            "baseline_s": b.get(name, 0.0),
            "candidate_s": c.get(name, 0.0),
            "delta_s": c.get(name, 0.0) - b.get(name, 0.0),
        }
        for name in names[:TOP_OPERATORS]
        if c.get(name, 0.0) != b.get(name, 0.0)
    ]
