"""Every shipped hardware file loads, and its figures match the published ones.

Sources (see /work/shared/reference/hardware_reference.md, tables A1, A3, A4):
- H100 SXM5: NVIDIA datasheet via archive-lib.hpctech.co.jp and glennklockwood.com [V]
- A100 80GB: NVIDIA A100 datasheet via glennklockwood.com [V]
- TPU v4 / v5e: docs.cloud.google.com/tpu/docs/v4, /v5e [V]; scaling book ridge "240" [V]
- MI300X: AMD datasheet via ROCm docs and MI300X-vs-H200 METHODOLOGY.md [S]
- Gaudi 3: Intel Hot Chips 2024 deck [V-copy]; L4: datasheet sparse/2 [S][D]
"""

import pytest

from workbench.hw import hardware_hash, list_hardware, load_hardware
from workbench.hw.loader import builtin_dir, schema_text

BUILTIN = sorted(p.stem for p in builtin_dir().glob("*.yaml"))
EXPECTED = {
    "h100-sxm",
    "h200",
    "a100-80gb",
    "l4",
    "t4",
    "v100-sxm2",
    "mi300x",
    "tpu-v4",
    "tpu-v5e",
    "gaudi3",
    "edge-npu",
    "eyeriss",
    "teaching",
}


def test_every_expected_profile_ships():
    assert set(BUILTIN) == EXPECTED
    assert set(list_hardware()) >= EXPECTED


@pytest.mark.parametrize("name", BUILTIN)
def test_profile_loads_and_is_consistent(name):
    hw = load_hardware(name)
    assert hw.name == name  # file name and profile name agree
    assert hw.sources
    assert hw.offchip.kind == "dram"
    assert hw.sram.capacity_bytes > 0
    assert hw.power.idle_w < hw.power.tdp_w
    engines = set(hw.matrix_engine.peak_flops_per_s) | set(hw.vector_unit.peak_flops_per_s)
    assert set(hw.power.energy_pj_per_flop) <= engines
    assert len(hardware_hash(hw)) == 64


# (profile, dtype, dense peak FLOP/s) -- datasheet / vendor-doc figures, dense (no sparsity)
PEAKS = [
    ("h100-sxm", "bf16", 989.4e12),  # H100 datasheet 1979 sparse / 2 [V]
    ("h100-sxm", "fp8_e4m3", 1978.9e12),  # [V]
    ("h100-sxm", "tf32", 494.7e12),  # [V]
    ("h200", "bf16", 989.4e12),  # same GH100 compute [S]
    ("a100-80gb", "bf16", 312e12),  # A100 datasheet [V]
    ("a100-80gb", "int8", 624e12),  # [V]
    ("l4", "bf16", 121e12),  # 242 sparse / 2 [S][D]
    ("v100-sxm2", "fp16", 125e12),  # V100 datasheet (SXM2) tensor performance [V]
    ("t4", "fp16", 65e12),  # T4 datasheet mixed precision [V]
    ("t4", "int8", 130e12),  # T4 datasheet [V]
    ("mi300x", "bf16", 1307.4e12),  # [S]
    ("tpu-v4", "bf16", 275e12),  # Cloud TPU v4 docs [V]
    ("tpu-v5e", "bf16", 197e12),  # Cloud TPU v5e docs [V]
    ("tpu-v5e", "int8", 394e12),  # scaling book 3.94e14 [V]
    # Intel Hot Chips 2024 claims 1835 [V-copy] at 1.75 GHz; shipping parts run 1.6 GHz (issue 10):
    ("gaudi3", "bf16", 8 * 256 * 256 * 2 * 1.6e9),  # [D] 8 MMEs x 256x256 MAC x 2 x 1.6 GHz
    ("edge-npu", "int8", 4e12),  # coral.ai 4 TOPS [V]
]


@pytest.mark.parametrize(("name", "dtype", "peak"), PEAKS)
def test_published_peaks(name, dtype, peak):
    assert load_hardware(name).peak_flops(dtype) == pytest.approx(peak)


@pytest.mark.parametrize(
    ("name", "bandwidth"),
    [
        ("h100-sxm", 3.35e12),
        ("h200", 4.8e12),
        ("a100-80gb", 2.039e12),
        ("l4", 300e9),
        ("v100-sxm2", 900e9),  # V100 datasheet [V]
        ("t4", 320e9),  # T4 datasheet [V]
        ("mi300x", 5.3e12),
        ("tpu-v4", 1.2e12),
        ("tpu-v5e", 819e9),
        ("gaudi3", 3.67e12),
    ],
)
def test_published_offchip_bandwidth(name, bandwidth):
    assert load_hardware(name).offchip.bandwidth_bytes_per_s == pytest.approx(bandwidth)


# Reference A4 "Ridge points (BF16 dense peak / HBM BW) [D]"; TPU v5e "240" in the scaling book.
@pytest.mark.parametrize(
    ("name", "ridge"),
    [
        ("h100-sxm", 295),
        ("h200", 206),
        ("a100-80gb", 153),
        ("l4", 403),
        ("mi300x", 247),
        ("tpu-v4", 229),
        ("tpu-v5e", 240),
        ("gaudi3", 457),  # 1677.7 TFLOP/s at 1.6 GHz shipping / 3.67 TB/s (A4: 500 at 1.75 GHz)
    ],
)
def test_ridge_points(name, ridge):
    assert load_hardware(name).ridge_point("bf16") == pytest.approx(ridge, rel=0.005)


def test_pre_ampere_fp32_runs_on_the_cuda_cores():
    # datasheets: V100 SXM2 15.7 TFLOPS, T4 8.1 TFLOPS single precision [V]
    assert load_hardware("v100-sxm2").vector_unit.peak_flops_per_s["fp32"] == pytest.approx(15.7e12)
    assert load_hardware("t4").vector_unit.peak_flops_per_s["fp32"] == pytest.approx(8.1e12)


def test_volta_ridge_point_is_the_published_one():
    # hardware_reference.md: V100 "138.9 FLOPS:B = 125 TFLOPS / 900 GB/s" (NVIDIA's GEMM guide)
    assert load_hardware("v100-sxm2").ridge_point("fp16") == pytest.approx(138.9, rel=0.001)


def test_engines_lack_what_the_silicon_lacks():
    for name in ("v100-sxm2", "t4"):  # no TF32 or BF16 before Ampere
        assert not load_hardware(name).supports("tf32")
        assert not load_hardware(name).supports("bf16")
    assert not load_hardware("a100-80gb").supports("fp8_e4m3")  # no FP8 on Ampere
    assert not load_hardware("tpu-v4").supports("fp8_e4m3")
    assert not load_hardware("edge-npu").supports("bf16")  # int8 only


def test_core_counts():
    assert load_hardware("h100-sxm").matrix_engine.cores == 132  # SMs [V]
    assert load_hardware("a100-80gb").matrix_engine.cores == 108  # SMs [V]
    assert load_hardware("mi300x").matrix_engine.cores == 304  # CUs [V]


def test_committed_json_schema_matches_the_models():
    committed = (builtin_dir() / "schema.json").read_text()
    assert committed == schema_text(), "run: python -m workbench.hw --write-schema"
