"""Closure: guardrails (rollback criteria), their evaluation, and the release decision.

Guardrails live in a YAML file validated by Pydantic (default ``data/guardrails.yaml``). Each
metric's *regression* is positive when the candidate is worse:

=============== ===================================================================
time_s          (candidate - baseline) / baseline            (relative)
mfu             (baseline - candidate) / baseline            (relative)
stall_fraction  max over layer types of candidate - baseline  (absolute)
p95_s, p99_s    end-to-end latency growth at the SLA load     (relative, when simulated)
throughput      output tokens/s drop at the SLA load          (relative, when simulated)
quality_error   candidate - baseline                          (absolute, when measured)
=============== ===================================================================

Decision: any regression beyond ``rollback_at`` -> ``roll back``; else missing evidence ->
``cannot sign off`` (reasons ``cannot sign off: missing X``); else any beyond ``flag_at`` ->
``ship behind a flag``; else ``ship``. A faster candidate has negative regressions: it ships.
A regression within the measurement noise (``noise``: both sides' interval half-widths,
relative) is not counted, whatever the thresholds say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.review.decision._config import DATA_DIR, load_yaml_model
from workbench.review.records.mbu import bandwidth_share, record_mbu

__all__ = [
    "DEFAULT_GUARDRAILS",
    "Guardrail",
    "GuardrailCheck",
    "Guardrails",
    "decide",
    "evaluate_guardrails",
    "guardrail_inputs",
    "load_guardrails",
]

DEFAULT_GUARDRAILS = DATA_DIR / "guardrails.yaml"
Metric = Literal["time_s", "mfu", "stall_fraction", "p95_s", "p99_s", "throughput", "quality_error"]
_LOWER_IS_BETTER = {"time_s", "p95_s", "p99_s", "quality_error", "stall_fraction"}


class Guardrail(BaseModel):
    """One rollback criterion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: Metric = Field(description="Metric the guardrail watches.")
    relative: bool = Field(description="Thresholds are fractions of the baseline (else absolute).")
    flag_at: float = Field(ge=0, description="Regression beyond which the release ships flagged.")
    rollback_at: float = Field(ge=0, description="Regression beyond which it rolls back.")

    @model_validator(mode="after")
    def _ordered(self) -> Guardrail:
        if self.rollback_at < self.flag_at:
            raise ValueError("rollback_at: must be >= flag_at")
        return self


class Guardrails(BaseModel):
    """The guardrails file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = Field(description="File format version (1).")
    guardrails: tuple[Guardrail, ...] = Field(min_length=1, description="The criteria.")


def load_guardrails(path: str | Path | None = None) -> Guardrails:
    """Load guardrails (default: the built-in file).

    Raises:
        ConfigError: One line naming the file and the field.
    """
    return load_yaml_model(path or DEFAULT_GUARDRAILS, Guardrails)


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardrailCheck:
    """One guardrail evaluated.

    Attributes:
        metric: Metric name.
        baseline, candidate: The values (None when absent).
        regression: Positive when worse (relative or absolute as the guardrail says), or None.
        flag_at, rollback_at: The thresholds.
        status: ``ok``, ``flag``, ``rollback`` or ``n/a`` (metric not present).
        noise: Measurement noise of the metric, same unit as ``regression`` (0: none known).
        source: The validation slice the values come from (the worst one).
        note: Why the metric is n/a or what the status rests on (e.g. within noise).
    """

    metric: str
    baseline: float | None
    candidate: float | None
    regression: float | None
    flag_at: float
    rollback_at: float
    relative: bool
    status: str
    noise: float = 0.0
    source: str = ""
    note: str = ""


def _regression(metric: str, b: float, c: float, relative: bool) -> float:
    worse = c - b if metric in _LOWER_IS_BETTER else b - c
    if not relative:
        return worse
    return worse / abs(b) if b else (0.0 if worse <= 0 else float("inf"))


def evaluate_guardrails(
    values: dict[str, tuple[float | None, float | None]],
    guardrails: Guardrails,
    *,
    noise: dict[str, float] | None = None,
    sources: dict[str, str] | None = None,
    skip: dict[str, str] | None = None,
) -> tuple[GuardrailCheck, ...]:
    """Check each guardrail against ``values[metric] = (baseline, candidate)``.

    Args:
        values: ``metric -> (baseline, candidate)``.
        guardrails: The criteria.
        noise: ``metric -> noise`` in the guardrail's unit; a regression within it is ``ok``.
        sources: ``metric -> slice`` the values come from.
        skip: ``metric -> reason`` for metrics that do not compare here (status ``n/a``).
    """
    noise, sources, skip = noise or {}, sources or {}, skip or {}
    out = []
    for g in guardrails.guardrails:
        b, c = values.get(g.metric, (None, None))
        n, note = noise.get(g.metric, 0.0), skip.get(g.metric, "")
        if b is None or c is None or g.metric in skip:
            reg, status = None, "n/a"
            note = note or "no evidence for this metric"
        else:
            reg = _regression(g.metric, b, c, g.relative)
            status = "rollback" if reg > g.rollback_at else "flag" if reg > g.flag_at else "ok"
            if status != "ok" and reg <= n:
                status, note = "ok", f"within the measurement noise ({n:.2%})"
        out.append(
            GuardrailCheck(
                metric=g.metric,
                baseline=b,
                candidate=c,
                regression=reg,
                flag_at=g.flag_at,
                rollback_at=g.rollback_at,
                relative=g.relative,
                status=status,
                noise=n,
                source=sources.get(g.metric, ""),
                note=note,
            )
        )
    return tuple(out)


#: How a reviewer names each metric in a decision's reasons.
METRIC_LABELS: dict[str, str] = {
    "time_s": "step time",
    "mfu": "MFU",
    "stall_fraction": "memory-stall fraction",
    "p95_s": "p95 latency",
    "p99_s": "p99 latency",
    "throughput": "throughput",
    "quality_error": "quality error",
}
#: Absolute metrics that are fractions: their changes read in percentage points.
_POINTS = {"stall_fraction"}


def amount(check: GuardrailCheck, value: float) -> str:
    """A regression or a threshold in the metric's unit: %, percentage points or a number."""
    if check.relative:
        return f"{value:+.1%}"
    if check.metric in _POINTS:
        return f"{value * 100:+.1f} points"
    return f"{value:+.3g}"


