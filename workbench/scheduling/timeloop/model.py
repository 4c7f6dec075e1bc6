"""Timeloop's model on its own files: cycles, utilisation, accesses and energy per level.

:func:`model` turns an :class:`Arch`, a :class:`Problem` and a :class:`Mapping` into the loop-nest
evaluator's levels (:func:`workbench.scheduling.nest_eval.evaluate`), with the per-action
energies of Accelergy's ERT, and returns what ``timeloop-model.stats.txt`` reports: cycles,
utilisation (MACs / (compute instances x cycles)), per level and tensor the reads, fills and
updates per instance, energy per level in pJ (with leakage), the total, energy-delay
(J x cycles) and, given Accelergy's ART, area per level (um^2, all instances).

The sparsity lesson's model can reuse :func:`levels_of` (the evaluator's levels of a spec) and
:class:`ModelResult` as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workbench.scheduling.nest_eval import Level, LevelMap, NestStats, Problem, evaluate
from workbench.scheduling.timeloop._fields import fail
from workbench.scheduling.timeloop.arch import Arch, Storage
from workbench.scheduling.timeloop.mapping import Mapping

__all__ = ["LevelStats", "ModelResult", "levels_of", "model"]

Ert = dict[str, dict[str, float]]


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelStats:
    """One storage level's figures.

    Attributes:
        name: The level.
        instances: Its copies.
        accesses: ``(tensor, reads, fills, updates)`` per instance, for the tensors it keeps.
        energy_pj: All instances, with leakage; None without an ERT.
        area_um2: All instances; None without an ART.
    """

    name: str
    instances: int
    accesses: tuple[tuple[str, int, int, int], ...]
    energy_pj: float | None
    area_um2: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResult:
    """What Timeloop's model reports for one mapping (see the module doc)."""

    cycles: int
    macs: int
    utilization: float
    compute: str
    compute_instances: int
    compute_energy_pj: float | None
    compute_area_um2: float | None
    levels: tuple[LevelStats, ...]
    cycle_s: float
    stats: NestStats

    @property
    def energy_pj(self) -> float | None:
        """Total energy, pJ (None without an ERT)."""
        if self.compute_energy_pj is None:
            return None
        return self.compute_energy_pj + sum(lv.energy_pj or 0.0 for lv in self.levels)

    @property
    def edp_j_cycles(self) -> float | None:
        """Energy x cycles, J x cycles (Timeloop's ``EDP(J*cycle)``)."""
        e = self.energy_pj
        return None if e is None else e * 1e-12 * self.cycles

    @property
    def area_um2(self) -> float | None:
        """Total area, um^2 (None without an ART)."""
        if self.compute_area_um2 is None:
            return None
        return self.compute_area_um2 + sum(lv.area_um2 or 0.0 for lv in self.levels)

    def fj_per_compute(self) -> dict[str, float]:
        """Energy per MAC by level, fJ (Timeloop's ``fJ/Compute`` block); empty without an ERT."""
        if self.compute_energy_pj is None:
            return {}
        out = {self.compute: 1000.0 * self.compute_energy_pj / self.macs}
        out |= {lv.name: 1000.0 * (lv.energy_pj or 0.0) / self.macs for lv in self.levels}
        return out

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: ``cycles``, ``utilization``, ``energy_pj``, ``edp_j_cycles``..."""
        return {
            "cycles": self.cycles,
            "macs": self.macs,
            "utilization": self.utilization,
            "latency_s": self.cycles * self.cycle_s,
            "compute": {
                "name": self.compute,
                "instances": self.compute_instances,
                "energy_pj": self.compute_energy_pj,
                "area_um2": self.compute_area_um2,
            },
            "levels": [
                {
                    "name": lv.name,
                    "instances": lv.instances,
                    "energy_pj": lv.energy_pj,
                    "area_um2": lv.area_um2,
                    "accesses": {
                        t: {"reads": r, "fills": f, "updates": u} for t, r, f, u in lv.accesses
                    },
                }
                for lv in self.levels
            ],
            "energy_pj": self.energy_pj,
            "edp_j_cycles": self.edp_j_cycles,
            "area_um2": self.area_um2,
        }


def _energies(s: Storage, ert: Ert | None) -> tuple[float, float, float]:
    if ert is None:
        return 0.0, 0.0, 0.0
    if s.name not in ert:
        raise fail("ERT", f"no entry for storage level {s.name!r}")
    e = ert[s.name]
    if "read" not in e:
        raise fail("ERT", f"{s.name!r} has no 'read' action")
    write = e.get("write", e.get("update", e["read"]))
    return e["read"], write, e.get("leak", 0.0)


def levels_of(arch: Arch, mapping: Mapping, ert: Ert | None = None) -> tuple[LevelMap, ...]:
    """The evaluator's levels for ``mapping`` on ``arch`` (energies from ``ert``, else 0)."""
    out = []
    for s in arch.storages:
        read, write, leak = _energies(s, ert)
        level = Level(
            s.name,
            mapping.kept(s.name),
            s.block_words,
            read,
            write,
            capacity_words=s.capacity_words,
            leak_pj=leak,
            read_bandwidth_words=s.read_bandwidth_words,
            write_bandwidth_words=s.write_bandwidth_words,
        )
        spatial = tuple(lp for f in arch.fanouts_below(s.name) for lp in mapping.spatial_at(f.name))
        out.append(LevelMap(level, mapping.loops_at(s.name), spatial))
    return tuple(out)


def model(
    arch: Arch,
    problem: Problem,
    mapping: Mapping,
    ert: Ert | None = None,
    art: dict[str, float] | None = None,
) -> ModelResult:
    """Cycles, utilisation, accesses, energy and area of ``mapping`` (see the module doc).

    Raises:
        WorkbenchError: Loops that do not multiply to the problem's bounds, a tile over its
            level's capacity, an ERT without a level's or the compute's entry.
    """
    mac_pj = None
    if ert is not None:
        if "compute" not in ert.get(arch.compute, {}):
            raise fail("ERT", f"no 'compute' action for {arch.compute!r}")
        mac_pj = ert[arch.compute]["compute"]
    st = evaluate(problem, levels_of(arch, mapping, ert), mac_pj or 0.0)
    levels = []
    for s in arch.storages:
        kept = mapping.kept(s.name)
        acc = tuple(
            (t.name, st.reads[s.name, t.name], st.fills[s.name, t.name], st.updates[s.name, t.name])
            for t in problem.tensors
            if t.name in kept
        )
        area = None if art is None else art.get(s.name, 0.0) * s.instances
        energy = None if ert is None else st.energy_pj[s.name]
        levels.append(
            LevelStats(
                name=s.name, instances=s.instances, accesses=acc, energy_pj=energy, area_um2=area
            )
        )
    return ModelResult(
        cycles=st.cycles,
        macs=problem.macs,
        utilization=problem.macs / (arch.compute_instances * st.cycles),
        compute=arch.compute,
        compute_instances=arch.compute_instances,
        compute_energy_pj=None if mac_pj is None else st.energy_pj["mac"],
        compute_area_um2=None
        if art is None
        else art.get(arch.compute, 0.0) * arch.compute_instances,
        levels=tuple(levels),
        cycle_s=arch.cycle_s,
        stats=st,
    )


def check_finite(result: ModelResult) -> None:
    """Refuse a NaN, infinite or negative figure (never printed as a result)."""
    for v in (result.energy_pj, result.edp_j_cycles, result.area_um2, result.utilization):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise fail("model", f"a figure came out as {v!r}")
