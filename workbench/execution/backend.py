"""Array backends: one implementation, written against an array module ``xp``.

NumPy is the default and the fallback; CuPy is used when it imports and sees a CUDA device.
The choice, in order of precedence: the explicit ``name`` argument, the environment variable
``WORKBENCH_BACKEND`` (``numpy`` or ``cupy``), then automatic detection. Anything that goes wrong
on the CuPy side (not installed, no device, a CUDA error) gives one warning line on stderr
(``workbench: warning: ...``, :mod:`workbench._warn`) and the NumPy path, never a crash.

CuPy is imported lazily and only inside :mod:`workbench.execution` (the import-layer rule).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench._warn import warn
from workbench.execution.errors import ExecutionError

__all__ = ["BACKEND_ENV", "Backend", "get_backend", "resolve_backend", "sync", "to_numpy"]

BACKEND_ENV = "WORKBENCH_BACKEND"
_NAMES = ("numpy", "cupy")


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend:
    """An array module and what it runs on.

    Attributes:
        name: ``"numpy"`` or ``"cupy"``.
        xp: The array module itself (``numpy`` or ``cupy``).
        device: One line describing the device (CPU model or GPU name).
        versions: ``(package, version)`` pairs that a plan cache should key on.
    """

    name: str
    xp: Any
    device: str
    versions: tuple[tuple[str, str], ...]

    @property
    def is_gpu(self) -> bool:
        """True when arrays live on a CUDA device."""
        return self.name == "cupy"


@functools.cache
def _numpy_backend() -> Backend:
    cpu = platform.processor() or platform.machine() or "cpu"
    return Backend(
        name="numpy",
        xp=np,
        device=f"CPU ({cpu}, {os.cpu_count()} cores)",
        versions=(("numpy", np.__version__),),
    )


@functools.cache
def _cupy_backend() -> Backend | str:
    """The CuPy backend, or a one-line reason it is unavailable (cached per process)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return f"CuPy does not import ({type(exc).__name__}: {exc})".splitlines()[0]
    try:
        if not cupy.is_available():
            return "CuPy sees no CUDA device"
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        versions = (
            ("cupy", cupy.__version__),
            ("cuda_runtime", str(cupy.cuda.runtime.runtimeGetVersion())),
            ("numpy", np.__version__),
        )
    except Exception as exc:  # any CUDA error
        return f"CuPy failed to open a device ({type(exc).__name__}: {exc})".splitlines()[0]
    return Backend(name="cupy", xp=cupy, device=name, versions=versions)


def get_backend(name: str | None = None) -> Backend:
    """Choose the array backend.

    Args:
        name: ``"numpy"``, ``"cupy"`` or None (then ``WORKBENCH_BACKEND``, then automatic).

    Returns:
        The backend. Asking for CuPy where it cannot run warns in one line and returns NumPy.

    Raises:
        ExecutionError: ``name`` (or the environment variable) is not a known backend.

    Example:
        >>> get_backend("numpy").name
        'numpy'
    """
    source = "argument"
    if name is None:
        name, source = os.environ.get(BACKEND_ENV) or "auto", BACKEND_ENV
    key = name.strip().lower()
    if key not in (*_NAMES, "auto"):
        raise ExecutionError(
            f"backend {name!r} from {source}: unknown (choose numpy, cupy or leave unset)"
        )
    if key == "numpy":
        return _numpy_backend()
    found = _cupy_backend()
    if isinstance(found, Backend):
        return found
    if key == "cupy":
        warn(f"{found}; using NumPy")
    return _numpy_backend()


def resolve_backend(backend: Backend | str | None) -> Backend:
    """Accept a Backend, a backend name or None (automatic) and return a Backend."""
    if isinstance(backend, Backend):
        return backend
    return get_backend(backend)


def sync(backend: Backend) -> None:
    """Wait until all queued device work is done (a no-op on NumPy)."""
    if backend.is_gpu:
        backend.xp.cuda.get_current_stream().synchronize()


def to_numpy(x: Any) -> np.ndarray:
    """Copy an array to the host as a NumPy array (NumPy arrays pass through unchanged)."""
    getter = getattr(x, "get", None)
    if callable(getter) and type(x).__module__.startswith("cupy"):
        return getter()
    return np.asarray(x)


def as_operand(xp: Any, x: Any, kernel: str, name: str) -> Any:
    """``x`` as a float32 array of ``xp``, or one ExecutionError line naming the kernel and operand.

    Strings, objects and ragged nested lists are refused here, not deep inside NumPy.
    """
    dtype = getattr(x, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "f") not in "biuf":
        raise ExecutionError(f"{kernel}: operand {name} must be numeric, got dtype {dtype}")
    try:
        return xp.asarray(x, dtype=xp.float32)
    except (TypeError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExecutionError(f"{kernel}: operand {name} is not a numeric array ({first})") from None
