"""What a reviewer reads first about one trace: ``workbench trace FILE`` as data and as text.

:func:`trace_document` gathers, over the steady-state iterations (the warm-up step reported
apart): the iterations, HTA's temporal breakdown per rank, kernel time by category per
iteration with the share no classification rule matched ("other"), the top kernels by total time
with the rule that classified each, memory copies by direction (bytes and achieved bandwidth,
:mod:`workbench.evidence.copies`), host-side launches per stream (runtime call time, launch
delay and queue length, :mod:`workbench.evidence.launches`) and, when the trace recorded shapes,
every modelled kernel beside its expected time on the trace's hardware
(:mod:`workbench.review.join.expected`), with an optional what-if on another profile.
:func:`trace_text` renders it; kernel names are shortened readably there (the full name stays in
the JSON) and every text that came from the trace has its control characters escaped
(:func:`workbench.errors.printable`).
"""

from __future__ import annotations

import re
from typing import Any

from workbench._format import fmt_bytes, fmt_si, fmt_time
from workbench.errors import GraphError, WorkbenchError, printable
from workbench.evidence.breakdown import temporal_breakdown
from workbench.evidence.copies import copies_by_direction
from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import CATEGORIES, MeasuredRun, TraceError
from workbench.hw.schema import Hardware
from workbench.models.from_trace import BAD_RANK, BEYOND_MEMORY, profile_for_device
from workbench.review.join.expected import (
    BEYOND_BOUND,
    IMPOSSIBLE,
    ExpectedReport,
    expect,
    what_if,
)
from workbench.review.join.launches import launch_doc, launch_lines

__all__ = [
    "COLLECTIVE_WAIT",
    "TRACE_KEYS",
    "by_category_s",
    "choose_hardware",
    "short_name",
    "trace_document",
    "trace_text",
]

#: Why a collective kernel's measured time is not the fabric's alone (said under the table).
COLLECTIVE_WAIT = (
    "a collective kernel's measured time includes waiting for the other ranks (an NCCL kernel "
    "starts when its rank launches it and spins until its peers arrive): read its loss against "
    "the fabric only where every rank launched it at about the same time (compare the ranks' "
    "traces with --against)"
)

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
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    }


def _rank_doc(b: Any) -> dict[str, Any]:
    return {
        "rank": b.rank,
        "span_s": b.span_s,
        "idle_s": b.idle_s,
        "compute_s": b.compute_s,
        "non_compute_s": b.non_compute_s,
        "comm_s": b.comm_s,
        "memory_s": b.memory_s,
        "idle_pct": b.idle_pct,
        "compute_pct": b.compute_pct,
        "non_compute_pct": b.non_compute_pct,
        "comm_overlap_pct": b.comm_overlap_pct,
    }


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


