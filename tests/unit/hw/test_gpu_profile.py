import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from workbench.cli import main
from workbench.errors import HardwareError
from workbench.hw import load_hardware
from workbench.hw.calibrate import gpu_profile, write_profile
from workbench.hw.gpu_calibrate import GPU_SOURCE
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions

# H200-like figures of the shape probe_gpu returns. Rates are round numbers near what cuBLAS
# achieves on an H200 (hardware/h200.yaml: 989.4 TFLOP/s fp16 dense, 4.8 TB/s HBM3e); they are
# test data, not claims.
H200_LIKE = {
    "device": {
        "name": "NVIDIA H200",
        "compute_capability": "90",
        "sm_count": 132,
        "total_memory_bytes": 150_000_000_000,
        "l2_bytes": 50 * 2**20,
        "smem_per_sm_bytes": 233_472,
        "clock_hz": 1.98e9,
    },
    "matmul_flops_per_s": {"fp32": 50e12, "fp16": 700e12},
    "matmul_by_size": {"fp32": {4096: 48e12, 8192: 50e12}, "fp16": {4096: 650e12, 8192: 700e12}},
    "copy_bytes_per_s": 4.0e12,
    "launch_s": 4e-6,
    "quick": False,
    "notes": ("matmul note", "copy note"),
}


def _figures(**device):
    return {**H200_LIKE, "device": {**H200_LIKE["device"], **device}}


def test_measured_figures_land_in_the_profile():
    hw = gpu_profile(H200_LIKE, name="my-gpu")
    assert hw.name == "my-gpu"
    assert hw.peak_flops("fp16") == 700e12
    assert hw.peak_flops("fp32") == 50e12
    assert not hw.supports("bf16")  # CuPy has no bf16: unsupported, not guessed
    assert hw.matrix_engine.efficiency == 1.0  # peaks are achieved rates already
    assert hw.matrix_engine.cores == 132
    assert hw.matrix_engine.clock_hz == 1.98e9
    assert (hw.matrix_engine.native_tile_m, hw.matrix_engine.native_tile_n,
            hw.matrix_engine.native_tile_k) == (64, 8, 16)  # fmt: skip
    assert hw.sram.capacity_bytes == 233_472
    assert hw.level("l2").capacity_bytes == 50 * 2**20
    assert hw.offchip.bandwidth_bytes_per_s == 4.0e12
    assert hw.offchip.capacity_bytes == 150_000_000_000
    assert hw.overheads.kernel_launch_s == 4e-6
    assert hw.sources == (GPU_SOURCE,)


def test_every_assumed_figure_is_listed():
    text = " | ".join(gpu_profile(H200_LIKE).assumptions)
    for phrase in ("native tile 64x8x16", "register file", "shared memory bandwidth",
                   "L2 bandwidth", "energy", "graph launch", "TDP", "vector fp32", "software",
                   "matmul note", "copy note"):  # fmt: skip
        assert phrase in text, phrase
    assert "GHz (not reported" not in text  # the clock was reported, so not an assumption


def test_unreported_device_facts_become_listed_assumptions():
    hw = gpu_profile(_figures(clock_hz=0, smem_per_sm_bytes=0, l2_bytes=0))
    text = " | ".join(hw.assumptions)
    assert "clock 1.5 GHz" in text
    assert "shared memory per SM 228 KiB" in text
    assert "L2 50 MiB" in text
    assert hw.sram.capacity_bytes == 228 * 1024


def test_tf32_only_profile_derives_the_vector_rate():
    hw = gpu_profile({**H200_LIKE, "matmul_flops_per_s": {"tf32": 370e12, "fp16": 700e12}})
    assert hw.supports("tf32")
    assert not hw.supports("fp32")
    assert hw.vector_flops("fp32") == pytest.approx(370e12 / 7.4)


def test_bandwidth_never_rises_outward():
    bws = [m.bandwidth_bytes_per_s for m in gpu_profile(H200_LIKE).memory]
    assert bws == sorted(bws, reverse=True)


def test_mapper_maps_gpt2_on_the_profile(tmp_path):
    path = write_profile(gpu_profile(H200_LIKE), tmp_path / "gpu.yaml")
    hw = load_hardware(path)  # round-trips through YAML like any other profile
    graph = build_graph("gpt2", seq=128, dtype="fp16")
    mapping = map_model(graph, hw, MapOptions(dtype="fp16"))
    assert mapping.kernels
    assert all(km.cost.total_s > 0 for km in mapping.kernels)


@pytest.mark.parametrize(
    ("figures", "where"),
    [
        ({k: v for k, v in H200_LIKE.items() if k != "copy_bytes_per_s"}, "copy_bytes_per_s"),
        ({**H200_LIKE, "launch_s": 0.0}, "launch_s"),
        ({**H200_LIKE, "matmul_flops_per_s": {"fp16": -1.0}}, "matmul_flops_per_s.fp16"),
        ({**H200_LIKE, "matmul_flops_per_s": {}}, "matmul_flops_per_s"),
        ({**H200_LIKE, "matmul_flops_per_s": {"fp64": 1e12}}, "peak_flops_per_s"),
        (_figures(sm_count=0), "device.sm_count"),
    ],
)
def test_bad_figures_give_one_line(figures, where):
    with pytest.raises(HardwareError, match=where) as info:
        gpu_profile(figures)
    assert "\n" not in str(info.value)