def _pct(check: GuardrailCheck) -> str:
    return amount(check, check.regression or 0.0)


def _reason(check: GuardrailCheck, *, flag: bool) -> str:
    """``step time +217.7% (roll back beyond +5.0%)`` and its source in brackets."""
    label = METRIC_LABELS.get(check.metric, check.metric)
    limits = (
        f"flag beyond {amount(check, check.flag_at)}, roll back beyond "
        f"{amount(check, check.rollback_at)}"
        if flag
        else f"roll back beyond {amount(check, check.rollback_at)}"
    )
    # NOTE: the figure is the worst judged slice's, which need not be the slice a header shows
    where = f" [worst slice: {check.source}]" if check.source else ""
    return f"{label} regressed {_pct(check)} ({_values(check)}{limits}){where}"


def _values(check: GuardrailCheck) -> str:
    """``0.0597% -> 0.0514%; `` for MFU: its relative change beside the values it compares.

    NOTE: a relative change of a small fraction ("MFU regressed +13.8%") read beside the
    values rounded to one decimal ("0.1% -> 0.1%") does not add up; three significant figures
    show the move.
    """
    if check.metric != "mfu" or check.baseline is None or check.candidate is None:
        return ""
    return f"{check.baseline * 100:.3g}% -> {check.candidate * 100:.3g}%; "


def decide(
    checks: tuple[GuardrailCheck, ...], missing: tuple[str, ...] = ()
) -> tuple[str, tuple[str, ...]]:
    """The release decision and its reasons from evaluated guardrails and missing evidence.

    Args:
        checks: The evaluated guardrails.
        missing: Evidence the decision needs and does not have (e.g. ``"p99 latency"``).

    Returns:
        ``("ship" | "ship behind a flag" | "cannot sign off" | "roll back", reasons)``.
    """
    roll = [c for c in checks if c.status == "rollback"]
    flag = [c for c in checks if c.status == "flag"]
    if roll:
        return "roll back", tuple(_reason(c, flag=False) for c in roll)
    if missing:
        return "cannot sign off", tuple(f"cannot sign off: missing {m}" for m in missing)
    if flag:
        return "ship behind a flag", tuple(_reason(c, flag=True) for c in flag)
    present = [METRIC_LABELS.get(c.metric, c.metric) for c in checks if c.status == "ok"]
    return "ship", (f"every guardrail holds ({', '.join(present)})",)


def _bandwidth_metrics(x: Any) -> dict[str, float]:
    """``mbu`` and ``bandwidth_fraction`` (share of kernel time bandwidth-bound) when known."""
    share = bandwidth_share(x)
    mbu = x.mbu if hasattr(x, "graph") else record_mbu(x)
    out = {"mbu": mbu} if mbu is not None else {}
    return out | ({"bandwidth_fraction": share} if share is not None else {})


def _slice_metrics(mapping_or_record: Any) -> dict[str, float]:
    """MFU, MBU, time and the stall fraction by layer type of a mapping or a record's model."""
    m = mapping_or_record
    if hasattr(m, "stall_fraction_by_layer_type") and callable(m.stall_fraction_by_layer_type):
        stall = m.stall_fraction_by_layer_type()
        batch = int(str(m.graph.meta_dict().get("batch") or 1))
        return {
            "mfu": m.mfu,
            **_bandwidth_metrics(m),
            "time_s": m.time_s,
            "time_per_token_s": m.time_s / max(m.items_per_step, 1),
            "time_per_request_s": m.time_s / batch,
            **{f"stall:{k}": v for k, v in stall.items()},
        }
    model = m.model
    out = {
        "time_s": model.time_s,
        "time_per_token_s": 1.0 / model.tokens_per_s if model.tokens_per_s else model.time_s,
        "time_per_request_s": model.time_s / max(m.tags.workload.batch, 1),
    }
    if model.peak_flops > 0:  # NOTE: a trace read without its model has no MFU (not 0 %)
        out["mfu"] = model.mfu
    out.update(_bandwidth_metrics(m))
    out.update({f"stall:{k}": v for k, v in model.stall_fraction_by_layer_type})
    if model.quality_error is not None:
        out["quality_error"] = model.quality_error
    out.update(dict(model.latency))
    return out


