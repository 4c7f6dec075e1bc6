"""How one aligned group of kernels changed between two runs: its mechanism class and evidence.

:func:`classify_group` compares a baseline group of kernels with the candidate's (fusion lost,
format, tile, engine, hardware profile, ...) and names the execution mechanism that explains the
difference, with the figures that show it (see :mod:`workbench.review.mechanisms` for the order
the classes are tried in and how the first failing one is chosen).
"""

from __future__ import annotations

from workbench._format import fmt_time
from workbench.ir.dtypes import DTYPES
from workbench.review.records import KernelResult

__all__ = ["classify_all", "classify_group", "total"]


def _bits(dtype: str) -> float:
    info = DTYPES.get(dtype)
    return float(info.bits) if info else 0.0


def total(ks: tuple[KernelResult, ...], field: str) -> float:
    """Sum of ``field`` (``predicted_s`` or ``measured_s``) over ``ks``, seconds."""
    return float(sum(getattr(k, field) for k in ks))


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


def classify_group(
    b: tuple[KernelResult, ...],
    c: tuple[KernelResult, ...],
    *,
    hardware_changed: bool = False,
    field: str = "predicted_s",
    parts: tuple[str, ...] = (),
) -> tuple[str | None, str | None, str]:
    """(mechanism, level, evidence) of one group's change; (None, None, "") when unchanged.

    The first of :func:`classify_all`'s mechanisms (the order of the module docstring of
    :mod:`workbench.review.mechanisms`).
    """
    found = classify_all(b, c, hardware_changed=hardware_changed, field=field, parts=parts)
    return found[0] if found else (None, None, "")


def classify_all(
    b: tuple[KernelResult, ...],
    c: tuple[KernelResult, ...],
    *,
    hardware_changed: bool = False,
    field: str = "predicted_s",
    parts: tuple[str, ...] = (),
) -> list[tuple[str, str | None, str]]:
    """Every mechanism that applies to one group's change, as (mechanism, level, evidence).

    A group can carry several causes (fusion lost and a wider format on the same kernels): the
    classes up to ``tile_spills_sram`` are each checked; the later ones (hardware rate, launch,
    bandwidth, tile waves, graph) only when no cause above applies, since they follow from it.
    Same format but off the matrix engine counts only without a wider format. In the classes'
    order; empty when the group did not change.
    """
    found: list[tuple[str, str | None, str]] = []
    bt, ct = total(b, field), total(c, field)
    times = f"{len(b)} -> {len(c)} kernel(s), {fmt_time(bt)} -> {fmt_time(ct)}"
    bf = {r for k in b for r in k.fusion}
    cf = {r for k in c for r in k.fusion}
    lost = sorted(bf - cf - {"layout_fold"})
    if lost:
        split = ", ".join(k.name for k in c if k.name not in {x.name for x in b})
        found.append(
            (
                "fusion_broken",
                None,
                (
                    f"fusion rule(s) {', '.join(lost)} no longer applied; {times}"
                    + (f"; split out: {split}" if split else "")
                ),
            )
        )
    new_layout = [k for k in c if k.kind == "layout" and k.name not in {x.name for x in b}]
    if new_layout or ("layout_fold" in bf and "layout_fold" not in cf):
        what = ", ".join(f"{k.name} ({k.engine_reason})" for k in new_layout) or (
            "layout_fold into the producer's store is gone"
        )
        found.append(("layout_transform_inserted", None, f"{what}; {times}"))
    pairs = [(x, y) for x in b for y in c if x.name == y.name]
    for x, y in pairs:
        if _bits(y.dtype) > _bits(x.dtype):
            found.append(
                (
                    "precision_fallback",
                    None,
                    (
                        f"{y.name} computes in {y.dtype} instead of {x.dtype} on the {y.engine} "
                        f"engine (was {x.engine}); {times}"
                    ),
                )
            )
            break
    for x, y in pairs:
        if x.engine == "matrix" and y.engine != "matrix" and not found:
            found.append(("off_matrix_engine", None, f"{y.name}: {y.engine_reason}; {times}"))
            break
    for x, y in pairs:
        if x.fits and not y.fits:
            found.append(
                (
                    "tile_spills_sram",
                    None,
                    (
                        f"{y.name} tile {x.tile} -> {y.tile} needs {y.sram_bytes / 1024:.0f} KiB "
                        f"of {y.sram_capacity_bytes / 1024:.0f} KiB SRAM, spills "
                        f"{y.spill_bytes / 1e6:.3g} MB ({x.bottleneck} -> {y.bottleneck}); {times}"
                    ),
                )
            )
            break
    if found:  # NOTE: what follows is a consequence of a cause above, not a cause of its own
        return found
    if hardware_changed and ct > bt and c:
        found.append(_hardware_rate(pairs, c, times, parts))
    dl = total(c, "launch_s") - total(b, "launch_s")
    ds = total(c, "sync_s") - total(b, "sync_s")
    if dl > 1e-12 or ds > 1e-12:
        found.append(
            (
                "launch_sync_overhead",
                None,
                (
                    f"launch {fmt_time(total(b, 'launch_s'))} -> "
                    f"{fmt_time(total(c, 'launch_s'))}, barriers {int(total(b, 'barriers'))} -> "
                    f"{int(total(c, 'barriers'))} (sync {fmt_time(total(b, 'sync_s'))} -> "
                    f"{fmt_time(total(c, 'sync_s'))}); {times}"
                ),
            )
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
        found.append(
            (
                "bandwidth_saturation",
                lvl,
                (
                    f"{lvl} traffic {was / 1e6:.3g} MB -> {(was + grow[lvl]) / 1e6:.3g} MB and "
                    f"{lvl} bounds the kernel; {times}"
                ),
            )
        )
    for x, y in pairs:
        if x.tile != y.tile and y.fits and ct > bt:
            found.append(
                (
                    "tile_wave_quantization",
                    None,
                    f"{y.name} tile {x.tile} -> {y.tile} (fits SRAM both times): padded tiles or a "
                    f"partial last wave over the cores; {x.bottleneck} -> {y.bottleneck}; {times}",
                )
            )
            break
    if len(b) != len(c) or {k.name for k in b} != {k.name for k in c}:
        found.append(("graph_changed", None, f"kernels differ; {times}"))
    return found
