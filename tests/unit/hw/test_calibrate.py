from pathlib import Path

import pytest

from workbench.cli import main
from workbench.hw import load_hardware
from workbench.hw.calibrate import CacheLevel, cache_levels


@pytest.fixture(scope="module")
def host_profile(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cal") / "host.yaml"
    assert main(["calibrate", "--quick", "--output", str(path)]) == 0
    return path


def test_quick_calibration_writes_a_loadable_profile(host_profile):
    hw = load_hardware(host_profile)
    assert hw.name == "host"
    assert hw.peak_flops("fp32") > 0
    assert hw.supports("fp16")
    assert not hw.supports("bf16")  # NumPy has no bf16: recorded as unsupported
    assert hw.offchip.kind == "dram"
    assert hw.sram.scope == "per_core"
    assert hw.overheads.kernel_launch_s > 0
    # The NumPy engine runs tiles one after another and issues each step from Python.
    assert hw.matrix_engine.cores == 1
    assert hw.overheads.tile_issue_s > 0
    assert hw.scheduling == "software_issued"
    assert "\nscheduling: software_issued\n" in host_profile.read_text()  # stated, not defaulted
    assert hw.matrix_engine.native_tile_m in (16, 32, 64, 128, 256)
    assert any("tile issue" in a for a in hw.assumptions)
    assert any("effective rate" in a for a in hw.assumptions)
    assert any("fp64" in a for a in hw.assumptions)


def test_bandwidth_never_rises_outward(host_profile):
    bandwidths = [m.bandwidth_bytes_per_s for m in load_hardware(host_profile).memory]
    assert bandwidths == sorted(bandwidths, reverse=True)


def test_no_temp_file_left_behind(host_profile):
    assert [p.name for p in host_profile.parent.iterdir()] == ["host.yaml"]


def test_cache_levels_from_sysfs(tmp_path):
    for i, (level, kind, size, shared) in enumerate(
        [
            (1, "Data", "32K", "0-1"),
            (1, "Instruction", "32K", "0"),
            (2, "Unified", "1024K", "0"),
            (3, "Unified", "16M", "0-7"),
        ]
    ):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for name, value in (
            ("level", level),
            ("type", kind),
            ("size", size),
            ("shared_cpu_list", shared),
        ):
            (d / name).write_text(f"{value}\n")
    levels = cache_levels(tmp_path)
    assert [(c.level, c.size_bytes, c.per_core) for c in levels] == [
        (1, 32 * 1024, True),
        (2, 1024**2, True),
        (3, 16 * 1024**2, False),
    ]


def test_cache_levels_fall_back_to_assumptions(tmp_path):
    levels = cache_levels(tmp_path / "missing")
    assert levels
    assert all(isinstance(c, CacheLevel) and c.source == "assumption" for c in levels)


def test_native_side_is_the_smallest_side_near_the_best_rate():
    from workbench.hw.calibrate import native_side

    assert native_side({16: 1.0, 32: 5.0, 64: 9.0, 128: 10.0}) == 32
    assert native_side({16: 10.0, 32: 5.0}) == 16


def test_calibrate_without_probe_uses_the_numpy_replica(monkeypatch):
    from workbench.hw import calibrate as cal

    seen = {}

    def probe(hw, quick):
        seen["cores"] = hw.matrix_engine.cores
        return {
            "tile_issue_s": 3e-6,
            "kernel_launch_s": 7e-6,
            "vector_flops_per_s": 1e9,
            "notes": ("probe",),
        }

    hw = cal.calibrate(quick=True, progress=False, engine=probe)
    assert seen == {"cores": 1}
    assert hw.overheads.tile_issue_s == 3e-6
    assert hw.overheads.kernel_launch_s == 7e-6
    assert hw.vector_flops("fp32") == 1e9
