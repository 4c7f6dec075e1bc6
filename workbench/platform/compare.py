"""The workload fit matrix (models x platforms) and the shortlist.

Per (model, platform, plan), one :class:`PlatformRow`:

- fit: weights + KV cache + activations per chip against capacity (:mod:`workbench.platform.fit`),
  at ``max_batch`` sequences of the workload's 99th-percentile context (prompt + output);
- ``step_s`` and ``mfu``: LLMs: a decode step at ``max_batch`` and the mean context, and the MFU
  of a batch-1 prefill of the mean prompt; images: one batch of ``max_batch``;
- ``throughput_at_sla``: the achieved rate at the knee (the highest offered rate whose p99
  latency, end-to-end by default, meets the SLA) of a serving sweep over a handful of rates
  (fractions of an estimated saturation rate), times the data-parallel replicas; requests/s
  (and tokens/s for LLMs);
- ``energy_per_item_j``: joules per generated token (decode step, all chips of the replica) or per
  image; ``perf_per_watt`` is its inverse, items/s per watt;
- ``risk`` (0 = none, 1 = most), read from the profile's software fields::

      risk = clip((1 - maturity) + 0.15 [no fused attention] + 0.10 [no graph capture]
                  + 0.02 x len(assumptions), 0, 1)

  the assumptions count is a confidence signal: every assumed figure is one more thing to verify.

Shortlist rule: drop rows that do not fit or meet the SLA at no swept rate; rank the rest by
``throughput_at_sla per chip x (1 - risk)``, higher first; ties go to lower energy per item.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.hw.schema import Hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.models.presets import PRESETS
from workbench.options import MapOptions
from workbench.platform.fit import FitReport, fit_check, max_kv_tokens, setting_refusal
from workbench.platform.multichip import ParallelPlan, collective_share
from workbench.serving import (
    LoadPoint,
    Workload,
    batcher_grid,
    find_knee,
    load_builtin_trace,
    mapper_batch_time,
    mapper_step_time,
    poisson_arrivals,
    saturation_rate,
    sweep_image_load,
    sweep_load,
)

__all__ = ["RATE_FRACTIONS", "PlatformRow", "compare_platforms", "platform_row", "risk_score",
           "serving_context", "serving_refusal", "shortlist"]  # fmt: skip

#: Offered rates of the serving sweep, as fractions of the estimated saturation rate.
RATE_FRACTIONS: tuple[float, ...] = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0)


def risk_score(hw: Hardware) -> float:
    """Engineering-risk figure of a platform, 0..1 (formula in the module docstring).

    >>> from workbench.hw import load_hardware
    >>> round(risk_score(load_hardware("h100-sxm")), 2)
    0.13
    """
    sw = hw.software
    risk = (1 - sw.maturity) + 0.15 * (not sw.fused_attention) + 0.10 * (not sw.graph_capture)
    return float(min(1.0, max(0.0, risk + 0.02 * len(hw.assumptions))))


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformRow:
    """One cell row of the fit matrix (SI units; rates per second).

    Attributes:
        model: Model name.
        hardware: Profile name.
        plan: Plan label (``"1 chip"``, ``"tp4"``, ``"dp2"`` ...).
        chips: Chips in total.
        fits: Whether one replica fits its chips' memory.
        memory_bytes: Need per chip, bytes.
        capacity_bytes: Capacity per chip, bytes.
        dominant: The largest memory term.
        step_s: Reference step time, seconds (see module docstring).
        mfu: Model FLOPs utilisation of the reference prefill (or batch), 0..1.
        collective_share: Share of the decode step in collectives, 0..1.
        throughput_at_sla: Requests (images) per second at the knee, all replicas; 0 if none.
        tokens_per_s_at_sla: Output tokens per second at the knee (None for images).
        p99_at_sla_s: p99 end-to-end latency at the knee, seconds (None if none).
        energy_per_item_j: Joules per token or image.
        perf_per_watt: Items per second per watt (= items per joule).
        risk: Engineering-risk figure, 0..1.
        unit: ``"token"`` or ``"image"``.
        points: The serving sweep (one replica).
    """

    model: str
    hardware: str
    plan: str
    chips: int
    fits: bool
    memory_bytes: int
    capacity_bytes: int
    dominant: str
    step_s: float
    mfu: float
    collective_share: float
    throughput_at_sla: float
    tokens_per_s_at_sla: float | None
    p99_at_sla_s: float | None
    energy_per_item_j: float
    perf_per_watt: float
    risk: float
    unit: str
    points: tuple[LoadPoint, ...] = ()

    @property
    def score(self) -> float:
        """Shortlist score: throughput at the SLA per chip x (1 - risk)."""
        return self.throughput_at_sla / self.chips * (1 - self.risk)

    def to_dict(self) -> dict[str, object]:
        """Plain dict without the sweep points (JSON-ready), plus ``score``."""
        out = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "points"
        }
        out["score"] = self.score
        return out


def _workload(trace: str | Workload, n_requests: int, seed: int) -> Workload:
    if isinstance(trace, Workload):
        return trace.head(n_requests)
    if trace == "poisson":
        return poisson_arrivals(1.0, n_requests, seed=seed)
    return load_builtin_trace(trace).head(n_requests)


def serving_context(model: str, work: Workload) -> int:
    """The context one sequence of ``work`` needs, tokens (1 for a model that is not a decoder).

    The 99th percentile of prompt + output tokens, at most the model's context length.
    """
    if model not in PRESETS or not PRESETS[model].causal:
        return 1
    return int(min(np.percentile(work.prompt_tokens + work.output_tokens, 99),
                   PRESETS[model].max_seq))  # fmt: skip


def serving_refusal(
    model: str,
    hw: Hardware,
    *,
    trace: str | Workload = "production-chat",
    n_requests: int = 1500,
    dtype: str = "bf16",
) -> str:
    """Why ``hw`` cannot serve ``model`` on the trace at all ('' when it can).

    The check ``workbench map`` and the explorer apply, by the same code
    (:func:`workbench.platform.fit.setting_refusal`), to the two steps of one request of the
    trace's :func:`serving_context`: its prefill (the p99 prompt) and its last decode step (the
    context less the new token cached). A model whose weights, that request's KV cache and its
    activations do not fit one chip has no latency curve to draw.

    Args:
        model: Decoder preset.
        hw: Platform.
        trace: Built-in trace name or a Workload.
        n_requests: Requests of the trace replayed (its head).
        dtype: Activation, weight and KV format.

    Returns:
        One line naming the limit and the numbers, or ''.
    """
    work = _workload(trace, n_requests, 0)
    ctx = serving_context(model, work)
    cap = PRESETS[model].max_seq if model in PRESETS else ctx
    prompt = int(min(np.percentile(work.prompt_tokens, 99), cap))
    why = setting_refusal(model, hw, phase="decode", batch=1, seq=max(ctx - 1, 1), dtype=dtype)
    why = why or setting_refusal(model, hw, phase="prefill", batch=1, seq=prompt, dtype=dtype)
    return f"one request of {ctx:,} tokens (the trace's p99) {why}" if why else ""


def _llm_row(
    model: str, hw: Hardware, opts: MapOptions, plan: ParallelPlan, fit: FitReport,
    work: Workload, sla_s: float, max_batch: int, seed: int,
) -> dict[str, object]:  # fmt: skip
    tp = plan.tensor_parallel
    ctx_mean = int(work.prompt_tokens.mean() + work.output_tokens.mean() / 2)
    prompt_mean = int(work.prompt_tokens.mean())
    cap = PRESETS[model].max_seq
    table = mapper_step_time(model, hw, opts, tensor_parallel=tp, **batcher_grid(max_batch, cap))
    dtype = opts.dtype or "bf16"
    dec = build_graph(model, "decode", batch=max_batch, seq=min(ctx_mean, cap - 1),
                      context=min(ctx_mean, cap - 1), dtype=dtype, tensor_parallel=tp)  # fmt: skip
    dmap = map_model(dec, hw, opts)
    pre = map_model(build_graph(model, "prefill", batch=1, seq=min(prompt_mean, cap), dtype=dtype,
                                tensor_parallel=tp), hw, opts)  # fmt: skip
    sat = saturation_rate(table, work, max_batch)
    kv_tokens = max_kv_tokens(fit, model, dtype)
    points = sweep_load([sat * f for f in RATE_FRACTIONS], work, table, max_batch=max_batch,
                        kv_capacity_tokens=kv_tokens or None, variance=hw.runtime_variance,
                        seed=seed)  # fmt: skip
    energy = dmap.energy_j * tp / dmap.items_per_step
    return {"step_s": dmap.time_s, "mfu": pre.mfu, "collective_share": collective_share(dmap),
            "energy_per_item_j": energy, "points": points, "unit": "token"}  # fmt: skip


def _image_row(
    model: str, hw: Hardware, opts: MapOptions, work: Workload, max_batch: int, seed: int
) -> dict[str, object]:
    table = mapper_batch_time(
        model, hw, opts, tuple(sorted({1, max(1, max_batch // 4), max_batch}))
    )
    m = map_model(build_graph(model, batch=max_batch, dtype=opts.dtype or "bf16"), hw, opts)
    sat = max_batch / table(max_batch)
    points = sweep_image_load([sat * f for f in RATE_FRACTIONS], work, table, max_batch=max_batch,
                              variance=hw.runtime_variance, seed=seed)  # fmt: skip
    energy = m.energy_j / m.items_per_step
    return {"step_s": m.time_s, "mfu": m.mfu, "collective_share": 0.0,
            "energy_per_item_j": energy, "points": points, "unit": "image"}  # fmt: skip


def platform_row(
    model: str,
    hw: Hardware,
    *,
    plan: ParallelPlan | None = None,
    options: MapOptions | None = None,
    trace: str | Workload = "production-chat",
    sla_s: float = 10.0,
    max_batch: int = 16,
    n_requests: int = 1500,
    seed: int = 0,
    sla_metric: str = "p99_e2e_s",
) -> PlatformRow:
    """Evaluate one model on one platform under a plan.

    Args:
        model: Preset name (decoder LLM, or an image model such as ``"resnet50"``).
        hw: Platform.
        plan: Tensor/data-parallel degrees (None: one chip).
        options: Mapping overrides.
        trace: ``"production-chat"``, ``"synthetic-fixed"``, ``"poisson"`` or a Workload (images
            use only its arrival times).
        sla_s: p99 end-to-end latency limit, seconds.
        max_batch: Largest batch of the serving replica.
        n_requests: Requests simulated per load level.
        seed: Seed of the variance draws.
        sla_metric: The :class:`LoadPoint` latency the SLA bounds (images: e2e only).

    Returns:
        The :class:`PlatformRow` (rows that do not fit carry zeros for the serving figures).
    """
    plan = plan or ParallelPlan()
    opts = options or MapOptions()
    dtype = opts.dtype or "bf16"
    work = _workload(trace, n_requests, seed)
    llm = model in PRESETS and PRESETS[model].causal
    ctx = serving_context(model, work)
    fit = fit_check(model, hw, batch=max_batch, context=ctx, dtype=dtype,
                    weight_dtype=opts.weight_dtype, tensor_parallel=plan.tensor_parallel,
                    prefill_tokens=min(ctx, 2048))  # fmt: skip
    base = {"model": model, "hardware": hw.name, "plan": plan.label, "chips": plan.chips,
            "fits": fit.fits, "memory_bytes": fit.total_bytes, "capacity_bytes": fit.capacity_bytes,
            "dominant": fit.dominant, "risk": risk_score(hw)}  # fmt: skip
    if not fit.fits:
        return PlatformRow(**base, step_s=0.0, mfu=0.0, collective_share=0.0,  # type: ignore[arg-type]
                           throughput_at_sla=0.0, tokens_per_s_at_sla=None, p99_at_sla_s=None,
                           energy_per_item_j=0.0, perf_per_watt=0.0,
                           unit="token" if llm else "image")  # fmt: skip
    if llm:
        parts = _llm_row(model, hw, opts, plan, fit, work, sla_s, max_batch, seed)
    else:
        parts = _image_row(model, hw, opts, work, max_batch, seed)
    points: tuple[LoadPoint, ...] = parts["points"]  # type: ignore[assignment]
    knee = find_knee(points, sla_s, sla_metric if llm else "p99_e2e_s").last_ok
    dp = plan.data_parallel
    thr = knee.achieved_rate_per_s * dp if knee else 0.0
    tok = None
    if llm:
        tok = knee.output_tokens_per_s * dp if knee and knee.output_tokens_per_s else 0.0
    energy = float(parts["energy_per_item_j"])  # type: ignore[arg-type]
    return PlatformRow(
        **base,  # type: ignore[arg-type]
        step_s=float(parts["step_s"]),  # type: ignore[arg-type]
        mfu=float(parts["mfu"]),  # type: ignore[arg-type]
        collective_share=float(parts["collective_share"]),  # type: ignore[arg-type]
        throughput_at_sla=thr,
        tokens_per_s_at_sla=tok,
        p99_at_sla_s=knee.p99_e2e_s if knee else None,
        energy_per_item_j=energy,
        perf_per_watt=1.0 / energy if energy > 0 else 0.0,
        unit=str(parts["unit"]),
        points=points,
    )


def compare_platforms(
    models: Sequence[str],
    hardware: Sequence[Hardware],
    *,
    plan: ParallelPlan | None = None,
    options: MapOptions | None = None,
    trace: str | Workload = "production-chat",
    sla_s: float = 10.0,
    max_batch: int = 16,
    n_requests: int = 1500,
    seed: int = 0,
    sla_metric: str = "p99_e2e_s",
) -> tuple[PlatformRow, ...]:
    """The fit matrix: one row per (model, platform), models outer.

    Arguments as in :func:`platform_row`.
    """
    return tuple(
        platform_row(
            m,
            hw,
            plan=plan,
            options=options,
            trace=trace,
            sla_s=sla_s,
            max_batch=max_batch,
            n_requests=n_requests,
            seed=seed,
            sla_metric=sla_metric,
        )
        for m in models
        for hw in hardware
    )


def shortlist(rows: Sequence[PlatformRow], k: int = 3) -> tuple[PlatformRow, ...]:
    """The best ``k`` rows by the documented rule (fits, meets the SLA somewhere, best score)."""
    ok = [r for r in rows if r.fits and r.throughput_at_sla > 0]
    ok.sort(key=lambda r: (-r.score, r.energy_per_item_j))
    return tuple(ok[:k])
