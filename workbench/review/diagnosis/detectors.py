"""Detectors: does one aligned group of kernels show a mechanism, and with what figures?

Each detector takes a :class:`GroupView` (a baseline group of kernels, the candidate's, and what
was found on the group so far) and returns ``(level, evidence)`` when its mechanism explains the
group's change, else None. The order they are tried in, and which of them are only consequences
of a cause above, is data: :data:`workbench.review.diagnosis.table.TABLE`.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench._format import fmt_time
from workbench.cost import Bottleneck
from workbench.ir.dtypes import DTYPES
from workbench.review.records.store import KernelResult

__all__ = ["Detected", "GroupView", "total"]

#: ``(level, evidence)``: the memory level (or None) and one before/after sentence.
Detected = tuple[str | None, str]


def _bits(dtype: str) -> float:
    info = DTYPES.get(dtype)
    return float(info.bits) if info else 0.0


def total(ks: tuple[KernelResult, ...], field: str) -> float:
    """Sum of ``field`` (``predicted_s`` or ``measured_s``) over ``ks``, seconds."""
    return float(sum(getattr(k, field) for k in ks))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupView:
    """One aligned group as the detectors see it.

    Attributes:
        b: Baseline kernels of the group.
        c: Candidate kernels of the group.
        field: ``predicted_s`` or ``measured_s``: the time compared.
        hardware_changed: Whether the two runs' hardware profiles differ.
        parts: Parts of the profile that moved (``compute``, memory level names).
        found: Mechanisms already found on this group, in priority order.
    """

    b: tuple[KernelResult, ...]
    c: tuple[KernelResult, ...]
    field: str = "predicted_s"
    hardware_changed: bool = False
    parts: tuple[str, ...] = ()
    found: tuple[str, ...] = ()

    @property
    def bt(self) -> float:
        """Baseline group time, seconds."""
        return total(self.b, self.field)

    @property
    def ct(self) -> float:
        """Candidate group time, seconds."""
        return total(self.c, self.field)

    @property
    def times(self) -> str:
        """``n -> m kernel(s), t0 -> t1``: the group's before/after in one phrase."""
        return (
            f"{len(self.b)} -> {len(self.c)} kernel(s), {fmt_time(self.bt)} -> {fmt_time(self.ct)}"
        )

    @property
    def pairs(self) -> list[tuple[KernelResult, KernelResult]]:
        """Kernels present in both runs under one name, as (baseline, candidate)."""
        return [(x, y) for x in self.b for y in self.c if x.name == y.name]

    def fusion(self, side: str) -> set[str]:
        """Fusion rules applied on ``side`` (``"b"`` or ``"c"``)."""
        return {r for k in getattr(self, side) for r in k.fusion}


def fusion_broken(g: GroupView) -> Detected | None:
    """A fusion rule the baseline applied is gone (kernels split out)."""
    lost = sorted(g.fusion("b") - g.fusion("c") - {"layout_fold"})
    if not lost:
        return None
    split = ", ".join(k.name for k in g.c if k.name not in {x.name for x in g.b})
    tail = f"; split out: {split}" if split else ""
    return None, f"fusion rule(s) {', '.join(lost)} no longer applied; {g.times}{tail}"


def layout_transform_inserted(g: GroupView) -> Detected | None:
    """A layout kernel appears, or the layout_fold into a store is gone."""
    new = [k for k in g.c if k.kind == "layout" and k.name not in {x.name for x in g.b}]
    folded_gone = "layout_fold" in g.fusion("b") and "layout_fold" not in g.fusion("c")
    if not new and not folded_gone:
        return None
    what = ", ".join(f"{k.name} ({k.engine_reason})" for k in new) or (
        "layout_fold into the producer's store is gone"
    )
    return None, f"{what}; {g.times}"


def precision_fallback(g: GroupView) -> Detected | None:
    """A kernel computes in a wider format than before."""
    for x, y in g.pairs:
        if _bits(y.dtype) > _bits(x.dtype):
            return None, (
                f"{y.name} computes in {y.dtype} instead of {x.dtype} on the {y.engine} "
                f"engine (was {x.engine}); {g.times}"
            )
    return None


def off_matrix_engine(g: GroupView) -> Detected | None:
    """Same format, but the kernel left the matrix engine (only when no cause above applies)."""
    if g.found:
        return None
    for x, y in g.pairs:
        if x.engine == "matrix" and y.engine != "matrix":
            return None, f"{y.name}: {y.engine_reason}; {g.times}"
    return None


