"""Errors the workbench raises for bad input.

Every error a user can cause (a malformed hardware file, an inconsistent graph, an unknown
dtype, a corrupt run record) is a :class:`WorkbenchError` whose message is one line saying what
was wrong and where. The CLI prints that line and exits with status 2; it never shows a traceback
for these.
"""

from __future__ import annotations

__all__ = ["GraphError", "HardwareError", "IngestError", "WorkbenchError"]


class WorkbenchError(ValueError):
    """Bad input: the message is one line naming what was wrong and where."""


class GraphError(WorkbenchError):
    """An operator graph is inconsistent (shapes, sizes, dtypes, edges)."""


class HardwareError(WorkbenchError):
    """A hardware profile is malformed or cannot be found."""


class IngestError(WorkbenchError):
    """A model file (Hugging Face config.json, ONNX) cannot be turned into a graph."""
