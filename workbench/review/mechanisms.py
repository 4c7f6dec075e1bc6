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
the first failing mechanism is the first group in execution order whose class is material and
whose own delta is positive. For measured runs the class must also carry more than the
measurement noise (``noise_s``: the half-widths of both runs' 95 % intervals), and kernel times
are the measured ones. Class-level aggregation matters for mechanisms spread thinly over
every kernel (eager launches, per-layer barriers), where no single kernel carries 5 %.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from workbench._format import fmt_time
from workbench.ir.dtypes import DTYPES
from workbench.review.changes import changed_hardware_parts
from workbench.review.records import KernelResult, RunRecord

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

#: Mechanism classes and what each means (the keys appear in the JSON contract).
MECHANISMS: dict[str, str] = {
    "fusion_broken": "fusion broken: a fused pattern now runs as separate kernels",
    "layout_transform_inserted": "layout transform inserted before a kernel",
    "precision_fallback": "precision fallback to a wider format",
    "off_matrix_engine": "kernel moved off the matrix engine",
    "tile_spills_sram": "tile spills SRAM (capacity-bound)",
    "hardware_rate": "hardware rate changed: the platform's bandwidth or compute rate is slower",
    "tile_wave_quantization": "tile or wave quantization: padded tiles or a partial last wave",
    "launch_sync_overhead": "launch or sync overhead",
    "bandwidth_saturation": "bandwidth saturation at a memory level",
    "graph_changed": "kernels added or removed by the graph (op coverage, model variant)",
    "measured_slowdown": (
        "measured kernels slowed while their mapping stayed the same: the cause is outside the "
        "mapping sheet (runtime: barriers, launch gaps, clocks, contention)"
    ),
    "prediction_gap": "no mechanism changed: the time moved (prediction vs measurement)",
    "unmapped_measurement": "measured time moved on kernels no mapping sheet describes",
}

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
    """

    anchor: str
    order: float
    baseline: tuple[KernelResult, ...]
    candidate: tuple[KernelResult, ...]
    delta_s: float
    mechanism: str | None
    level: str | None
    evidence: str

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
    """

    kernel: str
    mechanism: str
    level: str | None
    evidence: str
    delta_s: float
    class_delta_s: float
    total_delta_s: float
    rows: tuple[dict[str, object], ...]


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


def _bits(dtype: str) -> float:
    info = DTYPES.get(dtype)
    return float(info.bits) if info else 0.0


def _sum(ks: tuple[KernelResult, ...], field: str) -> float:
    return float(sum(getattr(k, field) for k in ks))


def time_field(base: RunRecord, cand: RunRecord) -> str:
    """``"measured_s"`` when every kernel of both runs was measured, else ``"predicted_s"``."""
    every = all(k.measured_s is not None for k in (*base.kernels, *cand.kernels))
    return "measured_s" if every else "predicted_s"


def _hardware_rate(
    pairs: list[tuple[KernelResult, KernelResult]],
    c: tuple[KernelResult, ...],
    times: str,
    parts: tuple[str, ...],
) -> tuple[str, str, str]:
    y = max(c, key=lambda k: k.predicted_s)
    level = y.bottleneck.split(":", 1)[1] if y.bottleneck.startswith("bandwidth:") else "compute"
    if y.bottleneck not in ("compute",) and not y.bottleneck.startswith("bandwidth:"):
        level = ""  # overhead- or capacity-bound: name the part of the profile that moved
    moved = [p for p in parts if p == "compute" or y.traffic_at(p) > 0]
    if moved and level not in moved:
        memory = [p for p in moved if p != "compute"]
        level = max(memory, key=y.traffic_at) if memory else moved[0]
    level = level or "compute"
    x = next((x for x, z in pairs if z.name == y.name), None)
    was = f" (was {x.bottleneck}, tile {x.tile})" if x is not None else ""
    return (
        "hardware_rate",
        level,
        f"the hardware profile changed; {y.name} is bound by {y.bottleneck}{was}, tile {y.tile}; "
        f"{times}",
    )


def _classify(
    b: tuple[KernelResult, ...],
    c: tuple[KernelResult, ...],
    *,
    hardware_changed: bool = False,
    field: str = "predicted_s",
    parts: tuple[str, ...] = (),
) -> tuple[str | None, str | None, str]:
    bt, ct = _sum(b, field), _sum(c, field)
    times = f"{len(b)} -> {len(c)} kernel(s), {fmt_time(bt)} -> {fmt_time(ct)}"
    bf = {r for k in b for r in k.fusion}
    cf = {r for k in c for r in k.fusion}
    lost = sorted(bf - cf - {"layout_fold"})
    if lost:
        split = ", ".join(k.name for k in c if k.name not in {x.name for x in b})
        return (
            "fusion_broken",
            None,
            (
                f"fusion rule(s) {', '.join(lost)} no longer applied; {times}"
                + (f"; split out: {split}" if split else "")
            ),
        )
    new_layout = [k for k in c if k.kind == "layout" and k.name not in {x.name for x in b}]
    if new_layout or ("layout_fold" in bf and "layout_fold" not in cf):
        what = ", ".join(f"{k.name} ({k.engine_reason})" for k in new_layout) or (
            "layout_fold into the producer's store is gone"
        )
        return "layout_transform_inserted", None, f"{what}; {times}"
    pairs = [(x, y) for x in b for y in c if x.name == y.name]
    for x, y in pairs:
        if _bits(y.dtype) > _bits(x.dtype):
            return (
                "precision_fallback",
                None,
                (
                    f"{y.name} computes in {y.dtype} instead of {x.dtype} on the {y.engine} engine "
                    f"(was {x.engine}); {times}"
                ),
            )
    for x, y in pairs:
        if x.engine == "matrix" and y.engine != "matrix":
            return "off_matrix_engine", None, f"{y.name}: {y.engine_reason}; {times}"
    for x, y in pairs:
        if x.fits and not y.fits:
            return (
                "tile_spills_sram",
                None,
                (
                    f"{y.name} tile {x.tile} -> {y.tile} needs {y.sram_bytes / 1024:.0f} KiB of "
                    f"{y.sram_capacity_bytes / 1024:.0f} KiB SRAM, spills "
                    f"{y.spill_bytes / 1e6:.3g} MB ({x.bottleneck} -> {y.bottleneck}); {times}"
                ),
            )
    if hardware_changed and ct > bt and c:
        return _hardware_rate(pairs, c, times, parts)
    dl = _sum(c, "launch_s") - _sum(b, "launch_s")
    ds = _sum(c, "sync_s") - _sum(b, "sync_s")
    if dl > 1e-12 or ds > 1e-12:
        return (
            "launch_sync_overhead",
            None,
            (
                f"launch {fmt_time(_sum(b, 'launch_s'))} -> {fmt_time(_sum(c, 'launch_s'))}, "
                f"barriers {int(_sum(b, 'barriers'))} -> {int(_sum(c, 'barriers'))} "
                f"(sync {fmt_time(_sum(b, 'sync_s'))} -> {fmt_time(_sum(c, 'sync_s'))}); {times}"
            ),
        )
    levels = {lvl for k in (*b, *c) for lvl, _ in k.traffic}
    grow = {
        lvl: sum(k.traffic_at(lvl) for k in c) - sum(k.traffic_at(lvl) for k in b) for lvl in levels
    }
    bound = {k.bottleneck.split(":", 1)[1] for k in c if k.bottleneck.startswith("bandwidth:")}
    hot = sorted((lvl for lvl in bound if grow.get(lvl, 0.0) > 0), key=lambda v: -grow[v])
    if hot and ct > bt:
        lvl = hot[0]
        was = sum(k.traffic_at(lvl) for k in b)
        return (
            "bandwidth_saturation",
            lvl,
            (
                f"{lvl} traffic {was / 1e6:.3g} MB -> {(was + grow[lvl]) / 1e6:.3g} MB and {lvl} "
                f"bounds the kernel; {times}"
            ),
        )
    for x, y in pairs:
        if x.tile != y.tile and y.fits and ct > bt:
            return (
                "tile_wave_quantization",
                None,
                f"{y.name} tile {x.tile} -> {y.tile} (fits SRAM both times): padded tiles or a "
                f"partial last wave over the cores; {x.bottleneck} -> {y.bottleneck}; {times}",
            )
    if len(b) != len(c) or {k.name for k in b} != {k.name for k in c}:
        return "graph_changed", None, f"kernels differ; {times}"
    return None, None, ""


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
        mech, level, evidence = _classify(
            b, c, hardware_changed=hw_changed, field=field, parts=parts
        )
        delta = _sum(c, field) - _sum(b, field)
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
    for g in groups:
        if not g.mechanism or g.delta_s <= 0 or per_class[_key(g)] < floor:
            continue
        share = per_class[_key(g)] / total
        evidence = (
            f"{g.anchor}: {g.evidence}. Kernels of class {_key(g)} add "
            f"{fmt_time(per_class[_key(g)])} = {share:.0%} of the +{fmt_time(total)} regression "
            f"(model {fmt_time(base.model.time_s)} -> {fmt_time(cand.model.time_s)}, MFU "
            f"{base.model.mfu:.1%} -> {cand.model.mfu:.1%})."
        )
        return FirstFailing(
            kernel=g.anchor,
            mechanism=g.mechanism,
            level=g.level,
            evidence=evidence,
            delta_s=g.delta_s,
            class_delta_s=per_class[_key(g)],
            total_delta_s=total,
            rows=g.sheet_rows(),
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
