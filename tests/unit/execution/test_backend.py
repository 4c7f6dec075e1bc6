import sys
import types

import numpy as np
import pytest

from workbench.execution import (
    ExecutionError,
    backend,
    get_backend,
    resolve_backend,
    sync,
    to_numpy,
)


@pytest.fixture
def fresh_cupy_probe():
    backend._cupy_backend.cache_clear()
    yield
    backend._cupy_backend.cache_clear()


def test_numpy_by_name():
    bk = get_backend("numpy")
    assert bk.name == "numpy"
    assert bk.xp is np
    assert not bk.is_gpu
    assert ("numpy", np.__version__) in bk.versions


def test_env_var_selects_numpy(monkeypatch):
    monkeypatch.setenv(backend.BACKEND_ENV, "numpy")
    assert get_backend().name == "numpy"


def test_unknown_name_raises_one_line(monkeypatch):
    with pytest.raises(ExecutionError, match="tpu"):
        get_backend("tpu")
    monkeypatch.setenv(backend.BACKEND_ENV, "metal")
    with pytest.raises(ExecutionError, match="WORKBENCH_BACKEND"):
        get_backend()


def test_cupy_missing_warns_and_falls_back(monkeypatch, fresh_cupy_probe):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    with pytest.warns(RuntimeWarning, match="using NumPy"):
        bk = get_backend("cupy")
    assert bk.name == "numpy"


def test_auto_without_cupy_is_silent_numpy(monkeypatch, fresh_cupy_probe, recwarn):
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.delenv(backend.BACKEND_ENV, raising=False)
    assert get_backend().name == "numpy"
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_cuda_error_falls_back(monkeypatch, fresh_cupy_probe):
    def broken() -> bool:
        raise RuntimeError("cudaErrorInsufficientDriver")

    fake = types.SimpleNamespace(is_available=broken, __version__="0")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.warns(RuntimeWarning, match="cudaErrorInsufficientDriver"):
        assert get_backend("cupy").name == "numpy"


def test_no_device_falls_back(monkeypatch, fresh_cupy_probe):
    fake = types.SimpleNamespace(is_available=lambda: False, __version__="0")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.warns(RuntimeWarning, match="no CUDA device"):
        assert get_backend("cupy").name == "numpy"


def test_resolve_accepts_backend_name_and_none():
    bk = get_backend("numpy")
    assert resolve_backend(bk) is bk
    assert resolve_backend("numpy") is bk


def test_sync_and_to_numpy_on_numpy():
    bk = get_backend("numpy")
    sync(bk)
    x = np.arange(3)
    assert to_numpy(x) is x
    assert to_numpy([1, 2]).tolist() == [1, 2]
