"""Timeloop's ``timeloop-model.stats.txt`` / ``timeloop-mapper.stats.txt``, read for comparison.

The reference outputs of Timeloop's exercises are the figures a student compares with: cycles,
utilisation, total energy and energy-delay of the summary, the ``fJ/Compute`` block, and per
level and tensor the scalar reads, fills and updates per instance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from workbench.scheduling.timeloop._yaml import TimeloopSpecError

__all__ = ["ReferenceStats", "read_stats"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferenceStats:
    """A Timeloop stats file's figures.

    Attributes:
        cycles: Cycles.
        utilization: Fraction (the file prints a percentage).
        energy_uj: Total energy, uJ (printed to 2 decimals).
        edp_j_cycles: Energy-delay, J x cycles (printed to 3 significant figures).
        fj_per_compute: ``{level: fJ per MAC}`` (the compute unit included; no ``Total``).
        accesses: ``{(level, tensor): (reads, fills, updates)}`` per instance.
        instances: ``{level: instances}``.
    """

    cycles: int
    utilization: float
    energy_uj: float
    edp_j_cycles: float
    fj_per_compute: dict[str, float]
    accesses: dict[tuple[str, str], tuple[int, int, int]]
    instances: dict[str, int]


_SUMMARY = {
    "cycles": r"^Cycles: (\d+)$",
    "utilization": r"^Utilization: ([0-9.]+)%$",
    "energy_uj": r"^Energy: ([0-9.eE+-]+) uJ$",
    "edp_j_cycles": r"^EDP\(J\*cycle\): ([0-9.eE+-]+)$",
}


def _levels(text: str) -> tuple[dict[tuple[str, str], tuple[int, int, int]], dict[str, int]]:
    accesses: dict[tuple[str, str], tuple[int, int, int]] = {}
    instances: dict[str, int] = {}
    body = text.split("\nNetworks\n")[0]
    parts = re.split(r"^=== (\w+) ===$", body, flags=re.M)
    for name, block in zip(parts[1::2], parts[2::2], strict=True):
        m = re.search(r"Instances\s*:\s*(\d+)", block)
        if m:
            instances[name] = int(m.group(1))
        for tensor, tb in re.findall(r"^    (\w+):\n((?:        .*\n)+)", block, flags=re.M):
            got = [
                re.search(rf"Scalar {k} \(per-instance\)\s*:\s*(\d+)", tb)
                for k in ("reads", "fills", "updates")
            ]
            if all(got):
                accesses[name, tensor] = tuple(int(g.group(1)) for g in got)  # type: ignore[union-attr,assignment]
    return accesses, instances


def read_stats(path: str | Path) -> ReferenceStats:
    """Read a Timeloop stats file.

    Raises:
        TimeloopSpecError: Unreadable, or a summary figure missing.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TimeloopSpecError(f"{p}: cannot read ({type(exc).__name__})") from None
    summary = text.split("Summary Stats")[-1]
    found: dict[str, float] = {}
    for key, pattern in _SUMMARY.items():
        m = re.search(pattern, summary, flags=re.M)
        if m is None:
            raise TimeloopSpecError(f"{p}: no '{key}' in the summary")
        found[key] = float(m.group(1))
    fj_block = summary.split("fJ/Compute")[-1]
    fj = {k: float(v) for k, v in re.findall(r"^\s+(\w+)\s+= ([0-9.]+)$", fj_block, flags=re.M)}
    fj.pop("Total", None)
    accesses, instances = _levels(text)
    return ReferenceStats(
        cycles=int(found["cycles"]),
        utilization=found["utilization"] / 100.0,
        energy_uj=found["energy_uj"],
        edp_j_cycles=found["edp_j_cycles"],
        fj_per_compute=fj,
        accesses=accesses,
        instances=instances,
    )
