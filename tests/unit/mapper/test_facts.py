"""The mapper checked against facts, not against itself."""

import math

import pytest

from workbench.ir import Graph, Linear
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import FUSION_RULES, MapOptions


def _gemm_graph(m, n, k, dtype="bf16"):
    op = Linear(name="gemm", inputs=("x",), tokens=(m,), in_features=k, out_features=n, dtype=dtype)
    return Graph(name="gemm", ops=(op,))


def test_llama2_7b_decode_is_hbm_bound_near_the_bandwidth_floor(h100):
    # Decode at batch 1 reads every weight and the KV cache once per token, so tokens/s is
    # bounded by sustained HBM bandwidth / bytes read per token (H100 SXM: 3.35e12 B/s
    # datasheet x 0.84 measured streaming fraction), and never by the datasheet figure.
    g = build_graph("llama2-7b", phase="decode", batch=1, context=2048)
    m = map_model(g, h100)
    hbm_time = sum(k.cost.total_s for k in m.kernels if k.cost.bottleneck == "bandwidth:hbm")
    assert hbm_time > 0.8 * m.time_s
    assert m.tokens_per_s < h100.offchip.bandwidth_bytes_per_s / g.bytes_read
    floor = h100.offchip.sustained_bytes_per_s / g.bytes_read
    assert m.tokens_per_s <= floor * 1.001
    assert m.tokens_per_s == pytest.approx(floor, rel=0.15)


def test_large_square_bf16_gemm_is_compute_bound_at_realistic_efficiency(h100):
    # Measured maximum achievable matmul on H100 SXM is 792 TFLOP/s = 80% of 989 (stas00 MAMF).
    m = map_model(_gemm_graph(8192, 8192, 8192), h100)
    k = m.kernels[0]
    assert k.cost.bottleneck == "compute"
    efficiency = k.kernel.flops / k.cost.total_s / h100.peak_flops("bf16")
    assert 0.60 <= efficiency <= 0.95


def test_skinny_gemm_is_bandwidth_bound(h100):
    m = map_model(_gemm_graph(1, 8192, 8192), h100)
    assert m.kernels[0].cost.bottleneck.startswith("bandwidth")


@pytest.mark.parametrize(
    ("model", "phase"),
    [
        ("llama2-7b", "prefill"),
        ("llama2-7b", "decode"),
        ("bert-base", "prefill"),
        ("resnet50", "prefill"),
        ("gpt2", "decode"),
    ],
)
@pytest.mark.parametrize("rule", sorted(FUSION_RULES))
def test_turning_a_fusion_rule_off_never_makes_time_shorter(h100, model, phase, rule):
    g = build_graph(model, phase=phase, batch=2, seq=512, context=512)
    base = map_model(g, h100)
    off = map_model(g, h100, MapOptions(disabled_fusion=(rule,)))
    assert off.time_s >= base.time_s * (1 - 1e-9)
    assert off.total.bytes_at("hbm") >= base.total.bytes_at("hbm") * (1 - 1e-9)


@pytest.mark.parametrize(
    "hw_name",
    [
        "h100-sxm",
        "a100-80gb",
        "tpu-v5e",
        "mi300x",
        "l4",
        "gaudi3",
        "teaching",
        "eyeriss",
        "h200",
        "tpu-v4",
    ],
)
@pytest.mark.parametrize("model", ["llama2-7b", "resnet50", "bert-base"])
def test_every_searched_tile_fits_sram(hw_name, model):
    from workbench.hw import load_hardware

    hw = load_hardware(hw_name)
    m = map_model(build_graph(model, seq=512), hw)
    for k in m.kernels:
        assert k.tiling.sram_bytes <= k.tiling.sram_capacity_bytes, k.kernel.name


def test_costs_add_up(h100):
    m = map_model(build_graph("llama2-7b", seq=256), h100)
    # The serving step's runtime cost outside the kernels (overheads.step_s) is its own term.
    assert m.step_overhead_s == h100.overheads.step_s > 0
    assert m.time_s == pytest.approx(sum(k.cost.total_s for k in m.kernels) + m.step_overhead_s)
    idle = h100.power.idle_w * m.step_overhead_s
    assert m.energy_j == pytest.approx(sum(k.cost.energy_j for k in m.kernels) + idle)
    for k in m.kernels:
        c = k.cost
        assert c.total_s == pytest.approx(c.exec_s + c.launch_s + c.sync_s)
        assert c.exec_s >= max([c.pipeline_s, c.network_s, *(s for _, s in c.memory_s)]) * 0.999


def test_the_software_stacks_step_overhead_overrides_the_profiles(h100):
    from workbench.errors import WorkbenchError
    from workbench.options import MapOptions

    g = build_graph("llama2-7b", phase="decode", batch=1, context=256)
    base = map_model(g, h100)
    stack = map_model(g, h100, MapOptions(step_overhead_s=2.5e-3))
    assert stack.step_overhead_s == 2.5e-3 != h100.overheads.step_s
    assert stack.time_s - base.time_s == pytest.approx(2.5e-3 - h100.overheads.step_s)
    assert MapOptions(step_overhead_s=1e-3).as_tags()["step_overhead_s"] == 1e-3
    # Not an LLM serving step (a CNN forward): no step overhead, whatever the stack says.
    cnn = map_model(build_graph("resnet50", batch=1), h100, MapOptions(step_overhead_s=1e-3))
    assert cnn.step_overhead_s == 0.0
    for bad in (-1e-3, float("nan"), float("inf")):
        with pytest.raises(WorkbenchError, match="step_overhead_s"):
            MapOptions(step_overhead_s=bad)


