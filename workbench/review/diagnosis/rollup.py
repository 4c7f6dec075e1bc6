"""The headline of a measured pair no mapping sheet describes: the per-category roll-up.

Two profiler traces read without a model (``workbench run --from-trace T --record R``, no
``--model``) have kernels but no predictions, and across GPU generations their kernels have other
names (``volta_sgemm_128x64_nn`` where the other ran ``ampere_sgemm_128x64_nn``), so aligning them
by name finds nothing to blame. Such a pair is judged by what it ran, as issue 18 asks ("without
declared changes, shares come from the per-operator and per-category roll-up"):

- each kernel category (gemm, copy, collective, embedding... :data:`~workbench.evidence.CATEGORIES`)
  carries its change in kernel time per steady step, candidate minus baseline (durations summed
  over streams, so categories that overlap on two streams both count: shares need not add to
  100 %);
- a category is material when it carries at least ``material_share`` of the step-time
  regression **and** its change is beyond its own step-to-step noise: the 95 % interval of its
  per-step times (:func:`workbench.evidence.compare.compare_steps`, paired per step as the step
  time is) excludes 0.
  The step time's own interval is the wrong yardstick here: it holds the GPU's idle waits (on the
  DLRM V100 trace the step period spans 82-167 ms while its GEMM time per step spans 34.6-34.9 ms);
- the mechanism is ``hardware_rate`` when the hardware differs (the platform's rates) and
  ``measured_slowdown`` otherwise (a cause outside any mapping sheet);
- the anchor is the operator (the ``cpu_op`` that launched the kernels, when the record carries
  it) whose kernels of that category moved most, read from the record's kernel rows (their
  time per step over every step, the warm-up one included).

Records written before per-step category times existed fall back to the kernel rows' times with
the step-time noise as the floor.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from workbench._format import fmt_delta, fmt_time
from workbench.evidence.compare import compare_steps
from workbench.evidence.run import CATEGORIES
from workbench.review.join.categories import NO_OPERATOR
from workbench.review.join.trace_summary import short_name
from workbench.review.records._types import RunRecord

if TYPE_CHECKING:
    from workbench.review.diagnosis.headline import MechanismShare

__all__ = ["rollup_shares"]

#: Host tags that name the device itself (the hardware change); the others are confounders.
_DEVICE_FACTS = ("device", "compute_capability", "sm_count")


def _row_times(record: RunRecord) -> dict[str, dict[str, float]]:
    """Per category (the row's ``kind``), per operator: measured seconds per iteration.

    A row that names no operator (a record read without the trace's operators) counts under
    its kernel's short name instead.
    """
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for k in record.kernels:
        op = k.ops[0] if k.ops else f"kernel {short_name(k.name, 48)}"
        out[k.kind][op] += k.measured_s or 0.0
    return out


def _steps(record: RunRecord) -> dict[str, tuple[float, ...]]:
    m = record.measurement
    return dict(m.category_steps_s) if m is not None else {}


def _confounders(base: RunRecord, cand: RunRecord) -> str:
    """``world_size 8 vs 2, rank 3 vs 1``: host facts besides the device that differ."""
    a, b = dict(base.tags.hardware.host), dict(cand.tags.hardware.host)
    keys = [k for k in ("world_size", "rank", "backend") if k not in _DEVICE_FACTS]
    return ", ".join(
        f"{k} {a.get(k, 'unknown')} vs {b.get(k, 'unknown')}"
        for k in keys
        if a.get(k, "unknown") != b.get(k, "unknown")
    )


def _category_delta(
    cat: str, sb: dict[str, tuple[float, ...]], sc: dict[str, tuple[float, ...]]
) -> tuple[float, tuple[float, float] | None]:
    """Mean per-step change of ``cat`` and its 95 % shift interval (None without steps).

    The interval is the one comparison of measured runs
    (:func:`workbench.evidence.compare_steps`: step i paired with step i when both sides have 3
    steps or more), so a category's verdict agrees with the step time's.
    """
    nb = max((len(v) for v in sb.values()), default=0)
    nc = max((len(v) for v in sc.values()), default=0)
    b, c = sb.get(cat, (0.0,) * nb), sc.get(cat, (0.0,) * nc)
    if not b or not c:
        return 0.0, None
    delta = statistics.fmean(c) - statistics.fmean(b)
    if len(b) < 2 or len(c) < 2:
        return delta, None
    s = compare_steps(b, c)
    return delta, (s.low_s, s.high_s)


def rollup_shares(
    base: RunRecord,
    cand: RunRecord,
    total_s: float,
    *,
    noise_s: float,
    material_share: float,
) -> list[MechanismShare]:
    """The material categories of an unmapped measured pair, largest share first.

    Args:
        base: Baseline record (measured, no predictions).
        cand: Candidate record.
        total_s: The step-time regression, s (candidate - baseline, beyond the step noise).
        noise_s: The step-time noise, s: the floor when the records carry no per-step times.
        material_share: Share of ``total_s`` a category must carry (0..1).

    Returns:
        :class:`~workbench.review.diagnosis.headline.MechanismShare` items (empty when none is
        material).
    """
    from workbench.review.diagnosis.headline import (
        MechanismShare,  # NOTE: headline imports this module
    )

    sb, sc = _steps(base), _steps(cand)
    rows_b, rows_c = _row_times(base), _row_times(cand)
    hw = base.tags.hardware.hardware_hash != cand.tags.hardware.hardware_hash
    mech = "hardware_rate" if hw else "measured_slowdown"
    change = (
        f"hardware: {base.tags.hardware.profile} -> {cand.tags.hardware.profile}"
        if hw
        else "measured kernels slower"
    )
    found: list[tuple[float, int, str, str]] = []
    for order, cat in enumerate(CATEGORIES):
        if sb and sc:
            delta, interval = _category_delta(cat, sb, sc)
            beyond = interval is not None and interval[0] > 0
            noise = "" if interval is None else (
                f" (95% interval {fmt_delta(interval[0])} to {fmt_delta(interval[1])} per step)"
            )  # fmt: skip
        else:
            delta = sum(rows_c.get(cat, {}).values()) - sum(rows_b.get(cat, {}).values())
            beyond, noise = delta > noise_s, ""
        if delta >= material_share * total_s and delta > 0 and beyond:
            found.append((delta, order, cat, noise))
    found.sort(key=lambda f: (-f[0], f[1]))
    out = []
    others = ", ".join(f"{c} {fmt_delta(d)} ({d / total_s:.0%})" for d, _, c, _ in found[1:4])
    context = _confounders(base, cand)
    for delta, order, cat, noise in found:
        op, op_delta, sides = _top_operator(rows_b.get(cat, {}), rows_c.get(cat, {}))
        evidence = (
            f"{cat} kernel time per step {_side(sb, rows_b, cat)} -> {_side(sc, rows_c, cat)}, "
            f"{fmt_delta(delta)}{noise}; most under {op} ({fmt_delta(op_delta)} per step with the "
            f"warm-up one, {sides})"
        )
        if cat == found[0][2]:
            if others:
                evidence += f"; next: {others}"
            evidence += "; kernel time is summed over streams, so shares can overlap"
            if context:
                evidence += f"; the runs also differ in {context} (not the hardware alone)"
        out.append(
            MechanismShare(
                mechanism=mech,
                level=None,
                change=change,
                share=delta / total_s,
                share_s=delta,
                family=f"{cat} kernels",
                count=1,
                kernel=f"{cat} kernels",
                order=float(order),
                delta_s=delta,
                evidence=evidence,
                rows=(),
            )
        )
    return out


def _side(steps: dict[str, tuple[float, ...]], rows: dict[str, dict[str, float]], cat: str) -> str:
    if steps:
        v = steps.get(cat, ())
        return fmt_time(statistics.fmean(v) if v else 0.0)
    return fmt_time(sum(rows.get(cat, {}).values()))


def _top_operator(b: dict[str, float], c: dict[str, float]) -> tuple[str, float, str]:
    """The operator whose kernels of one category moved most: name, delta, which sides ran it."""
    ops = sorted(set(b) | set(c), key=lambda o: (-(c.get(o, 0.0) - b.get(o, 0.0)), o))
    if not ops:
        return NO_OPERATOR, 0.0, "-"
    op = ops[0]
    sides = "both runs" if op in b and op in c else ("candidate only" if op in c else "baseline")
    return op, c.get(op, 0.0) - b.get(op, 0.0), sides
