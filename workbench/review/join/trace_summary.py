"""What a reviewer reads first about one trace: ``workbench trace FILE`` as data and as text.

:func:`trace_document` gathers, over the steady-state iterations (the warm-up step reported
apart): the iterations, HTA's temporal breakdown per rank, kernel time by category per
iteration with the share no classification rule matched ("other"), the top kernels by total time
with the rule that classified each, memory copies by direction (bytes and achieved bandwidth,
:mod:`workbench.evidence.copies`), host-side launches per stream (runtime call time, launch
delay and queue length, :mod:`workbench.evidence.launches`) and, when the trace recorded shapes,
every modelled kernel beside its expected time on the trace's hardware
(:mod:`workbench.review.join.expected`), with an optional what-if on another profile.
:func:`workbench.report.trace_text.trace_text` renders it; kernel names are shortened readably
(:func:`short_name`; the full name stays in the JSON) and every text that came from the trace has
its control characters escaped (:func:`workbench.errors.printable`).
"""

from __future__ import annotations

import re
from typing import Any

from workbench._doc import pick
from workbench._format import fmt_cut
from workbench.errors import GraphError, WorkbenchError, printable
from workbench.evidence.breakdown import temporal_breakdown
from workbench.evidence.copies import copies_by_direction
from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import CATEGORIES, MeasuredRun, TraceError
from workbench.hw.schema import Hardware
from workbench.models.from_trace import profile_for_device
from workbench.review.join.expected import ExpectedReport, expect, what_if
from workbench.review.join.launches import launch_doc

__all__ = [
    "TRACE_KEYS",
    "by_category_s",
    "choose_hardware",
    "short_name",
    "trace_document",
]

#: Top-level keys of :func:`trace_document`.
TRACE_KEYS = (
    "source",
    "device",
    "iterations",
    "temporal_breakdown",
    "by_category",
    "classification",
    "top_kernels",
    "memory_copies",
    "launches",
    "expected",
    "what_if",
    "warnings",
)
_SHORT = 64