def test_offchip_traffic_never_below_compulsory(h100):
    for model in ("llama2-7b", "resnet50", "bert-base"):
        m = map_model(build_graph(model, seq=512), h100)
        for k in m.kernels:
            if k.kernel.kind == "collective":
                continue
            # An input its predecessor left in L2 (at most half of it) is read there.
            cached = k.kernel.cached_input_bytes
            assert cached <= h100.level("l2").capacity_bytes / 2
            assert k.cost.bytes_at("hbm") >= (k.kernel.bytes - cached) * 0.999, k.kernel.name


def test_mfu_definition(h100):
    m = map_model(build_graph("llama2-7b", seq=2048), h100)
    expected = m.graph.matmul_flops / (m.time_s * h100.peak_flops("bf16"))
    assert m.mfu == pytest.approx(expected)
    assert 0.3 < m.mfu < 0.85
    assert m.hfu >= m.mfu * 0.99


def test_tokens_per_s_by_phase(h100):
    pre = map_model(build_graph("llama2-7b", phase="prefill", batch=2, seq=512), h100)
    assert pre.tokens_per_s == pytest.approx(2 * 512 / pre.time_s)
    dec = map_model(build_graph("llama2-7b", phase="decode", batch=4, context=512), h100)
    assert dec.tokens_per_s == pytest.approx(4 / dec.time_s)


def test_stall_fraction_by_layer_type_in_range_and_decode_stalls_more(h100):
    pre = map_model(build_graph("llama2-7b", phase="prefill", seq=2048), h100)
    dec = map_model(build_graph("llama2-7b", phase="decode", context=2048), h100)
    for frac in (
        *pre.stall_fraction_by_layer_type().values(),
        *dec.stall_fraction_by_layer_type().values(),
    ):
        assert 0.0 <= frac <= 1.0
    assert dec.stall_fraction_by_layer_type()["mlp"] > pre.stall_fraction_by_layer_type()["mlp"]


def test_fp8_is_faster_than_bf16_for_compute_bound_prefill(h100):
    g = build_graph("llama2-7b", seq=2048)
    bf16 = map_model(g, h100)
    fp8 = map_model(g, h100, MapOptions(dtype="fp8_e4m3"))
    assert fp8.time_s < bf16.time_s


def test_int4_weight_only_speeds_up_decode_and_records_dequant(h100):
    g = build_graph("llama2-7b", phase="decode", context=512)
    base = map_model(g, h100)
    w4 = map_model(g, h100, MapOptions(weight_dtype="int4"))
    assert w4.time_s < base.time_s * 0.6
    up = w4.kernel("layers.0.mlp.up_proj")
    assert up.kernel.weight_dtype == "int4"
    assert any("dequantized" in n for n in up.kernel.notes)


def test_unsupported_dtype_moves_gemm_to_vector_unit_with_reason(a100):
    # fp32 without TF32 runs on the CUDA cores (cuBLAS SGEMM); the MFU denominator says so.
    m = map_model(_gemm_graph(1024, 1024, 1024), a100, MapOptions(dtype="fp32"))
    k = m.kernels[0].kernel
    assert k.engine == "vector"
    assert "fp32" in k.engine_reason
    assert m.peak_flops == a100.vector_flops("fp32")
    assert "vector unit fp32" in m.mfu_peak_name


def test_fp8_on_an_engine_without_fp8_runs_unpacked_to_16_bit_with_reason(a100):
    # Ampere has no FP8 MMA: FP8 operands are dequantized to bf16 and run on the tensor cores.
    m = map_model(_gemm_graph(1024, 1024, 1024), a100, MapOptions(dtype="fp8_e4m3"))
    k = m.kernels[0].kernel
    assert (k.engine, k.compute_dtype) == ("matrix", "bf16")
    assert "fp8_e4m3" in k.engine_reason
    assert m.peak_flops == a100.peak_flops("bf16")


def test_mapping_twice_hits_the_schedule_cache(h100):
    from workbench.mapper import _CACHE

    g = build_graph("llama2-7b", seq=300)
    map_model(g, h100)
    size = len(_CACHE)
    map_model(g, h100)
    assert len(_CACHE) == size
    distinct = {k.kernel.signature() for k in map_model(g, h100).kernels}
    assert len(distinct) < 20  # 32 identical blocks share their schedules


def test_wave_efficiency_is_tiles_over_waves_times_cores(h100):
    m = map_model(_gemm_graph(3000, 5000, 1000), h100)
    t = m.kernels[0].tiling
    assert t.waves == math.ceil(t.tiles / h100.matrix_engine.cores)
    assert t.wave_efficiency == pytest.approx(t.tiles / (t.waves * h100.matrix_engine.cores))
