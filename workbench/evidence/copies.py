"""Memory copies and sets by direction: calls, bytes, time and achieved bandwidth per iteration.

Kineto names each copy by its direction and records its size (``Memcpy HtoD (Pageable ->
Device)`` with ``args.bytes``; ``DtoH``, ``DtoD``, ``PtoP``...), and the Nsight Systems reader
names its copies the same way (``Memcpy HtoD``); sets are ``Memset``. Over the steady-state
iterations (the warm-up step left out), per direction and per iteration::

    calls         = copies of that direction
    bytes         = sum of their bytes                  (copies that recorded a size)
    time_s        = sum of their durations              (all of them, s)
    bandwidth     = bytes / (durations of the sized copies)      (bytes/s)

so the bandwidth is the duration-weighted mean of each copy's own rate: the mean of Kineto's
per-copy ``memory bandwidth (GB/s)`` weighted by duration, to the rounding of the durations
(Kineto writes whole microseconds, so a direction of 2 us copies has a rate good to ~50 %).
A copy without a size (or with a negative one) counts in ``calls``, ``time_s`` and
``unsized_calls``, never in the rate; a direction whose sized copies took no measurable time
has no rate (None), never an infinite one.

>>> from workbench.evidence.run import IterationStats, MeasuredKernel, MeasuredRun
>>> copy = MeasuredKernel(name="Memcpy HtoD (Pinned -> Device)", category="copy",
...                       rule="activity:memcpy", start_s=0.0, duration_s=1e-3, iteration=1,
...                       kind="memcpy", bytes=10**7)
>>> it = IterationStats(index=1, wall_s=2e-3, kernel_s=1e-3, gap_s=1e-3, copy_s=1e-3)
>>> run = MeasuredRun(source="t", format="kineto", tags=(), kernels=(copy,), iterations=(it,))
>>> [(c.direction, c.calls, c.bandwidth_bytes_per_s) for c in copies_by_direction(run)]
[('HtoD', 1.0, 10000000000.0)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.evidence.run import MeasuredRun

__all__ = ["CopyDirection", "copies_by_direction", "copy_direction"]

_MEMCPY = re.compile(r"^\s*memcpy\s+([a-z]{1,2}to[a-z]{1,2})\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyDirection:
    """The copies of one direction, per steady-state iteration.

    Attributes:
        direction: ``HtoD``, ``DtoH``, ``DtoD``, ``PtoP``... as the trace names it, ``memset``,
            or ``memcpy`` when the name gives no direction.
        calls: Copies per iteration.
        bytes: Bytes moved per iteration by the copies that recorded a size.
        time_s: Time in copies of this direction per iteration, s (all of them).
        sized_time_s: Time of the copies that recorded a size, per iteration, s.
        unsized_calls: Copies per iteration that recorded no (usable) size.
    """

    direction: str
    calls: float
    bytes: float
    time_s: float
    sized_time_s: float
    unsized_calls: float

    @property
    def bandwidth_bytes_per_s(self) -> float | None:
        """Bytes over the sized copies' time, bytes/s (None when they took no time)."""
        return self.bytes / self.sized_time_s if self.sized_time_s > 0 else None


def copy_direction(name: str, kind: str) -> str:
    """The direction a copy's name states (``Memcpy DtoH (Device -> Pinned)`` -> ``DtoH``).

    >>> copy_direction("Memcpy DtoD (Device -> Device)", "memcpy")
    'DtoD'
    >>> copy_direction("Memset (Device)", "memset")
    'memset'
    """
    if kind == "memset":
        return "memset"
    found = _MEMCPY.match(name)
    if found is None:
        return "memcpy"
    word = found[1]
    i = word.lower().index("to")
    return f"{word[:i].upper()}to{word[i + 2 :].upper()}"


def copies_by_direction(run: MeasuredRun) -> tuple[CopyDirection, ...]:
    """Memcpys and memsets of the steady-state iterations by direction (see the module doc).

    Args:
        run: The measured run.

    Returns:
        One entry per direction seen, the most time first; empty when the run has no copies.
    """
    steady = {it.index for it in run.steady_iterations}
    n = max(len(steady), 1)
    sums: dict[str, list[float]] = {}
    for k in run.kernels:
        if k.kind not in ("memcpy", "memset") or k.iteration not in steady:
            continue
        # calls, bytes, time, time of the sized copies, unsized calls
        acc = sums.setdefault(copy_direction(k.name, k.kind), [0.0, 0.0, 0.0, 0.0, 0.0])
        acc[0] += 1
        acc[2] += k.duration_s
        if k.bytes is not None and k.bytes >= 0:
            acc[1] += k.bytes
            acc[3] += k.duration_s
        else:
            acc[4] += 1
    out = [
        CopyDirection(
            direction=d,
            calls=v[0] / n,
            bytes=v[1] / n,
            time_s=v[2] / n,
            sized_time_s=v[3] / n,
            unsized_calls=v[4] / n,
        )
        for d, v in sums.items()
    ]
    return tuple(sorted(out, key=lambda c: (-c.time_s, c.direction)))