def short_name(name: str, limit: int = _SHORT) -> str:
    """A long demangled kernel name made readable, cut to ``limit`` characters (escaped).

    The return type and the parameter list are dropped, nested template arguments folded to
    ``<...>``.

    >>> short_name("void at::native::vectorized_elementwise_kernel<4, at::native::"
    ...            "CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, float)", 40)
    'at::native::vectorized_elementwise_k...'
    >>> short_name("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    ...            "at::native::func_wrapper_t<float> > >(at::native::ReduceOp<float>)")
    'at::native::reduce_kernel<512, 1, at::native::ReduceOp<...>>'
    """
    text = printable(name.strip())
    text = text.removeprefix("void ").replace("(anonymous namespace)::", "")
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(" and depth == 0 and out:
            break
        if ch == "<":
            depth += 1
            if depth == 2:
                out.append("<...>")
            if depth >= 2:
                continue
        elif ch == ">":
            depth -= 1
            if depth >= 1:
                continue
        elif depth >= 2:
            continue
        out.append(ch)
    short = re.sub(r"\s+", " ", "".join(out)).replace(" >", ">").strip()
    if len(short) > limit:
        short = short[: limit - 3].rstrip() + "..."
    return short


def _cut(text: str, limit: int) -> str:
    """``text`` escaped and cut to ``limit`` characters (an operator signature, say)."""
    return fmt_cut(printable(text), limit)


def choose_hardware(run: MeasuredRun, name: str | None) -> str:
    """The profile to expect on: ``name`` when given, else the one the trace's GPU maps to.

    Raises:
        WorkbenchError: No shipped profile fits the trace's GPU (pass ``--hardware``).
    """
    if name:
        return name
    device = run.tag("device")
    found = profile_for_device(device)
    if found is None:
        raise WorkbenchError(
            f"{run.source}: no shipped hardware profile for the trace's GPU "
            f"'{printable(device)}': pass --hardware"
        )
    return found


def by_category_s(run: MeasuredRun) -> dict[str, float]:
    """Summed kernel time per category per steady-state iteration, s (every category a key)."""
    steady = {it.index for it in run.steady_iterations}
    out = dict.fromkeys(CATEGORIES, 0.0)
    for k in run.kernels:
        if k.iteration in steady:
            out[k.category] += k.duration_s
    return {c: t / max(len(steady), 1) for c, t in out.items()}


def trace_document(
    run: MeasuredRun,
    recorded: RecordedOps,
    *,
    hardware: Hardware | None,
    on: Hardware | None = None,
    top: int = 10,
) -> dict[str, Any]:
    """The summary of one trace as a JSON-safe dict (keys :data:`TRACE_KEYS`).

    Args:
        run: The measured run.
        recorded: Its operators (shapes, links to kernels).
        hardware: The profile to expect on; None: no expected-vs-measured table.
        on: Another profile to re-map the trace's graph on (what-if), or None.
        top: Kernels listed by total time.

    Returns:
        The document; ``expected`` is None with a ``note`` when no shapes were recorded.
    """
    report, note = None, None
    if hardware is not None:
        try:
            report = expect(run, recorded, hardware)
        except GraphError as exc:
            note = str(exc)
    expected = _expected_doc(report) if report is not None else {"note": note}
    whatif = None
    if report is not None and on is not None:
        w = what_if(report, run, recorded, on)
        whatif = {
            "hardware": w.hardware,
            "expected_s": w.expected_s,
            "expected_here_s": report.expected_s,
            "measured_here_s": report.measured_s,
            "by_operator": [{"operator": s, "expected_s": t} for s, t in w.by_operator[:top]],
        }
    return {
        "source": run.source,
        "device": run.tag("device"),
        "iterations": _iterations_doc(run),
        "temporal_breakdown": [_rank_doc(b) for b in temporal_breakdown(run)],
        "by_category": by_category_s(run),
        "classification": _classification_doc(run),
        "top_kernels": _top_kernels(run, top),
        "memory_copies": _copies_doc(run),
        "launches": launch_doc(run),
        "expected": expected,
        "what_if": whatif,
        "warnings": list(run.warnings),
    }


def _iterations_doc(run: MeasuredRun) -> dict[str, Any]:
    interval: list[float] | None
    try:
        low, high = run.interval95_s()
        interval = [low, high]
    except TraceError:
        interval = None
    return {
        "count": run.repeats,
        "steady_count": len(run.steady_iterations),
        "steps_annotated": run.steps_annotated,
        "indices": [it.index for it in run.iterations],
        "per_iteration_s": [it.wall_s for it in run.iterations],
        "median_s": run.median_iteration_s(),
        "interval_95_s": interval,
        "warmup_s": run.warmup_s,
        "window_rule": run.window_rule,
        "interval_note": run.interval_note(),
    }


#: A rank's breakdown fields in its JSON block: seconds per step, then percentages of the span.
_RANK_FIELDS = (
    *("rank", "span_s", "idle_s", "compute_s", "non_compute_s", "comm_s", "memory_s"),
    *("idle_pct", "compute_pct", "non_compute_pct", "comm_overlap_pct"),
)


def _rank_doc(b: Any) -> dict[str, Any]:
    return pick(b, *_RANK_FIELDS)


def _classification_doc(run: MeasuredRun, top: int = 5) -> dict[str, Any]:
    """Share of kernel time (kernels only, steady state) that no rule classified, and its names.

    ``other_share`` is None when the steady state holds no kernel time.
    """
    steady = {it.index for it in run.steady_iterations}
    total = 0.0
    other: dict[str, float] = {}
    for k in run.kernels:
        if k.kind == "kernel" and k.iteration in steady:
            total += k.duration_s
            if k.category == "other":
                other[k.name] = other.get(k.name, 0.0) + k.duration_s
    n = max(len(steady), 1)
    ranked = sorted(other.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {
        "other_share": sum(other.values()) / total if total > 0 else None,
        "other_kernels": [
            {"name": name, "short_name": short_name(name, 40), "per_iteration_s": t / n}
            for name, t in ranked
        ],
    }


def _copies_doc(run: MeasuredRun) -> list[dict[str, Any]]:
    return [
        {
            "direction": c.direction,
            "calls_per_iteration": c.calls,
            "bytes_per_iteration": c.bytes,
            "time_per_iteration_s": c.time_s,
            "bandwidth_bytes_per_s": c.bandwidth_bytes_per_s,
            "unsized_calls_per_iteration": c.unsized_calls,
        }
        for c in copies_by_direction(run)
    ]


def _top_kernels(run: MeasuredRun, top: int) -> list[dict[str, Any]]:
    steady = {it.index for it in run.steady_iterations}
    total: dict[str, list[float]] = {}
    category, rule = {}, {}
    for k in run.kernels:
        if k.iteration in steady:
            entry = total.setdefault(k.name, [0.0, 0])
            entry[0] += k.duration_s
            entry[1] += 1
            category[k.name], rule[k.name] = k.category, k.rule
    n = max(len(steady), 1)
    ranked = sorted(total.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    return [
        {
            "name": name,
            "short_name": short_name(name),
            "category": category[name],
            "rule": rule[name],
            "total_s": t,
            "per_iteration_s": t / n,
            "calls_per_iteration": c / n,
        }
        for name, (t, c) in ranked
    ]


def _expected_doc(report: ExpectedReport) -> dict[str, Any]:
    rows = [
        {
            "name": r.name,
            "short_name": short_name(r.name),
            "category": r.category,
            "operator": r.operator,
            "format": r.format,
            "calls_per_iteration": r.calls,
            "measured_s": r.measured_s,
            "expected_s": r.expected_s,
            "lost_s": r.lost_s,
            "efficiency": r.efficiency,
            "bottleneck": r.bottleneck,
        }
        for r in report.rows
    ]
    return {
        "hardware": report.hardware,
        "measured_s": report.measured_s,
        "expected_s": report.expected_s,
        "coverage": report.coverage,
        "rows": rows,
        "unmodelled_s": dict(report.unmodelled_s),
        "skipped_calls": dict(report.skipped),
    }
