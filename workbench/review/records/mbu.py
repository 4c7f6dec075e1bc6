"""MBU of a run record or a mapping, and whether a slice is bandwidth-bound (then MBU heads it).

* MBU (model bandwidth utilisation) = off-chip bytes moved per step / (step time s x sustained
  off-chip bandwidth B/s), 0..1, as :attr:`workbench.mapper.ModelMapping.mbu`.
* A slice is **bandwidth-bound** when it is a decode step, or when kernels whose bottleneck class
  is ``bandwidth:<level>`` take at least :data:`BANDWIDTH_BOUND_SHARE` of its kernel time.
"""

from __future__ import annotations

from typing import Any

from workbench.cost import Bottleneck
from workbench.review.records.reproduce import hardware_for

__all__ = ["BANDWIDTH_BOUND_SHARE", "bandwidth_bound", "bandwidth_share", "record_mbu"]

#: Share of kernel time in bandwidth-bound kernels from which a slice counts as bandwidth-bound:
#: the majority, i.e. more of its time waits on memory than on any engine.
BANDWIDTH_BOUND_SHARE = 0.5


def record_mbu(record: Any) -> float | None:
    """The record's MBU, 0..1: recorded, else from its profile, else None.

    Version-3 records carry it; older ones get it from the embedded profile (or the named one
    when it still has the recorded hash); a trace without them has none.
    """
    m = record.model
    if m.mbu is not None:
        return float(m.mbu)
    hw = hardware_for(record)
    if hw is None or m.time_s <= 0 or record.tags.runtime.backend.startswith("trace:"):
        return None
    try:
        rate = hw.level(m.offchip_level).sustained_bytes_per_s
    except KeyError:
        return None
    moved = sum(k.traffic_at(m.offchip_level) for k in record.kernels)
    return moved / (m.time_s * rate)


def bandwidth_share(x: Any) -> float | None:
    """Share of kernel time (0..1) in ``bandwidth:*``-bound kernels of a record or a mapping."""
    if hasattr(x, "graph"):  # a ModelMapping
        times = [(k.cost.bottleneck, k.cost.total_s) for k in x.kernels]
    else:
        times = [(k.bottleneck, k.predicted_s) for k in x.kernels]
    total = sum(t for _, t in times)
    if total <= 0:
        return None
    return sum(t for b, t in times if Bottleneck.parse(b).is_bandwidth) / total


def bandwidth_bound(x: Any) -> bool:
    """Whether a record or mapping is a decode step or mostly bandwidth-bound (module docstring)."""
    phase = x.phase if hasattr(x, "graph") else x.tags.workload.phase
    share = bandwidth_share(x)
    return phase == "decode" or (share is not None and share >= BANDWIDTH_BOUND_SHARE)