def tile_spills_sram(g: GroupView) -> Detected | None:
    """The tile no longer fits the per-core SRAM (capacity-bound)."""
    for x, y in g.pairs:
        if x.fits and not y.fits:
            return None, (
                f"{y.name} tile {x.tile} -> {y.tile} needs {y.sram_bytes / 1024:.0f} KiB "
                f"of {y.sram_capacity_bytes / 1024:.0f} KiB SRAM, spills "
                f"{y.spill_bytes / 1e6:.3g} MB ({x.bottleneck} -> {y.bottleneck}); {g.times}"
            )
    return None


def hardware_rate(g: GroupView) -> Detected | None:
    """The hardware profile changed and the kernel's bound got slower: a platform mechanism."""
    if not (g.hardware_changed and g.ct > g.bt and g.c):
        return None
    y = max(g.c, key=lambda k: k.predicted_s)
    bound = Bottleneck.parse(y.bottleneck)
    level = bound.level if bound.is_bandwidth else "compute"
    if y.bottleneck != "compute" and not bound.is_bandwidth:
        level = ""  # overhead- or capacity-bound: name the part of the profile that moved
    moved = [p for p in g.parts if p == "compute" or y.traffic_at(p) > 0]
    if moved and level not in moved:
        memory = [p for p in moved if p != "compute"]
        level = max(memory, key=y.traffic_at) if memory else moved[0]
    level = level or "compute"
    x = next((x for x, z in g.pairs if z.name == y.name), None)
    was = f" (was {x.bottleneck}, tile {x.tile})" if x is not None else ""
    return level, (
        f"the hardware profile changed; {y.name} is bound by {y.bottleneck}{was}, tile {y.tile}; "
        f"{g.times}"
    )


def launch_sync_overhead(g: GroupView) -> Detected | None:
    """Launch or barrier time grew."""
    dl = total(g.c, "launch_s") - total(g.b, "launch_s")
    ds = total(g.c, "sync_s") - total(g.b, "sync_s")
    if dl <= 1e-12 and ds <= 1e-12:
        return None
    return None, (
        f"launch {fmt_time(total(g.b, 'launch_s'))} -> {fmt_time(total(g.c, 'launch_s'))}, "
        f"barriers {int(total(g.b, 'barriers'))} -> {int(total(g.c, 'barriers'))} "
        f"(sync {fmt_time(total(g.b, 'sync_s'))} -> {fmt_time(total(g.c, 'sync_s'))}); {g.times}"
    )


def bandwidth_saturation(g: GroupView) -> Detected | None:
    """Traffic at a memory level grew and that level bounds the kernel."""
    levels = {lvl for k in (*g.b, *g.c) for lvl, _ in k.traffic}
    grow = {
        lvl: sum(k.traffic_at(lvl) for k in g.c) - sum(k.traffic_at(lvl) for k in g.b)
        for lvl in levels
    }
    bounds = (Bottleneck.parse(k.bottleneck) for k in g.c)
    bound = {b.level for b in bounds if b.is_bandwidth}
    hot = sorted((lvl for lvl in bound if grow.get(lvl, 0.0) > 0), key=lambda v: -grow[v])
    if not hot or g.ct <= g.bt:
        return None
    lvl = hot[0]
    was = sum(k.traffic_at(lvl) for k in g.b)
    return lvl, (
        f"{lvl} traffic {was / 1e6:.3g} MB -> {(was + grow[lvl]) / 1e6:.3g} MB and "
        f"{lvl} bounds the kernel; {g.times}"
    )


def tile_wave_quantization(g: GroupView) -> Detected | None:
    """The tile changed (still fits) and the kernel got slower: padding or a partial wave."""
    for x, y in g.pairs:
        if x.tile != y.tile and y.fits and g.ct > g.bt:
            return None, (
                f"{y.name} tile {x.tile} -> {y.tile} (fits SRAM both times): padded tiles or a "
                f"partial last wave over the cores; {x.bottleneck} -> {y.bottleneck}; {g.times}"
            )
    return None


def graph_changed(g: GroupView) -> Detected | None:
    """Kernels appeared or vanished for no reason above (op coverage)."""
    if len(g.b) != len(g.c) or {k.name for k in g.b} != {k.name for k in g.c}:
        return None, f"kernels differ; {g.times}"
    return None
