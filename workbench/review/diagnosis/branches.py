"""Debug branches: a decision tree whose nodes are computed from the two runs.

Nodes, each ``pass`` / ``fail`` / ``unknown`` with the next action::

    comparable evidence          tags equal except the declared change
    +- workload representative   slice length vs the production-chat trace's prompt lengths
       +- software-stack mature  fallbacks, refused fusions, unfused patterns, stack maturity
                +- KPI tied to the SLA p95/p99 and throughput at the SLA load: each side simulated
                                 with its own model, hardware profile and options on the same
                                 requests (same arrivals), enough of them for a p99, with
                                 bootstrap 95 % intervals
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.options import FUSION_RULES
from workbench.review.records.reproduce import hardware_for, options_for, remap
from workbench.review.records.store import RunRecord

__all__ = ["BranchNode", "SlaResult", "debug_branches", "simulate_sla"]

_TRACE = "production-chat"
#: Requests simulated per side: 2,000 put 20 requests beyond the p99, enough for an interval.
_REQUESTS = 2000
_LOAD = 0.7  # offered load as a fraction of the baseline's saturation throughput
_BOOTSTRAP = 400  # bootstrap resamples for the percentile intervals


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchNode:
    """One node of the debug tree.

    Attributes:
        id: Short identifier.
        parent: Parent node id (None for the root).
        question: What the node checks.
        status: ``pass``, ``fail`` or ``unknown``.
        evidence: The computed figures.
        next_action: What to do now.
    """

    id: str
    parent: str | None
    question: str
    status: str
    evidence: str
    next_action: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SlaResult:
    """Serving simulation of both runs at the same load (seconds, tokens/s).

    Attributes:
        rate_per_s: Offered request rate, requests/s.
        requests: Requests simulated per side.
        baseline, candidate: ``p50_s``, ``p95_s``, ``p99_s`` (seconds) and ``throughput``
            (output tokens/s) of each side.
        intervals: ``side -> {percentile: (low, high)}``, bootstrap 95 % intervals, seconds.
        sides: ``side -> "model on hardware"`` as simulated.
    """

    rate_per_s: float
    requests: int
    baseline: dict[str, float]
    candidate: dict[str, float]
    intervals: dict[str, dict[str, tuple[float, float]]] | None = None
    sides: dict[str, str] | None = None

    def noise(self, metric: str) -> float:
        """Relative half-width of both sides' intervals for ``metric`` (0 when unknown)."""
        if not self.intervals or metric not in self.intervals.get("baseline", {}):
            return 0.0
        lo_b, hi_b = self.intervals["baseline"][metric]
        lo_c, hi_c = self.intervals["candidate"][metric]
        base = self.baseline[metric]
        return ((hi_b - lo_b) + (hi_c - lo_c)) / 2 / base if base else 0.0


def _stats(result) -> dict[str, float]:
    return {
        "p50_s": result.e2e.p50_s,
        "p95_s": result.e2e.p95_s,
        "p99_s": result.e2e.p99_s,
        "throughput": float(result.output_tokens_per_s or 0.0),
    }


def _intervals(e2e_s: np.ndarray, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Bootstrap 95 % intervals of p50/p95/p99 over the requests (seconds)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(e2e_s), size=(_BOOTSTRAP, len(e2e_s)))
    q = np.percentile(e2e_s[idx], (50, 95, 99), axis=1)
    lo, hi = np.percentile(q, 2.5, axis=1), np.percentile(q, 97.5, axis=1)
    return {p: (float(lo[i]), float(hi[i])) for i, p in enumerate(("p50_s", "p95_s", "p99_s"))}


