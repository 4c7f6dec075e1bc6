"""The headline of a regression: every material mechanism with its share, the largest first.

A kernel group can carry several mechanisms at once (fusion lost *and* a wider format on the same
``down_proj`` kernels), so the headline is not the first class in execution order but the
mechanism with the largest material share of the regression (ties broken by execution order):

* **Declared changes** (re-mappable runs): each change's counterfactual share
  (:func:`~workbench.review.diagnosis.attribution.counterfactual`) goes to the mechanism it works
  through (a fusion rule to ``fusion_broken``, a wider format override to ``precision_fallback``, a
  forced tile to ``tile_spills_sram`` or ``tile_wave_quantization``, the hardware profile to
  ``hardware_rate``, a launch mode to ``launch_sync_overhead``), on the kernel family it touched
  most. The workload slice is no mechanism: its share is the workload's own cost (owned by
  nobody).
* **Without an attribution** (measured pairs, runs the model cannot re-map): the shares come from
  the per-group roll-up of the kernel diff, one class at a time
  (:func:`~workbench.review.diagnosis.first_failing.align`).
* **Two traces with no mapping sheet** (``run --from-trace`` without ``--model``): the shares come
  from the per-category and per-operator roll-up of the measured kernel time, each category
  judged against its own step-to-step noise (:mod:`workbench.review.diagnosis.rollup`).

Material: at least ``material_share`` (default 5 %) of the total regression, and more than the
measurement noise. A family whose own delta is not above the noise never anchors a headline.
Anchors name kernel families (``layers.*.mlp.down_proj`` x32), with natural sort.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench._format import fmt_time
from workbench.review.diagnosis.attribution import Attribution, Change
from workbench.review.diagnosis.changes import change_label
from workbench.review.diagnosis.families import family_of, natural_key
from workbench.review.diagnosis.first_failing import (
    MATERIAL_SHARE,
    FirstFailing,
    GroupChange,
    align,
    find_first_failing,
    time_field,
)
from workbench.review.diagnosis.rollup import rollup_shares
from workbench.review.diagnosis.table import by_name, mechanism_of_change
from workbench.review.records.store import RunRecord

#: ``(baseline, candidate)`` seconds of the step's own overhead outside its kernels.
StepPair = tuple[float, float]

__all__ = [
    "MechanismShare",
    "anchor_of",
    "family_of",
    "headline_of",
    "headline_sentence",
    "mechanism_shares",
    "natural_key",
    "spread_text",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MechanismShare:
    """One mechanism's share of a regression, and the kernel family it shows on.

    Attributes:
        mechanism: Mechanism class (a key of :data:`~workbench.review.diagnosis.table.MECHANISMS`).
        level: Memory level (bandwidth saturation, hardware rate), else None.
        change: What caused it (the declared change(s), or ``<family> slower``).
        share: Share of the total time delta (0..1; may exceed 1 when others improve).
        share_s: The same, seconds.
        family: The kernel family it shows on most (``layers.*.mlp.down_proj``).
        count: Kernel groups of that family it touched.
        kernel: The family's largest group (its anchor kernel).
        order: Execution order of the family's first group (ties are broken by it).
        delta_s: The family's own time delta, seconds.
        evidence: The largest group's before/after sentence.
        rows: Mapping-sheet rows (before and after) of the largest group.
        spread: Every family the mechanism moved, ``(family, kernel groups, delta seconds)``,
            largest first: what the share is made of (one entry: all on ``family``).
    """

    mechanism: str
    level: str | None
    change: str
    share: float
    share_s: float
    family: str
    count: int
    kernel: str
    order: float
    delta_s: float
    evidence: str
    rows: tuple[dict[str, object], ...]
    spread: tuple[tuple[str, int, float], ...] = ()

    @property
    def anchor(self) -> str:
        """``layers.*.mlp.down_proj x32`` (the family and how many groups it has)."""
        return f"{self.family} x{self.count}" if self.count > 1 else self.kernel

    @property
    def where(self) -> str:
        """The anchor, or every family the share is made of when it spans several."""
        return spread_text(self.spread) if len(self.spread) > 1 else self.anchor


#: Families a spread names one by one; the rest are summed into one "other" entry.
_SPREAD_NAMED = 3


def spread_text(spread: Sequence[tuple[str, int, float]]) -> str:
    """``16 kernels: layers.*.mlp.down_proj x12 54 us + embed_tokens 4.5 us + ...``.

    The counts add up to the first figure and the times to the mechanism's delta (issue 32:
    a headline credited ``down_proj x12`` with the whole +72 us that 16 syncs added).

    Args:
        spread: ``(family, kernel groups, delta seconds)`` per family, largest first.
    """
    named, rest = list(spread[:_SPREAD_NAMED]), list(spread[_SPREAD_NAMED:])
    parts = [f"{f} x{n} {fmt_time(d)}" if n > 1 else f"{f} {fmt_time(d)}" for f, n, d in named]
    if rest:
        n_rest = sum(n for _, n, _ in rest)
        what = "other family" if len(rest) == 1 else "other families"
        parts.append(f"{len(rest)} {what} x{n_rest} {fmt_time(sum(d for _, _, d in rest))}")
    return f"{sum(n for _, n, _ in spread)} kernels: " + " + ".join(parts)


def _touches(change: Change, g: GroupChange) -> bool:
    """Whether declared ``change`` touched kernel group ``g`` (moved its time)."""
    if g.delta_s == 0:
        return False
    rule, glob = change.fusion_rule, change.kernel_glob
    if rule is not None:
        return g.fusion_toggled(rule)
    if change.name in ("dtype", "weight_dtype"):
        return {(k.name, k.dtype) for k in g.baseline} != {(k.name, k.dtype) for k in g.candidate}
    if glob is not None:
        return g.has_kernel(glob)
    want = _mechanism_of(change, g)
    return want is None or g.mechanism == want


def _mechanism_of(change: Change, g: GroupChange | None) -> str | None:
    """The mechanism ``change`` works through (on group ``g`` where the group decides)."""
    shown = [m for m, _, _ in g.mechanisms] if g is not None else []
    fallback = g.mechanism if g is not None else None
    return mechanism_of_change(change.name, shown, fallback=fallback)


def _families(groups: Sequence[GroupChange]) -> dict[str, list[GroupChange]]:
    fams: dict[str, list[GroupChange]] = defaultdict(list)
    for g in groups:
        fams[family_of(g.anchor)].append(g)
    return fams


def _share(
    mech: str,
    level: str | None,
    change: str,
    share_s: float,
    total: float,
    groups: Sequence[GroupChange],
    floor_s: float,
) -> MechanismShare | None:
    """The share on its largest family, or None when no family is above ``floor_s``."""
    fams = _families(groups)
    ranked = sorted(
        fams, key=lambda f: (-sum(g.delta_s for g in fams[f]), fams[f][0].order, natural_key(f))
    )
    fam = next((f for f in ranked if sum(g.delta_s for g in fams[f]) > floor_s), None)
    if fam is None:
        return None
    members = sorted(fams[fam], key=lambda g: natural_key(g.anchor))
    top = max(members, key=lambda g: (g.delta_s, -g.order))
    moved = [(f, [g for g in fams[f] if g.delta_s > 0]) for f in ranked]
    spread = tuple((f, len(gs), sum(g.delta_s for g in gs)) for f, gs in moved if gs)
    return MechanismShare(
        mechanism=mech,
        level=level if level is not None else top.level,
        change=change,
        share=share_s / total if total else 0.0,
        share_s=share_s,
        family=fam,
        count=len(members),
        kernel=top.anchor,
        order=min(g.order for g in members),
        delta_s=sum(g.delta_s for g in members),
        evidence=f"{top.anchor}: {top.evidence_for(mech)}" if top.evidence else top.anchor,
        rows=top.sheet_rows(),
        spread=spread,
    )


def _run_level(mech: str, change: str, share_s: float, total: float, step_s: StepPair) -> Any:
    """The share of a run-level mechanism anchored off the kernels (the per-step overhead)."""
    anchor = by_name(mech).anchor
    before, after = step_s
    return MechanismShare(
        mechanism=mech,
        level=None,
        change=change,
        share=share_s / total if total else 0.0,
        share_s=share_s,
        family=anchor,
        count=1,
        kernel=anchor,
        order=math.inf,  # NOTE: no kernel: after every family in execution order
        delta_s=after - before,
        evidence=f"{anchor}: {fmt_time(before)} -> {fmt_time(after)} a step, outside its kernels",
        rows=(),
    )


def _from_attribution(
    att: Attribution,
    groups: Sequence[GroupChange],
    total: float,
    floor_s: float,
    step_s: StepPair = (0.0, 0.0),
) -> list[MechanismShare]:
    per: dict[str, list[tuple[Any, list[GroupChange]]]] = defaultdict(list)
    work = any(s.change.group == "workload" for s in att.shares)
    ref = sum(s.share_s for s in att.shares if s.change.group != "workload") if work else 0.0
    ref = ref if work else att.total_s
    for s in att.shares:
        if s.change.group == "workload" or s.share_s <= 0:
            continue  # NOTE: the workload's own cost is no mechanism (owned by nobody)
        touched = [g for g in groups if _touches(s.change, g)]
        top = max(touched, key=lambda g: g.delta_s, default=None)
        mech = _mechanism_of(s.change, top)
        if mech:
            per[mech].append((s, touched))
    out = []
    for mech, items in per.items():
        # NOTE: counterfactual shares are predicted seconds: scaled to the compared delta
        # (measured runs) as their fraction of what the attribution explains (without the
        # workload's own cost when the workload changed too)
        share_s = sum(s.share_s for s, _ in items) / ref * total if ref else 0.0
        touched = [g for _, gs in items for g in gs]
        change = " + ".join(change_label(s.change) for s, _ in items)
        if by_name(mech).anchor:
            out.append(_run_level(mech, change, share_s, total, step_s))
            continue
        found = _share(mech, None, change, share_s, total, touched or groups, floor_s)
        if found is not None:
            out.append(found)
    return out


def _from_groups(
    groups: Sequence[GroupChange],
    total: float,
    floor_s: float,
    measured: bool,
    step_s: StepPair = (0.0, 0.0),
) -> list[MechanismShare]:
    per: dict[tuple[str, str | None], list[GroupChange]] = defaultdict(list)
    for g in groups:
        mech = g.mechanism or ("measured_slowdown" if measured and g.delta_s > 0 else None)
        if mech:
            per[(mech, g.level)].append(g)
    out = []
    for (mech, level), members in per.items():
        share_s = sum(g.delta_s for g in members)
        pos = [g for g in members if g.delta_s > 0]
        found = _share(mech, level, mech, share_s, total, pos, floor_s)
        if found is not None:
            out.append(found)
    grown = step_s[1] - step_s[0]
    if grown > 0:  # NOTE: the step's own overhead is no kernel group: its own mechanism
        # NOTE: the table names it: the mechanism a change of the step overhead works through
        mech = mechanism_of_change("step_overhead_s") or ""
        out.append(_run_level(mech, "per-step overhead", grown, total, step_s))
    return out


def mechanism_shares(
    groups: Sequence[GroupChange],
    total_s: float,
    *,
    attribution: Attribution | None = None,
    noise_s: float = 0.0,
    measured: bool = False,
    material_share: float = MATERIAL_SHARE,
    step_s: StepPair = (0.0, 0.0),
) -> tuple[MechanismShare, ...]:
    """Every material mechanism of a regression, the headline first.

    Args:
        groups: Aligned kernel groups (:func:`~workbench.review.diagnosis.first_failing.align`).
        total_s: The model's time delta, seconds (candidate - baseline).
        attribution: The counterfactual attribution, when the runs can be re-mapped.
        noise_s: Measurement noise, seconds (0 for predicted runs).
        measured: Kernel times are measured (a slowed group with the same mapping is a
            ``measured_slowdown``).
        material_share: Share of the total a mechanism must carry (0..1).
        step_s: The step's own overhead outside its kernels, (baseline, candidate), seconds.

    Returns:
        The material mechanisms, largest share first (ties in execution order); empty when the
        time did not regress beyond the noise.
    """
    if total_s <= max(noise_s, 0.0):
        return ()
    floor_s = max(material_share * total_s, noise_s)
    fam_floor = max(noise_s, 1e-3 * total_s)
    found: list[MechanismShare] = []
    if attribution is not None and attribution.shares:
        found = _from_attribution(attribution, groups, total_s, fam_floor, step_s)
    if not found and (attribution is None or not attribution.shares):
        found = _from_groups(groups, total_s, fam_floor, measured, step_s)
    material = [m for m in found if m.share_s >= floor_s]
    return tuple(sorted(material, key=lambda m: (-round(m.share_s, 15), m.order)))


def headline_sentence(m: MechanismShare, total_s: float) -> str:
    """One sentence: the mechanism at its family, its share of the regression, the evidence.

    Args:
        m: The headline mechanism.
        total_s: The model's time delta, seconds.
    """
    level = f" ({m.level})" if m.level else ""
    return (
        f"{m.mechanism}{level} at {m.where} ({m.change}): {fmt_time(m.share_s)} = "
        f"{m.share:.1%} of the +{fmt_time(total_s)} regression; {m.evidence}"
    )


def anchor_of(ff: FirstFailing) -> str:
    """``layers.*.mlp.down_proj x32`` for a family, else the kernel's name.

    When the mechanism moved several families, all of them (:func:`spread_text`), so the
    counts and times named add up to the share.
    """
    if len(ff.spread) > 1:
        return spread_text(ff.spread)
    return f"{ff.family} x{ff.count}" if ff.family and ff.count > 1 else ff.kernel


def headline_of(
    base: RunRecord,
    cand: RunRecord,
    attribution: Attribution | None,
    *,
    per_item: bool,
    noise: float,
) -> tuple[tuple[MechanismShare, ...], FirstFailing | None]:
    """The material mechanisms (largest share first) and the headline built from them.

    Args:
        base: Baseline run.
        cand: Candidate run.
        attribution: The counterfactual attribution, or None.
        per_item: Whether the workload changed (times compared per token).
        noise: Relative step-time noise (0 for predicted runs).

    Returns:
        ``(mechanisms, first failing)``; the first failing is None when nothing material
        regressed. With the workload changed, only what the other changes add is judged
        (the workload's own cost is owned by nobody).
    """
    b, c = base.model, cand.model
    total = c.time_s - b.time_s
    if per_item and attribution is not None:
        # NOTE: the workload's own cost is no regression: judge what the other changes add
        # to the candidate's step (their shares), per token as much as per step
        total = sum(s.share_s for s in attribution.shares if s.change.group != "workload")
    elif per_item and not 1 / c.tokens_per_s > 1 / b.tokens_per_s * (1 + noise):
        return (), None
    noise_s = noise * b.time_s
    mapped = any(k.predicted_s > 0 for k in (*base.kernels, *cand.kernels))
    measured = mapped and time_field(base, cand) == "measured_s"
    if not mapped and base.measurement is not None and cand.measurement is not None:
        # NOTE: two traces with no mapping sheet: the roll-up by category and operator
        # (kernel names differ across GPU generations; aligning them by name blames nothing)
        found = rollup_shares(
            base, cand, total, noise_s=noise_s, material_share=MATERIAL_SHARE
        ) if total > max(noise_s, 0.0) else []  # fmt: skip
        shares: tuple[MechanismShare, ...] = tuple(found)
    else:
        shares = mechanism_shares(
            align(base, cand),
            total,
            attribution=attribution,
            noise_s=noise_s,
            measured=measured,
            step_s=(b.step_overhead_s or 0.0, c.step_overhead_s or 0.0),
        )
    if not shares:
        if per_item and attribution is not None:
            return (), None
        return (), find_first_failing(base, cand, noise_s=noise_s)
    top = shares[0]
    first = FirstFailing(
        kernel=top.kernel,
        mechanism=top.mechanism,
        level=top.level,
        evidence=headline_sentence(top, total),
        delta_s=top.delta_s,
        class_delta_s=top.share_s,
        total_delta_s=total,
        rows=top.rows,
        family=top.family,
        count=top.count,
        share=top.share,
        spread=top.spread,
    )
    return shares, first