def _has_gpu() -> bool:
    from workbench.execution import get_backend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_backend("cupy").is_gpu


@pytest.mark.skipif(_has_gpu(), reason="a CUDA device is present: the no-GPU path cannot run")
def test_cli_cupy_backend_without_gpu_exits_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "gpu.yaml"
    assert main(["calibrate", "--backend", "cupy", "--quick", "--output", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "no CUDA device: " in lines[0]
    assert not out.exists()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu(), reason="needs CuPy and a CUDA device")
def test_probe_gpu_quick_gives_a_mappable_profile():
    from workbench.execution.gpu_probe import probe_gpu

    figures = probe_gpu(quick=True)
    assert figures["device"]["sm_count"] > 0
    assert set(figures["matmul_flops_per_s"]) >= {"fp16"}
    assert figures["copy_bytes_per_s"] > 0
    assert figures["launch_s"] > 0
    hw = gpu_profile(figures)
    graph = build_graph("gpt2", seq=128, dtype="fp16")
    assert map_model(graph, hw, MapOptions(dtype="fp16")).kernels


class _FakeCupy:
    """Just enough of CuPy's surface for probe_gpu's plumbing, on NumPy (no device here).

    Event times are a fixed 1 ms per recorded batch, so the figures are known in advance: they
    test the bookkeeping (keys, units, notes), not a device.
    """

    float32, float16 = np.float32, np.float16

    def __init__(self):
        fake = self

        class Event:
            def __init__(self):
                self.t = 0.0

            def record(self):
                self.t = fake.clock = fake.clock + 1e-3

            def synchronize(self):
                pass

        class Pool:
            def free_all_blocks(self):
                pass

        class Mem:
            def copy_from_device(self, src, size):
                pass

        class Arr(np.ndarray):
            data = Mem()

        self.clock = 0.0
        self._arr = Arr
        self.cuda = SimpleNamespace(
            Event=Event,
            get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
            Device=lambda: SimpleNamespace(id=0, compute_capability="90", synchronize=lambda: None),
            runtime=SimpleNamespace(getDeviceProperties=lambda i: {
                "name": b"Fake GPU", "multiProcessorCount": 4, "totalGlobalMem": 2**30,
                "l2CacheSize": 2**20, "sharedMemPerMultiprocessor": 65536}),
        )  # fmt: skip
        self.random = SimpleNamespace(
            standard_normal=lambda shape, dtype: np.ones(shape, dtype=dtype)
        )
        self.get_default_memory_pool = Pool

    def matmul(self, a, b, out):
        return out

    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype)

    def ones(self, n, dtype):
        return np.ones(n, dtype=dtype).view(self._arr)

    def empty_like(self, a):
        return np.empty_like(a)

    def add(self, a, b, out):
        return out


def test_probe_gpu_plumbing_on_a_fake_cupy(monkeypatch):
    from workbench.execution import gpu_probe

    monkeypatch.setattr(gpu_probe, "_cupy", _FakeCupy)
    monkeypatch.delenv("CUPY_TF32", raising=False)
    monkeypatch.setattr(gpu_probe, "_MATMUL_SIDES", {True: (64,), False: (64, 128)})
    monkeypatch.setattr(gpu_probe, "_COPY_MIB", {True: 1, False: 2})
    figures = gpu_probe.probe_gpu(quick=True)
    # 1 ms per batch of `number` calls: number = 50 ms / 1 ms ~ 50 calls per batch (49 or 50
    # as the float division rounds), so the per-call time is ~20 us.
    assert figures["matmul_flops_per_s"]["fp32"] == pytest.approx(2 * 64**3 / 20e-6, rel=0.03)
    assert set(figures["matmul_flops_per_s"]) == {"fp32", "fp16"}
    assert figures["copy_bytes_per_s"] == pytest.approx(2 * 2**20 / 20e-6, rel=0.03)
    assert figures["launch_s"] > 0
    assert figures["device"] == {
        "name": "Fake GPU", "compute_capability": "90", "sm_count": 4,
        "total_memory_bytes": 2**30, "l2_bytes": 2**20, "smem_per_sm_bytes": 65536,
        "clock_hz": 0.0,
    }  # fmt: skip
    assert any("tf32 not measured" in n for n in figures["notes"])
    hw = gpu_profile(figures)  # the probe's output is what gpu_profile takes
    assert hw.matrix_engine.cores == 4
    assert hw.sram.capacity_bytes == 65536
    monkeypatch.setenv("CUPY_TF32", "1")
    full = gpu_probe.probe_gpu(quick=False)
    assert set(full["matmul_by_size"]["tf32"]) == {64, 128}
    assert "fp32" not in full["matmul_flops_per_s"]
