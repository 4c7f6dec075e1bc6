"""The error the execution engine raises for bad input."""

from __future__ import annotations

from workbench.errors import WorkbenchError

__all__ = ["ExecutionError"]


class ExecutionError(WorkbenchError):
    """A kernel was asked to run with inconsistent shapes, tiles or options."""
