"""The serving package's error type."""

from __future__ import annotations

from workbench.errors import WorkbenchError

__all__ = ["ServingError"]


class ServingError(WorkbenchError):
    """Bad serving input: a workload, a trace file, a step-time table or a simulation option."""