def trace_text(doc: dict[str, Any], *, top: int = 5) -> str:
    """Render :func:`trace_document` for a terminal (names shortened and escaped)."""
    lines = [f"trace {printable(doc['source'])} on {printable(doc['device'])}"]
    lines += _expected_lines(doc["expected"], top)
    lines += _iteration_lines(doc["iterations"])
    lines.append("temporal breakdown (HTA's definitions, share of the GPU span)")
    for b in doc["temporal_breakdown"]:
        overlap = b["comm_overlap_pct"]
        lines.append(
            f"  rank {b['rank'] if b['rank'] is not None else '-'}: idle {b['idle_pct']:.1f}%  "
            f"compute {b['compute_pct']:.1f}%  non-compute {b['non_compute_pct']:.1f}%  "
            f"span {fmt_time(b['span_s'])}"
            + (f"  comm overlapped {overlap:.1f}%" if overlap is not None else "")
        )
    lines.append("kernel time by category, per iteration (steady state)")
    cats = sorted(doc["by_category"].items(), key=lambda kv: -kv[1])
    lines += [f"  {c:<12} {fmt_time(t):>9}" for c, t in cats if t > 0]
    lines += _classification_lines(doc["classification"])
    lines.append("top kernels by total time (steady state, per iteration)")
    for k in doc["top_kernels"]:
        lines.append(
            f"  {fmt_time(k['per_iteration_s']):>9}  x{k['calls_per_iteration']:<5.3g} "
            f"{k['category']:<11} {k['short_name']}"
        )
    lines += _copy_lines(doc["memory_copies"])
    lines += launch_lines(doc["launches"])
    if doc["what_if"]:
        w = doc["what_if"]
        lines.append(
            f"what-if on {w['hardware']}: the modelled kernels, measured "
            f"{fmt_time(w['measured_here_s'])} and expected {fmt_time(w['expected_here_s'])} per "
            f"step here, are expected to take {fmt_time(w['expected_s'])} there"
        )
    lines += [f"warning: {printable(w)}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"


def _classification_lines(doc: dict[str, Any]) -> list[str]:
    share = doc["other_share"]
    if share is None:
        return []
    names = ", ".join(k["short_name"] for k in doc["other_kernels"][:3])
    return [
        f"  no rule matched ('other'): {100 * share:.1f}% of kernel time"
        + (f" ({names})" if names else "")
    ]


def _copy_lines(copies: list[dict[str, Any]]) -> list[str]:
    if not copies:
        return []
    lines = ["memory copies by direction (steady state, per iteration)"]
    for c in copies:
        bw = c["bandwidth_bytes_per_s"]
        rate = f"at {fmt_si(bw, 'B/s')}" if bw is not None else "no rate (no sized copy time)"
        unsized = c["unsized_calls_per_iteration"]
        lines.append(
            f"  {c['direction']:<7} x{c['calls_per_iteration']:<5.3g} "
            f"{fmt_time(c['time_per_iteration_s']):>9}  {fmt_bytes(c['bytes_per_iteration']):>9} "
            f"{rate}" + (f" ({unsized:.3g} without a size)" if unsized else "")
        )
    return lines


def _n(count: int, noun: str) -> str:
    """``1 step``, ``5 steps``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _iteration_lines(it: dict[str, Any]) -> list[str]:
    if not it["steps_annotated"]:
        return [
            f"iterations: none marked; the whole trace is one {fmt_time(it['median_s'])} window"
        ]
    steady = it["per_iteration_s"][1:] if it["count"] > 1 else it["per_iteration_s"]
    spread = f", steady steps {fmt_time(min(steady))}-{fmt_time(max(steady))}" if steady else ""
    ci = it["interval_95_s"]
    interval = f" (95% interval {fmt_time(ci[0])}-{fmt_time(ci[1])})" if ci else ""
    warm = f"; warm-up step {fmt_time(it['warmup_s'])} apart" if it["warmup_s"] is not None else ""
    return [
        f"iterations: {_n(it['count'], 'step')}, median {fmt_time(it['median_s'])} over "
        f"{_n(it['steady_count'], 'steady-state step')}{interval}{spread}{warm}"
    ]


def _expected_lines(exp: dict[str, Any], top: int) -> list[str]:
    if "rows" not in exp:
        return [f"expected vs measured: not available ({printable(str(exp.get('note')))})"]
    rows = exp["rows"][:top]
    lost = sum(r["lost_s"] for r in rows)
    doubtful = [
        f"{printable(reason)} ({count})"
        for reason, count in exp["skipped_calls"].items()
        if reason == IMPOSSIBLE or reason.endswith((BEYOND_MEMORY, BAD_RANK))
    ]
    warn = [f"  warning: left out as corrupt: {'; '.join(doubtful)}"] if doubtful else []
    bound = exp["skipped_calls"].get(BEYOND_BOUND)
    warn += [f"  note: {bound} {BEYOND_BOUND}"] if bound else []
    if not rows:
        return [
            f"expected vs measured: no kernel has an expectation on the {exp['hardware']} profile",
            *warn,
            *_unmodelled_lines(exp),
        ]
    lines = [
        f"these {len(rows)} kernels lose {fmt_time(lost)} per step against what the "
        f"{exp['hardware']} profile says it should do (modelled kernels cover "
        f"{100 * exp['coverage']:.1f}% of the kernel time: {fmt_time(exp['measured_s'])} measured, "
        f"{fmt_time(exp['expected_s'])} expected per step)"
    ]
    lines.append(
        f"  {'lost':>9} {'measured':>9} {'expected':>9} {'eff':>5}  {'bound':<13} "
        f"{'fmt':<5} kernel / operator"
    )
    for r in rows:
        lines.append(
            f"  {fmt_time(r['lost_s']):>9} {fmt_time(r['measured_s']):>9} "
            f"{fmt_time(r['expected_s']):>9} {r['efficiency']:>5.2f}  {r['bottleneck']:<13} "
            f"{r['format']:<5} {short_name(r['name'], 48)}  <- {_cut(r['operator'], 56)}"
        )
    if any(r["category"] == "collective" for r in rows):
        lines.append(f"  note: {COLLECTIVE_WAIT}")
    rest: dict[str, list[float]] = {}
    for r in exp["rows"][top:]:
        entry = rest.setdefault(r["category"], [0.0, 0.0])
        entry[0] += r["measured_s"]
        entry[1] += r["expected_s"]
    if rest:
        lines.append("  the rest, by category (measured / expected per step):")
        for cat, (m, e) in sorted(rest.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"    {cat:<12} {fmt_time(m):>9} / {fmt_time(e)}")
    return [*lines, *warn, *_unmodelled_lines(exp)]


def _unmodelled_lines(exp: dict[str, Any]) -> list[str]:
    unmodelled = {c: s for c, s in exp["unmodelled_s"].items() if s > 0}
    if not unmodelled:
        return []
    parts = ", ".join(f"{c} {fmt_time(s)}" for c, s in unmodelled.items())
    return [f"  no expectation (operator not modelled or no shapes): {parts}"]