def validation_matrix(base: Any, cand: Any, sla: Any | None) -> tuple[dict, ...]:
    """Workload slices x metrics, baseline and candidate.

    The recorded slice comes first; when both runs are reproducible (preset model, same
    hardware profile), two more slices are re-mapped with each run's options: the other phase
    and a quarter of the length (LLMs), or 8x the batch (other models). Latency percentiles come
    from the SLA simulation when there is one, quality error from the records when measured.

    Returns:
        Rows ``{"slice", "source", "phase", "baseline": {metric: value}, "candidate": {...}}``.
    """
    from workbench.review.records.reproduce import remap

    row = {
        "slice": base.label,
        "source": "record",
        "phase": base.tags.workload.phase,
        "baseline": _slice_metrics(base),
        "candidate": _slice_metrics(cand),
    }
    if sla is not None:
        for side in ("baseline", "candidate"):
            row[side].update({f"sla_{k}": v for k, v in getattr(sla, side).items()})
    rows = [row]
    w = base.tags.workload
    n = (w.seq if w.phase == "prefill" else w.context) or 0
    if w.phase in ("prefill", "decode"):
        other = "decode" if w.phase == "prefill" else "prefill"
        slices = [{"phase": other, "tokens": n}, {"phase": w.phase, "tokens": max(n // 4, 16)}]
    else:
        slices = [{"batch": w.batch * 8}]
    for args in slices:
        mb, mc = remap(base, **args), remap(cand, **args)
        if mb is None or mc is None:
            continue
        meta = mb.graph.meta_dict()
        label = f"{w.model} {meta.get('phase')} b{meta.get('batch')}"
        label += f" s{meta['seq']}" if meta.get("seq") else ""
        label += f" c{meta['context']}" if meta.get("context") and not meta.get("seq") else ""
        rows.append(
            {
                "slice": label,
                "source": "re-mapped",
                "phase": str(meta.get("phase") or w.phase),
                "baseline": _slice_metrics(mb),
                "candidate": _slice_metrics(mc),
            }
        )
    return tuple(rows)


def guardrail_values(
    matrix: tuple[dict, ...],
) -> dict[str, tuple[float | None, float | None]]:
    """``metric -> (baseline, candidate)`` for the guardrails: the worst slice of the matrix."""
    return guardrail_inputs(matrix)[0]


def guardrail_inputs(
    matrix: tuple[dict, ...], time_key: str = "time_s"
) -> tuple[dict[str, tuple[float | None, float | None]], dict[str, str]]:
    """Guardrail values (the worst slice per metric) and the slice each comes from.

    A row marked ``"judged": False`` by the decision policy
    (:func:`workbench.review.decision.policy. judge_slices`: the other LLM phase, a trade-off) is
    left out of the per-slice metrics.

    Args:
        matrix: Rows of :func:`validation_matrix`.
        time_key: The time metric compared (``time_per_token_s`` when the workload changed).

    Returns:
        ``(metric -> (baseline, candidate), metric -> slice label)``.
    """
    matrix = tuple(r for r in matrix if r.get("judged", True))
    values: dict[str, tuple[float | None, float | None]] = {}
    sources: dict[str, str] = {}

    def worst(metric: str, rows: list[tuple[float, float, str]], score) -> None:
        if rows:
            b, c, where = max(rows, key=lambda p: score(p[0], p[1]))
            values[metric], sources[metric] = (b, c), where

    def pairs(key: str) -> list[tuple[float, float, str]]:
        return [
            (r["baseline"][key], r["candidate"][key], r["slice"])
            for r in matrix
            if key in r["baseline"] and key in r["candidate"]
        ]

    worst("time_s", pairs(time_key), lambda b, c: (c - b) / (b or 1.0))
    worst("mfu", pairs("mfu"), lambda b, c: (b - c) / (b or 1.0))
    stalls = [
        (r["baseline"].get(k, 0.0), v, r["slice"])
        for r in matrix
        for k, v in r["candidate"].items()
        if k.startswith("stall:")
    ]
    worst("stall_fraction", stalls, lambda b, c: c - b)
    first: dict[str, Any] = matrix[0] if matrix else {"baseline": {}, "candidate": {}, "slice": ""}
    for metric, key in (
        ("p95_s", "sla_p95_s"),
        ("p99_s", "sla_p99_s"),
        ("throughput", "sla_throughput"),
        ("quality_error", "quality_error"),
    ):
        b, c = first["baseline"].get(key), first["candidate"].get(key)
        if b is not None and c is not None:
            values[metric], sources[metric] = (b, c), first["slice"]
    return values, sources
