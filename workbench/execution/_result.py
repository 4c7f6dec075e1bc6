"""What an execution of a mapped kernel returns (public) and what a runner returns (internal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.execution.trace import Trace

__all__ = ["ExecutionResult", "RunOutput"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult:
    """What one execution of a mapped kernel produced.

    Attributes:
        kernel: Kernel name.
        kind: Kernel kind.
        backend: ``numpy`` or ``cupy``.
        output: The output array (backend array module), float32.
        tile: The tiling that ran, ``MxNxK``.
        tiles: Tile executions (tile calls, split-K slices counted).
        method: One line saying how it ran.
        notes: Where execution departs from the mapping, and why.
        trace: The trace recorded (None when not asked for).
    """

    kernel: str
    kind: str
    backend: str
    output: Any
    tile: str
    tiles: int
    method: str
    notes: tuple[str, ...] = ()
    trace: Trace | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutput:
    """A runner's output, tile count, method line and notes."""

    output: Any
    tiles: int
    method: str
    notes: tuple[str, ...] = ()
