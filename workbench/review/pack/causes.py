"""The material causes of a regression, for the review pack: who changed what, how much, where.

A *cause* is one mechanism with its share of the regression, the kernel family it shows on
(``layers.*.mlp.down_proj`` x32), the sheet rows that prove it and its owner. Read, in order of
preference, from:

1. the triage report's ``mechanisms`` list, when the triage carries one (each item's
   ``mechanism``, ``share``, ``anchor``/``kernel`` and ``rows`` are read with ``getattr``);
2. the counterfactual attribution: each declared change with a material share (at least
   :data:`~workbench.review.diagnosis.first_failing.MATERIAL_SHARE` of the delta), matched to the
   kernel groups it touched (a fusion rule by the kernels that lost it, a format override or forced
   tile by its glob, a hardware change by ``hardware_rate`` groups, a launch change by
   ``launch_sync_overhead`` groups);
3. without an attribution (measured pairs, runs the model cannot re-map): the per-family roll-up
   of the kernel diff, each family carrying a material share;
4. the first failing mechanism alone.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.review.decision.verdict import TriageReport
from workbench.review.diagnosis.families import family_of, natural_key
from workbench.review.diagnosis.first_failing import MATERIAL_SHARE, GroupChange, align
from workbench.review.diagnosis.table import mechanism_of_change, mechanism_of_group
from workbench.review.pack.meta import change_label

__all__ = ["Cause", "family_of", "family_rows", "material_causes", "natural_key"]

_LAYER = re.compile(r"\.(\d+)\.")


def _index_ranges(indexes: Iterable[int]) -> str:
    """``0-3, 7`` from ``[0, 1, 2, 3, 7]``."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(indexes)):
        if run and i != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(i)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def family_rows(rows: Sequence[Any], limit: int = 15) -> list[dict[str, Any]]:
    """Kernel diff rows grouped by family, largest delta first (ties in natural order).

    Args:
        rows: :class:`~workbench.review.diagnosis.attribution.DiffRow` of level ``kernel``.
        limit: Families kept.

    Returns:
        Rows ``{family, count, layers, baseline_s, candidate_s, delta_s, share, mechanism}``
        (seconds; share of the total delta); families whose time did not move are left out.
    """
    fams: dict[str, dict[str, Any]] = {}
    for r in rows:
        fam = family_of(r.name)
        f = fams.setdefault(
            fam,
            {
                "family": fam,
                "count": 0,
                "idx": [],
                "baseline_s": 0.0,
                "candidate_s": 0.0,
                "delta_s": 0.0,
                "share": 0.0,
                "mechs": set(),
            },
        )
        f["count"] += 1
        m = _LAYER.search(r.name)
        if m:
            f["idx"].append(int(m.group(1)))
        for key in ("baseline_s", "candidate_s", "delta_s", "share"):
            f[key] += getattr(r, key)
        if r.mechanism:
            f["mechs"].add(r.mechanism)
    out = []
    for f in fams.values():
        if f["delta_s"] == 0:
            continue
        out.append(
            {
                **{k: v for k, v in f.items() if k not in ("idx", "mechs")},
                "layers": _index_ranges(f["idx"]) or "-",
                "mechanism": ", ".join(sorted(f["mechs"])) or "-",
            }
        )
    out.sort(key=lambda f: (-round(f["delta_s"], 15), natural_key(f["family"])))
    return out[:limit]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """One material cause of the regression.

    Attributes:
        change: What was changed, in a few words (``fp32 down_proj``; for measured pairs the
            family that slowed).
        mechanism: Mechanism class (a key of ``MECHANISMS``), or ``""`` when unknown.
        share: Share of the total delta (0..1, may exceed 1 when other changes improve).
        share_s: The same in seconds.
        family: The kernel family it shows on (``layers.*.mlp.down_proj``), or ``""``.
        count: Kernel groups of the family it touched.
        owner: The owner role of the mechanism, or ``""``.
        rows: Mapping-sheet rows (before and after) of the family's largest group.
    """

    change: str
    mechanism: str
    share: float
    share_s: float
    family: str
    count: int
    owner: str
    rows: tuple[dict[str, Any], ...]


def _owner(r: TriageReport, mechanism: str) -> str:
    try:
        return r.owners.owner_for(mechanism).role if mechanism else ""
    except StopIteration:
        return ""


def _matches(change: Any, g: GroupChange) -> bool:
    """Whether declared change ``change`` touched kernel group ``g``."""
    rule, glob = change.fusion_rule, change.kernel_glob
    if rule is not None:
        return g.fusion_toggled(rule)
    if glob is not None:
        return g.has_kernel(glob) and g.delta_s != 0
    wanted = mechanism_of_group(change.group)
    return g.delta_s != 0 and (wanted is None or g.mechanism == wanted)


def _mechanism_for(change: Any, g: GroupChange) -> str:
    """The mechanism a declared change works through on group ``g`` (the table's causes)."""
    shown = [m for m, _, _ in g.mechanisms]
    return mechanism_of_change(change.name, shown, fallback=g.mechanism) or ""


