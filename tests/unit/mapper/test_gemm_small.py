"""Small and under-occupied GEMMs on GPUs (issue 10): library tiles, per-core limits, split-K."""

import pytest

from workbench.cost.score_gemm import core_bandwidth as _core_bandwidth
from workbench.cost.score_gemm import split_fixup_s as _split_fixup_s
from workbench.hw import load_hardware
from workbench.ir import Graph, Linear
from workbench.lowering.kernel import GemmProblem
from workbench.mapper import map_model
from workbench.options import MapOptions, TileOverride
from workbench.scheduling.gemm import _axes, gemm_mapspace


def _engine(hw, **update):
    return hw.model_copy(update={"matrix_engine": hw.matrix_engine.model_copy(update=update)})


def _gemm(hw, m, n, k, dtype="bf16"):
    op = Linear(name="g", inputs=("x",), tokens=(m,), in_features=k, out_features=n, dtype=dtype)
    return map_model(Graph(name="g", ops=(op,)), hw).kernels[0]


@pytest.mark.parametrize("name", ["a100-80gb", "h100-sxm", "h200", "l4"])
def test_gpu_tiles_are_the_librarys_tile_sides(name):
    # CUTLASS/cuBLAS ship 64/128/256 CTA tiles; a 192- or 96-wide tile is never searched.
    hw = load_hardware(name)
    p = GemmProblem(batch=1, m=1024, n=2145, k=1024, a_bytes=2, b_bytes=2, c_bytes=2)
    tm, tn, *_ = _axes(p, hw, None, "full")
    assert set(tm.tolist()) | set(tn.tolist()) <= {64, 128, 256}
    k = _gemm(hw, 1024, 2145, 1024)
    assert {k.tiling.tile_m, k.tiling.tile_n} <= {64, 128, 256}


def test_without_a_tile_menu_any_native_multiple_is_searched():
    hw = _engine(load_hardware("h100-sxm"), library_tile_sides=())
    p = GemmProblem(batch=1, m=1024, n=2145, k=1024, a_bytes=2, b_bytes=2, c_bytes=2)
    _, tn, *_ = _axes(p, hw, None, "full")
    assert 192 in tn.tolist()


def test_library_tiles_make_wave_quantization_cost_what_it_does():
    # 1024 x 1024 x 1024 on an A100: a 96 x 128 tile (88 tiles on 108 SMs) is not a library
    # kernel; with the library's tiles the GEMM is slower than the free search made it.
    hw = load_hardware("a100-80gb")
    free = _gemm(_engine(hw, library_tile_sides=()), 1024, 1024, 1024)
    lib = _gemm(hw, 1024, 1024, 1024)
    assert lib.cost.exec_s > free.cost.exec_s


def test_a_skinny_gemm_keeps_the_instruction_granularity():
    # Decode (M = 4): the library's GEMV/skinny kernels, rows padded to 8, not to 64.
    k = _gemm(load_hardware("h100-sxm"), 4, 4096, 4096)
    assert k.tiling.tile_m == 8


def test_few_active_cores_cannot_draw_the_whole_levels_bandwidth():
    hw = load_hardware("h100-sxm")
    me = hw.matrix_engine
    cap = me.core_load_bytes_per_clk * me.clock_hz
    l2 = 8.2e12
    # 132 busy SMs share the L2; 8 busy SMs each stop at their own port, not at L2 / 8.
    assert _core_bandwidth(hw, l2, 132) == pytest.approx(l2 / 132)
    assert _core_bandwidth(hw, l2, 8) == pytest.approx(cap)
    free = _engine(hw, core_load_bytes_per_clk=0.0)
    assert _core_bandwidth(free, l2, 8) == pytest.approx(l2 / 8)


def test_under_occupied_gemm_is_slower_with_a_per_core_port():
    # 128 x 1024 x 8192 on an H100: few output tiles, each streaming a long K.
    hw = load_hardware("h100-sxm")
    capped = _gemm(hw, 128, 1024, 8192).cost.exec_s
    free = _gemm(_engine(hw, core_load_bytes_per_clk=0.0), 128, 1024, 8192).cost.exec_s
    assert capped > free


def test_split_k_pays_its_reduction():
    # Serial split-K: one semaphore wait and (split - 1) fp32 partial tiles written and read.
    hw = load_hardware("a100-80gb")
    k = _gemm(hw, 1024, 1024, 1024)
    forced = TileOverride(pattern="*", m=128, n=128, k=64, split_k=4)
    ms = gemm_mapspace(k.kernel, hw, override=forced)
    bw = 1e11
    t = float(_split_fixup_s(k.kernel, hw, ms, 128, 128, bw).max())
    lat = hw.memory[hw.memory.index(hw.sram) + 1].latency_s
    assert t == pytest.approx(lat + 2 * 128 * 128 * 4 * 3 / bw)
    one = TileOverride(pattern="*", m=128, n=128, k=64, split_k=1)
    ms_one = gemm_mapspace(k.kernel, hw, override=one)
    assert float(_split_fixup_s(k.kernel, hw, ms_one, 128, 128, bw).max()) == 0


def test_split_k_is_not_free_in_the_search():
    hw = load_hardware("a100-80gb")
    k = _gemm(hw, 1024, 1024, 1024)
    split = TileOverride(pattern="*", m=128, n=128, k=64, split_k=4)
    g = Graph(
        name="g",
        ops=(
            Linear(
                name="g",
                inputs=("x",),
                tokens=(1024,),
                in_features=1024,
                out_features=1024,
                dtype="bf16",
            ),
        ),
    )
    t = map_model(g, hw, MapOptions(tiles=(split,))).kernels[0].cost.exec_s
    assert t > k.cost.exec_s