def simulate_sla(base: RunRecord, cand: RunRecord) -> SlaResult | None:
    """Simulate serving the production trace with each run's own step times, or None.

    Both sides serve the same requests (the first 2,000 of ``production-chat``) at the same
    rate, 70 % of the baseline's saturation rate; each side's step times come from
    :func:`workbench.serving.mapper_steps.mapper_step_time` with *its own* model, hardware
    profile, options and chips. Only decoder presets on reproducible profiles qualify.
    """
    from workbench.serving import load_builtin_trace, simulate
    from workbench.serving.mapper_steps import mapper_step_time

    grid: dict[str, Any] = {
        "batches": (1, 8, 32),
        "prompt_tokens": (64, 256, 512),
        "contexts": (64, 256, 512),
    }
    tables = []
    for r in (base, cand):
        hw, w = hardware_for(r), r.tags.workload
        if hw is None or w.phase not in ("prefill", "decode"):
            return None
        try:
            tables.append(
                mapper_step_time(
                    w.model, hw, options_for(r), tensor_parallel=r.tags.runtime.chips, **grid
                )
            )
        except WorkbenchError:
            return None
    tables = [_measured_scale(t, r) for t, r in zip(tables, (base, cand), strict=True)]
    trace = load_builtin_trace(_TRACE).head(_REQUESTS)
    saturation = simulate(trace.scaled_to_rate(1e6), tables[0], max_batch=32)
    rate = _LOAD * saturation.achieved_rate_per_s
    runs = [simulate(trace.scaled_to_rate(rate), t, max_batch=32) for t in tables]
    return SlaResult(
        rate_per_s=rate,
        requests=len(trace),
        baseline=_stats(runs[0]),
        candidate=_stats(runs[1]),
        intervals={
            side: _intervals(np.asarray(run.e2e_s, dtype=float))
            for side, run in zip(("baseline", "candidate"), runs, strict=True)
        },
        sides={
            side: f"{r.tags.workload.model} on {r.tags.hardware.profile}"
            for side, r in (("baseline", base), ("candidate", cand))
        },
    )


def _measured_scale(table: Any, record: RunRecord) -> Any:
    """A measured run's step table: the mapped table scaled by measured / predicted step time.

    A trace records what one step took, not how the step time grows with batch and context;
    the mapping supplies that shape, the measurement its level, so a measured slowdown moves the
    simulated p95/p99. Predicted runs (and runs that cannot be re-mapped) pass through unchanged.
    """
    if not record.measurement or not record.measurement.backend.startswith("trace:"):
        return table
    mapped = remap(record)
    if mapped is None or mapped.time_s <= 0 or record.model.time_s <= 0:
        return table
    k = record.model.time_s / mapped.time_s
    return dataclasses.replace(
        table,
        prefill_s=tuple(tuple(v * k for v in row) for row in table.prefill_s),
        decode_s=tuple(tuple(v * k for v in row) for row in table.decode_s),
    )


