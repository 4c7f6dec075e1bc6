"""BLAS threads of the NumPy engine: one setting shared by calibration and measurement.

Multi-threaded OpenBLAS spin-waits for its threads; on a machine shared with other processes a
descheduled thread turns a 40 us tile matmul into a 20 ms one (measured on the 2-core CI host:
p90 24 ms with 2 threads, 46 us with 1). ``workbench calibrate`` and ``workbench validate``
therefore run with the same BLAS thread count, one by default, so their figures agree.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["DEFAULT_BLAS_THREADS", "blas_thread_count", "blas_threads"]

#: BLAS threads for calibration and validation (see the module docstring).
DEFAULT_BLAS_THREADS = 1


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Limit the BLAS thread pools to ``n`` threads inside the block (None: leave as is).

    Without ``threadpoolctl`` the block runs unchanged.
    """
    if n is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        yield
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield


def blas_thread_count() -> int | None:
    """Threads of the first BLAS pool NumPy uses now, or None when unknown."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return None
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return int(pools[0]["num_threads"]) if pools else None
