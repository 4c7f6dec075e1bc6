"""The error the execution engine raises for bad input."""

from __future__ import annotations

from workbench.errors import WorkbenchError

__all__ = ["ExecutionError", "check_sizes"]


class ExecutionError(WorkbenchError):
    """A kernel was asked to run with inconsistent shapes, tiles or options."""


def check_sizes(kernel: str, **sizes: object) -> None:
    """Refuse a size that is not a positive integer, in one line naming it.

    ``True``, ``2.5``, ``None`` and ``"4"`` are refused too (no TypeError reaches the caller).

    >>> check_sizes("gemm", tile_m=2.5)
    Traceback (most recent call last):
    ...
    workbench.execution.errors.ExecutionError: gemm: tile_m must be a positive integer, got 2.5
    """
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ExecutionError(f"{kernel}: {name} must be a positive integer, got {value!r}")