def _representative(cand: RunRecord) -> BranchNode:
    from workbench.serving import load_builtin_trace

    w = cand.tags.workload
    q = "does the slice's length sit inside the production mix (p10..p90 of its lengths)?"
    if w.phase not in ("prefill", "decode"):
        return BranchNode(
            id="representative",
            parent="comparable",
            question=q,
            status="unknown",
            evidence=(
                f"{w.model} {w.phase}: no production trace for this kind of model"
                if w.model != "unknown"
                else "a trace read without its model: no workload to compare with production"
            ),
            next_action="capture the production request mix (batch sizes, image sizes) and "
            "re-run triage on it",
        )
    trace = load_builtin_trace(_TRACE)
    lengths = (
        trace.prompt_tokens
        if w.phase == "prefill"
        else (trace.prompt_tokens + trace.output_tokens // 2)
    )
    p10, p50, p90 = (float(v) for v in np.percentile(lengths, (10, 50, 90)))
    n = (w.seq if w.phase == "prefill" else w.context) or 0
    ok = p10 <= n <= p90
    where = "inside" if ok else "outside"
    evidence = (
        f"slice {w.phase} at {n} tokens, batch {w.batch}: {where} {_TRACE}'s "
        f"{'prompt' if w.phase == 'prefill' else 'context'} lengths (p10 {p10:.0f}, "
        f"p50 {p50:.0f}, p90 {p90:.0f} tokens over {len(trace)} requests); it is one shape "
        "standing in for the mix, not the mix itself"
    )
    return BranchNode(
        id="representative",
        parent="comparable",
        question=q,
        status="pass" if ok else "fail",
        evidence=evidence,
        next_action="go on: check the software stack"
        if ok
        else f"re-run both sides at the trace's p50 ({p50:.0f}) and p90 ({p90:.0f}) lengths before "
        "deciding",
    )


def _mature(cand: RunRecord) -> BranchNode:
    hw = hardware_for(cand)
    fallbacks = [k.name for k in cand.kernels if "falls back" in k.engine_reason]
    refused = [k.name for k in cand.kernels if any("refused" in n for n in k.notes)]
    disabled = list(cand.tags.compiler.fusion_disabled)
    maturity = hw.software.maturity if hw is not None else None
    parts = [
        f"{len(fallbacks)} fallback kernel(s)" + (f" ({fallbacks[0]} ...)" if fallbacks else ""),
        f"{len(refused)} refused fusion(s)",
        f"fusion rules off: {', '.join(disabled) or 'none'} of {len(FUSION_RULES)}",
        f"stack maturity {maturity:.2f}" if maturity is not None else "stack maturity unknown",
    ]
    bad = bool(fallbacks or refused or disabled) or (maturity is not None and maturity < 0.7)
    status = "fail" if bad else ("unknown" if maturity is None else "pass")
    action = {
        "fail": "fix the fallback/unfused pattern first (owner: ML compiler engineer); if an op "
        "is unsupported, file op coverage with the framework integration lead",
        "unknown": "load the hardware profile the run used to read its software maturity",
        "pass": "go on: tie the KPI change to the SLA",
    }[status]
    return BranchNode(
        id="mature",
        parent="representative",
        question="is the software stack mature here (fallbacks, unsupported ops, "
        "unfused patterns)?",
        status=status,
        evidence="; ".join(parts),
        next_action=action,
    )


def _sla(sla: SlaResult | None, flag_at: float) -> BranchNode:
    q = "does the MFU change move p95/p99 or throughput at the SLA load?"
    if sla is None:
        return BranchNode(
            id="sla",
            parent="mature",
            question=q,
            status="unknown",
            evidence="no serving simulation (not a reproducible decoder preset)",
            next_action="replay a production trace on both builds and compare p95/p99",
        )
    b, c = sla.baseline, sla.candidate
    moved = [
        f"{k} {b[k]:.4g} -> {c[k]:.4g}"
        for k in ("p95_s", "p99_s")
        if b[k] and (c[k] - b[k]) / b[k] > max(flag_at, sla.noise(k))
    ]
    if b["throughput"] and (b["throughput"] - c["throughput"]) / b["throughput"] > flag_at:
        moved.append(f"throughput {b['throughput']:.4g} -> {c['throughput']:.4g} tokens/s")
    sides = f" ({sla.sides['baseline']} vs {sla.sides['candidate']})" if sla.sides else ""
    evidence = (
        f"{sla.requests} {_TRACE} requests at {sla.rate_per_s:.3g} req/s{sides}: p95 "
        f"{b['p95_s']:.4g} -> {c['p95_s']:.4g} s, p99 {b['p99_s']:.4g} -> {c['p99_s']:.4g} s, "
        f"throughput {b['throughput']:.4g} -> {c['throughput']:.4g} tokens/s"
    )
    return BranchNode(
        id="sla",
        parent="mature",
        question=q,
        status="fail" if moved else "pass",
        evidence=evidence,
        next_action="the regression reaches users: apply the rollback criteria"
        if moved
        else "the KPI change does not move the SLA: ship decision rests on the guardrails",
    )


def debug_branches(
    base: RunRecord,
    cand: RunRecord,
    *,
    comparable: bool,
    mismatched: tuple[str, ...],
    sla: SlaResult | None,
    flag_at: float = 0.02,
) -> tuple[BranchNode, ...]:
    """The debug tree's nodes, root first (see the module docstring)."""
    root = BranchNode(
        id="comparable",
        parent=None,
        question="was the evidence captured under matching tags (except the declared change)?",
        status="pass" if comparable else "fail",
        evidence="tags match" if comparable else f"mismatched: {', '.join(mismatched)}",
        next_action="go on: check workload representativeness"
        if comparable
        else "re-capture both runs under the same tags, or declare the group that changed",
    )
    if not comparable:
        return (root,)
    return (root, _representative(cand), _mature(cand), _sla(sla, flag_at))