def _largest_family(groups: Sequence[GroupChange]) -> tuple[str, list[GroupChange]]:
    fams: dict[str, list[GroupChange]] = defaultdict(list)
    for g in groups:
        fams[family_of(g.anchor)].append(g)
    fam = max(fams, key=lambda f: (sum(g.delta_s for g in fams[f]), -fams[f][0].order))
    return fam, fams[fam]


def _from_attribution(r: TriageReport, groups: Sequence[GroupChange]) -> list[Cause]:
    att = r.attribution
    if att is None:
        return []
    out: list[Cause] = []
    claimed: set[str] = set()
    for s in att.shares:
        if s.share < MATERIAL_SHARE or s.share_s <= 0:
            continue
        touched = [g for g in groups if _matches(s.change, g)]
        # NOTE: a family a larger cause already proves is used again only when this change
        # touched nothing else (fusion lost on the fp32 kernels too shows on its other kernels).
        fresh = [g for g in touched if family_of(g.anchor) not in claimed]
        touched = fresh or touched
        if not touched:
            out.append(_share_cause(r, s, mechanism_of_group(s.change.group) or ""))
            continue
        fam, members = _largest_family(touched)
        claimed.add(fam)
        top = max(members, key=lambda g: (g.delta_s, -g.order))
        mech = _mechanism_for(s.change, top)
        out.append(_share_cause(r, s, mech, fam, members=len(members), rows=top.sheet_rows()))
    return out


def _share_cause(
    r: TriageReport,
    s: Any,
    mechanism: str,
    family: str = "",
    *,
    members: int = 0,
    rows: tuple[dict[str, object], ...] = (),
) -> Cause:
    """The :class:`Cause` of one attribution share ``s`` (no family: its change touched none)."""
    return Cause(
        change=change_label(s.change),
        mechanism=mechanism,
        share=s.share,
        share_s=s.share_s,
        family=family,
        count=members,
        owner=_owner(r, mechanism),
        rows=rows,
    )


def _from_families(r: TriageReport, groups: Sequence[GroupChange]) -> list[Cause]:
    total = sum(g.delta_s for g in groups) or 0.0
    model_total = r.candidate.model.time_s - r.baseline.model.time_s
    if model_total <= 0 or total == 0:
        return []
    fams: dict[tuple[str, str], list[GroupChange]] = defaultdict(list)
    for g in groups:
        if g.delta_s > 0:
            fams[(family_of(g.anchor), g.mechanism or "")].append(g)
    out = []
    for (fam, mech), members in fams.items():
        delta = sum(g.delta_s for g in members)
        share = delta / model_total
        if share < MATERIAL_SHARE or delta <= r.noise * r.baseline.model.time_s:
            continue
        top = max(members, key=lambda g: (g.delta_s, -g.order))
        out.append(
            Cause(
                change=f"{fam} slower",
                mechanism=mech,
                share=share,
                share_s=delta,
                family=fam,
                count=len(members),
                owner=_owner(r, mech),
                rows=top.sheet_rows(),
            )
        )
    return sorted(out, key=lambda c: -c.share_s)


def _from_triage_mechanisms(r: TriageReport) -> list[Cause]:
    """Causes from the triage's own ``mechanisms`` list, when it has one (read defensively)."""
    items = getattr(r, "mechanisms", None) or ()
    out = []
    for m in items:
        mech = str(getattr(m, "mechanism", None) or getattr(m, "name", "") or "")
        share = getattr(m, "share", None)
        if not mech or not isinstance(share, (int, float)) or share < MATERIAL_SHARE:
            continue
        anchor = getattr(m, "family", None) or getattr(m, "anchor", None) or ""
        anchor = anchor or getattr(m, "kernel", "") or ""
        out.append(
            Cause(
                change=str(getattr(m, "change", "") or mech),
                mechanism=mech,
                share=float(share),
                share_s=float(getattr(m, "share_s", None) or getattr(m, "delta_s", 0.0) or 0.0),
                family=family_of(str(anchor)),
                count=int(getattr(m, "count", 0) or 0),
                owner=_owner(r, mech),
                rows=tuple(getattr(m, "rows", ()) or ()),
            )
        )
    return out


def material_causes(r: TriageReport) -> list[Cause]:
    """Every material cause of the regression, largest share first (see the module docstring).

    Args:
        r: A comparable triage report.

    Returns:
        The causes; empty when nothing regressed materially.
    """
    found = _from_triage_mechanisms(r)
    if found:
        return sorted(found, key=lambda c: -c.share)
    groups = align(r.baseline, r.candidate)
    found = _from_attribution(r, groups) or _from_families(r, groups)
    if found or r.first_failing is None:
        return found
    ff = r.first_failing
    total = ff.total_delta_s
    mech = ff.mechanism
    return [
        Cause(
            change=mech,
            mechanism=mech,
            share=ff.class_delta_s / total if total else 0.0,
            share_s=ff.class_delta_s,
            family=family_of(ff.kernel),
            count=1,
            owner=_owner(r, mech),
            rows=tuple(ff.rows),
        )
    ]
