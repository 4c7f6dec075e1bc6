"""Kernel alignment and mechanism classification between a baseline and a candidate run.

Kernels are aligned by name. A kernel that exists in only one run (an epilogue split out of its
GEMM, unfused attention's ``.qk``/``.softmax``/``.pv``, an inserted ``.to_nhwc`` transform) is
attached to the *anchor*: the baseline kernel that runs the same graph op, else the baseline
kernel whose name is a prefix of it. Each anchor group's time delta is the candidate's kernels
minus the baseline's, so the cost of new or removed kernels lands on the kernel of the same op.

Each changed group gets one mechanism class, checked in this order (the first that applies)::

    fusion_broken              a fusion rule the baseline applied is gone (kernels split out)
    layout_transform_inserted  a layout kernel appears, or the layout_fold into a store is gone
    precision_fallback         a kernel computes in a wider format than before
    off_matrix_engine          same format, but the kernel left the matrix engine
    tile_spills_sram           the tile no longer fits the per-core SRAM (capacity-bound)
    hardware_rate              the hardware profile changed and the kernel's bound (HBM
                               bandwidth, compute rate ...) got slower: a platform mechanism
    launch_sync_overhead       launch or barrier time grew
    bandwidth_saturation       traffic at a memory level grew and that level bounds the kernel
    tile_wave_quantization     the tile changed (still fits) and the kernel got slower: tile
                               padding or a partial last wave of tiles over the cores
    graph_changed              kernels appeared or vanished for no reason above (op coverage)

When no group is material, a measured run whose kernels slowed by a material share with an
unchanged mapping is a ``measured_slowdown`` (named at the first such kernel in execution order);
otherwise the regression is a ``prediction_gap`` (predicted kernels, time moved without a
mechanism) or, for measured runs with no mapping sheet, ``unmapped_measurement``.

**Material** (documented contract): the class of a group is material when the groups of that
class together carry at least ``material_share`` (default 5 %) of the total time regression;
the headline is the material class with the largest delta (ties in execution order), anchored on
its largest group, whose own delta must exceed the noise. Triage goes further when the runs can
be re-mapped: each declared change's counterfactual share goes to its mechanism
(:mod:`workbench.review.diagnosis.headline`). For measured runs the class must also carry more than
the measurement noise (``noise_s``: the half-widths of both runs' 95 % intervals), and kernel times
are the measured ones. Class-level aggregation matters for mechanisms spread thinly over
every kernel (eager launches, per-layer barriers), where no single kernel carries 5 %.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from dataclasses import dataclass

from workbench._format import fmt_time
from workbench.review.diagnosis.changes import changed_hardware_parts
from workbench.review.diagnosis.detectors import total
from workbench.review.diagnosis.table import MECHANISMS, classify_all
from workbench.review.records.store import KernelResult, RunRecord

__all__ = [
    "MATERIAL_SHARE",
    "MECHANISMS",
    "FirstFailing",
    "GroupChange",
    "align",
    "changed_hardware_parts",
    "find_first_failing",
    "time_field",
]

#: Default share of the total regression a mechanism class must carry to be material.
MATERIAL_SHARE = 0.05

_SHEET_FIELDS = (
    "kind",
    "engine",
    "dtype",
    "layout",
    "fusion",
    "tile",
    "sram_bytes",
    "sram_capacity_bytes",
    "bottleneck",
    "predicted_s",
    "launch_s",
    "sync_s",
    "measured_s",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupChange:
    """One anchor kernel and the kernels aligned with it in each run.

    Attributes:
        anchor: The anchor kernel's name.
        order: Position in execution order.
        baseline: Baseline kernels of the group.
        candidate: Candidate kernels of the group.
        delta_s: Candidate minus baseline predicted time, seconds.
        mechanism: Mechanism class (a key of :data:`MECHANISMS`) or None if unchanged.
        level: Memory level for ``bandwidth_saturation``, else None.
        evidence: One sentence with the before/after figures.
        mechanisms: Every mechanism that applies, as ``(mechanism, level, evidence)``; the
            first is ``mechanism``.
    """

    anchor: str
    order: float
    baseline: tuple[KernelResult, ...]
    candidate: tuple[KernelResult, ...]
    delta_s: float
    mechanism: str | None
    level: str | None
    evidence: str
    mechanisms: tuple[tuple[str, str | None, str], ...] = ()

    def fusion_toggled(self, rule: str) -> bool:
        """Whether fusion ``rule`` is applied on one side of the group and not on the other."""
        before = {f for k in self.baseline for f in k.fusion}
        after = {f for k in self.candidate for f in k.fusion}
        return (rule in before) != (rule in after)

    def has_kernel(self, glob: str) -> bool:
        """Whether a kernel of either side is named by ``glob`` (case-sensitive fnmatch)."""
        return any(fnmatch.fnmatchcase(k.name, glob) for k in (*self.baseline, *self.candidate))

    def evidence_for(self, mechanism: str) -> str:
        """The before/after sentence for ``mechanism`` (the group's first one if absent)."""
        return next((e for m, _, e in self.mechanisms if m == mechanism), self.evidence)

    def sheet_rows(self) -> tuple[dict[str, object], ...]:
        """The sheet rows (before and after) that prove the change."""
        rows = []
        for side, ks in (("baseline", self.baseline), ("candidate", self.candidate)):
            for k in ks:
                row: dict[str, object] = {"side": side, "kernel": k.name}
                row.update({f: getattr(k, f) for f in _SHEET_FIELDS})
                row["fusion"] = list(k.fusion)
                rows.append(row)
        return tuple(rows)


@dataclass(frozen=True, slots=True, kw_only=True)
class FirstFailing:
    """The first failing execution mechanism.

    Attributes:
        kernel: The anchor kernel's name.
        mechanism: Mechanism class (a key of :data:`MECHANISMS`).
        level: Memory level for bandwidth saturation, else None.
        evidence: Before/after figures as one paragraph.
        delta_s: This group's time delta, seconds.
        class_delta_s: Time delta of every group of the same class, seconds.
        total_delta_s: The whole model's time delta, seconds.
        rows: Sheet rows (before/after) that prove it.
        family: The kernel family it anchors on (``layers.*.mlp.down_proj``), or ``""``.
        count: Kernel groups of that family.
        share: The mechanism's share of the regression (``class_delta_s / total_delta_s``).
        spread: Every family the mechanism moved, ``(family, kernel groups, delta seconds)``,
            largest first (empty: not computed; one entry: all on ``family``).
    """

    kernel: str
    mechanism: str
    level: str | None
    evidence: str
    delta_s: float
    class_delta_s: float
    total_delta_s: float
    rows: tuple[dict[str, object], ...]
    family: str = ""
    count: int = 1
    share: float = 1.0
    spread: tuple[tuple[str, int, float], ...] = ()


def _anchor_fn(base: RunRecord):
    names = {k.name for k in base.kernels}
    by_op = {op: k.name for k in base.kernels for op in k.ops}

    def anchor(k: KernelResult) -> str:
        if k.name in names:
            return k.name
        for op in k.ops:
            if op in by_op:
                return by_op[op]
        parts = k.name.split(".")
        while len(parts) > 1:
            parts.pop()
            prefix = ".".join(parts)
            if prefix in names or prefix in by_op:
                return prefix if prefix in names else by_op[prefix]
        return k.name

    return anchor


def time_field(base: RunRecord, cand: RunRecord) -> str:
    """``"measured_s"`` when every kernel of both runs was measured, else ``"predicted_s"``."""
    every = all(k.measured_s is not None for k in (*base.kernels, *cand.kernels))
    return "measured_s" if every else "predicted_s"


def align(base: RunRecord, cand: RunRecord) -> tuple[GroupChange, ...]:
    """Align the two runs' kernels into anchor groups, in execution order, classified."""
    anchor = _anchor_fn(base)
    order: dict[str, float] = {}
    b_groups: dict[str, list[KernelResult]] = defaultdict(list)
    c_groups: dict[str, list[KernelResult]] = defaultdict(list)
    for i, k in enumerate(base.kernels):
        order.setdefault(k.name, float(i))
        b_groups[k.name].append(k)
    last = -1.0
    for k in cand.kernels:
        a = anchor(k)
        if a not in order:
            order[a] = last + 1e-3
        last = order[a]
        c_groups[a].append(k)
    out = []
    field = time_field(base, cand)
    hw_changed = base.tags.hardware.hardware_hash != cand.tags.hardware.hardware_hash
    parts = changed_hardware_parts(base, cand) if hw_changed else ()
    for a in sorted(order, key=lambda n: order[n]):
        b, c = tuple(b_groups.get(a, ())), tuple(c_groups.get(a, ()))
        found = classify_all(b, c, hardware_changed=hw_changed, field=field, parts=parts)
        mech, level, evidence = found[0] if found else (None, None, "")
        delta = total(c, field) - total(b, field)
        out.append(
            GroupChange(
                anchor=a,
                order=order[a],
                baseline=b,
                candidate=c,
                delta_s=delta,
                mechanism=mech,
                level=level,
                evidence=evidence,
                mechanisms=tuple(found),
            )
        )
    return tuple(out)


def class_deltas(groups: tuple[GroupChange, ...]) -> dict[str, float]:
    """Time delta per mechanism class (``bandwidth_saturation:<level>`` per level), seconds."""
    out: dict[str, float] = defaultdict(float)
    for g in groups:
        if g.mechanism:
            out[_key(g)] += g.delta_s
    return dict(out)


def _key(g: GroupChange) -> str:
    return f"{g.mechanism}:{g.level}" if g.level else str(g.mechanism)


def find_first_failing(
    base: RunRecord,
    cand: RunRecord,
    *,
    material_share: float = MATERIAL_SHARE,
    noise_s: float = 0.0,
) -> FirstFailing | None:
    """The first failing execution mechanism, or None when nothing material regressed.

    Args:
        base: Baseline run.
        cand: Candidate run.
        material_share: Share of the total regression a class must carry (0..1).
        noise_s: Measurement noise, seconds: the regression and the class's delta must exceed
            it (0 for predicted runs).

    Returns:
        The :class:`FirstFailing`, or None if time did not regress beyond the noise or no class
        is material.
    """
    total = cand.model.time_s - base.model.time_s
    if total <= max(noise_s, 0.0):
        return None
    groups = align(base, cand)
    per_class = class_deltas(groups)
    floor = max(material_share * total, noise_s)
    best = None
    for g in groups:
        if not g.mechanism or g.delta_s <= max(noise_s, 0.0) or per_class[_key(g)] < floor:
            continue
        # NOTE: the largest material class heads, ties in execution order; its anchor is the
        # class's largest group (a group under the noise never anchors)
        rank = (per_class[_key(g)], g.delta_s)
        if best is None or rank > best[0]:
            best = (rank, g)
    if best is not None:
        g = best[1]
        share = per_class[_key(g)] / total
        evidence = (
            f"{g.anchor}: {g.evidence}. Kernels of class {_key(g)} add "
            f"{fmt_time(per_class[_key(g)])} = {share:.0%} of the +{fmt_time(total)} regression "
            f"(model {fmt_time(base.model.time_s)} -> {fmt_time(cand.model.time_s)})."
        )
        return FirstFailing(
            kernel=g.anchor,
            mechanism=g.mechanism or "",
            level=g.level,
            evidence=evidence,
            delta_s=g.delta_s,
            class_delta_s=per_class[_key(g)],
            total_delta_s=total,
            rows=g.sheet_rows(),
            share=share,
        )
    unmapped = not any(k.predicted_s > 0 for k in (*base.kernels, *cand.kernels))
    slowed = _measured_slowdown(groups, total, floor) if not unmapped else None
    if slowed is not None and time_field(base, cand) == "measured_s":
        return slowed
    return FirstFailing(
        kernel="(model)",
        mechanism="unmapped_measurement" if unmapped else "prediction_gap",
        level=None,
        evidence=(
            f"measured time grew by {fmt_time(total)} on kernels with no mapping-sheet row: "
            "read the traces with the run's model and hardware (--model, --hardware) to "
            "attribute it"
            if unmapped
            else f"time grew by {fmt_time(total)} but no kernel's mechanism changed materially"
        ),
        delta_s=total,
        class_delta_s=total,
        total_delta_s=total,
        rows=(),
    )


def _measured_slowdown(
    groups: tuple[GroupChange, ...], total: float, floor: float
) -> FirstFailing | None:
    """Measured kernels that slowed with no mechanism in the sheet, if they carry ``floor``.

    The first failing kernel is the first in execution order whose own delta is at least 1 % of
    the regression (smaller moves are timing jitter between two traces).
    """
    slowed = [g for g in groups if not g.mechanism and g.delta_s > 0]
    carried = sum(g.delta_s for g in slowed)
    if carried < floor or not slowed:
        return None
    first = next((g for g in slowed if g.delta_s >= 0.01 * total), slowed[0])
    share = carried / total
    return FirstFailing(
        kernel=first.anchor,
        mechanism="measured_slowdown",
        level=None,
        evidence=(
            f"{first.anchor}: measured {fmt_time(first.delta_s)} slower with the same mapping; "
            f"{len(slowed)} kernel group(s) that slowed this way add {fmt_time(carried)} = "
            f"{share:.0%} of the +{fmt_time(total)} regression: the cause is outside the mapping "
            "sheet (runtime barriers, launch gaps, clocks): compare the two traces' timelines"
        ),
        delta_s=first.delta_s,
        class_delta_s=carried,
        total_delta_s=total,
        rows=first.sheet_rows(),
    )
