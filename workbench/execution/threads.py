"""BLAS threads of the NumPy engine: one setting shared by calibration and measurement.

Multi-threaded OpenBLAS spin-waits for its threads; on a machine shared with other processes a
descheduled thread turns a 40 us tile matmul into a 20 ms one (measured on the 2-core CI host:
p90 24 ms with 2 threads, 46 us with 1). ``workbench calibrate`` and ``workbench validate``
therefore run with the same BLAS thread count, one by default, so their figures agree.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["DEFAULT_BLAS_THREADS", "blas_thread_count", "blas_threads", "kept_heap"]

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


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_DEFAULTS = {_M_TRIM_THRESHOLD: 128 * 1024, _M_MMAP_THRESHOLD: 128 * 1024}


@contextlib.contextmanager
def kept_heap(enabled: bool = True) -> Iterator[bool]:
    """Keep freed NumPy temporaries in the process heap inside the block (glibc only).

    NumPy allocates each kernel's temporaries afresh; glibc serves large blocks with ``mmap``
    and returns them on free, so the next call faults every page in again (the kernel zeroes
    them) and whether it does depends on the allocation history (glibc adapts its threshold).
    Timed runs then differ by the page faults, not by the work. Inside the block large blocks
    come from the heap and stay there (``mallopt`` M_MMAP_THRESHOLD and M_TRIM_THRESHOLD at
    1 GiB); afterwards glibc's defaults are set again (its adaptive threshold stays off). Yields
    whether the setting took effect (False off glibc).
    """
    libc = _glibc() if enabled else None
    if libc is None:
        yield False
        return
    for param in _GLIBC_DEFAULTS:
        libc.mallopt(param, 1 << 30)
    try:
        yield True
    finally:
        for param, value in _GLIBC_DEFAULTS.items():
            libc.mallopt(param, value)


def _glibc():
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.mallopt  # noqa: B018 - glibc has it, musl and macOS do not
    except (OSError, AttributeError):
        return None
    return libc
