"""Text for a terminal: ``workbench trace`` on one trace, on a measured pair, and its launches.

The documents are built in :mod:`workbench.review.join` (``trace_summary.trace_document``,
``pairs.pair_document``, ``launches.launch_doc``); this module only lays them out. Kernel names
are shortened readably (the full name stays in the JSON) and every text that came from a trace has
its control characters escaped (:func:`workbench.errors.printable`).
"""

from __future__ import annotations

from typing import Any

from workbench._format import fmt_bytes, fmt_cut, fmt_delta, fmt_si, fmt_time, shift_line
from workbench.errors import printable
from workbench.models.from_trace import BAD_RANK, BEYOND_MEMORY
from workbench.review.join.expected import BEYOND_BOUND, IMPOSSIBLE
from workbench.review.join.trace_summary import short_name

__all__ = ["COLLECTIVE_WAIT", "launch_lines", "pair_text", "trace_text"]

#: Why a collective kernel's measured time is not the fabric's alone (said under the table).
COLLECTIVE_WAIT = (
    "a collective kernel's measured time includes waiting for the other ranks (an NCCL kernel "
    "starts when its rank launches it and spins until its peers arrive): read its loss against "
    "the fabric only where every rank launched it at about the same time (compare the ranks' "
    "traces with --against)"
)


def trace_text(doc: dict[str, Any], *, top: int = 5) -> str:
    """Render :func:`~workbench.review.join.trace_summary.trace_document` for a terminal."""
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
    note = [f"  warning: {it['interval_note']}"] if it.get("interval_note") else []
    return [
        f"iterations: {_n(it['count'], 'step')}, median {fmt_time(it['median_s'])} over "
        f"{_n(it['steady_count'], 'steady-state step')}{interval}{spread}{warm}",
        *([f"  window: {it['window_rule']}"] if it.get("window_rule") else []),
        *note,
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
        operator = fmt_cut(printable(r["operator"]), 56)
        lines.append(
            f"  {fmt_time(r['lost_s']):>9} {fmt_time(r['measured_s']):>9} "
            f"{fmt_time(r['expected_s']):>9} {r['efficiency']:>5.2f}  {r['bottleneck']:<13} "
            f"{r['format']:<5} {short_name(r['name'], 48)}  <- {operator}"
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


def launch_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The launch section (:func:`~workbench.review.join.launches.launch_doc`) as text.

    One line per stream; nothing when no launch was linked.
    """
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


def pair_text(doc: dict[str, Any], *, top: int = 10) -> str:
    """Render :func:`~workbench.review.join.pairs.pair_document` for a terminal."""
    st = doc["step"]
    rel = st["relative"]
    lines = [
        f"measured pair: {printable(doc['baseline'])} -> {printable(doc['candidate'])}",
        f"step time (steady-state medians): {fmt_time(st['baseline_median_s'])} -> "
        f"{fmt_time(st['candidate_median_s'])}"
        + (f" ({100 * rel:+.1f}%)" if rel is not None else ""),
    ]
    s = st["shift"]
    if s is not None:
        lines.append(f"  {shift_line(s)}")
    else:
        lines.append(f"  no noise estimate: {printable(st.get('note', ''))}")
    lines += [f"note: {line}" for line in doc["differences"]]
    lines.append("kernel time by category, per iteration (baseline -> candidate)")
    for r in doc["by_category"]:
        lines.append(
            f"  {r['category']:<12} {fmt_time(r['baseline_s']):>9} -> "
            f"{fmt_time(r['candidate_s']):>9}  ({fmt_delta(r['candidate_s'] - r['baseline_s'])})"
        )
    lines.append("largest changes by operator (the cpu_op that launched the kernels, its shapes)")
    for r in doc["by_operator"][:top]:
        operator = fmt_cut(printable(r["operator"]), 60)
        lines.append(
            f"  {fmt_delta(r['delta_s']):>10}  {fmt_time(r['baseline_s']):>9} -> "
            f"{fmt_time(r['candidate_s']):>9}  {r['category']:<11} {operator}"
            f"  (shapes {r['shapes']})"
        )
    return "\n".join(lines) + "\n"
