"""Execution traces: one event per tile, for timeline charts and predicted-vs-measured.

A :class:`Trace` is a recorder the kernels append to; :class:`TraceEvent` is one frozen record.
With ``trace=None`` a kernel does no timing at all (no clock reads, no device syncs).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from workbench.execution.backend import Backend, sync

__all__ = ["Trace", "TraceEvent", "tile_start", "tile_stop"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceEvent:
    """One executed tile.

    Attributes:
        kernel: Kernel name (``"gemm"``, ``"attention.fused"`` ...).
        tile_index: Tile coordinates in the kernel's own loop order (e.g. ``(m, n, split)``).
        bytes_touched: Bytes the tile reads and writes at its storage widths (bytes).
        flops: Floating-point operations the tile performs (FLOP, a multiply-add is 2).
        start_s: Start time relative to the trace's creation (s).
        elapsed_s: Wall time of the tile, device-synchronised on CuPy (s).
    """

    kernel: str
    tile_index: tuple[int, ...]
    bytes_touched: int
    flops: int
    start_s: float
    elapsed_s: float


@dataclass(slots=True)
class Trace:
    """A list-like recorder of :class:`TraceEvent` (mutable on purpose: kernels append to it).

    Attributes:
        events: The events in execution order.
        origin_s: ``time.perf_counter()`` at creation; event start times are relative to it (s).
    """

    events: list[TraceEvent] = field(default_factory=list)
    origin_s: float = field(default_factory=time.perf_counter)

    def append(self, event: TraceEvent) -> None:
        """Record one event."""
        self.events.append(event)

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __getitem__(self, index: int) -> TraceEvent:
        return self.events[index]

    @property
    def total_flops(self) -> int:
        """Sum of the events' FLOPs (FLOP)."""
        return sum(e.flops for e in self.events)

    @property
    def total_bytes(self) -> int:
        """Sum of the events' bytes touched (bytes)."""
        return sum(e.bytes_touched for e in self.events)

    @property
    def total_elapsed_s(self) -> float:
        """Sum of the events' elapsed times (s)."""
        return sum(e.elapsed_s for e in self.events)

    def freeze(self) -> tuple[TraceEvent, ...]:
        """The events as a tuple, for records that must not change."""
        return tuple(self.events)


def tile_start(trace: Trace | None, backend: Backend) -> float:
    """Start timing a tile: 0.0 without a trace, else a synchronised clock reading (s)."""
    if trace is None:
        return 0.0
    sync(backend)
    return time.perf_counter()


def tile_stop(
    trace: Trace | None,
    backend: Backend,
    t0: float,
    *,
    kernel: str,
    tile_index: tuple[int, ...],
    bytes_touched: int,
    flops: int,
) -> None:
    """Finish timing a tile and append its event (does nothing without a trace)."""
    if trace is None:
        return
    sync(backend)
    elapsed = time.perf_counter() - t0
    trace.append(
        TraceEvent(
            kernel=kernel,
            tile_index=tile_index,
            bytes_touched=int(bytes_touched),
            flops=int(flops),
            start_s=t0 - trace.origin_s,
            elapsed_s=elapsed,
        )
    )
