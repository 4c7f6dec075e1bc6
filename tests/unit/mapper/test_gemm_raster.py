"""The library's grouped (swizzled) raster: large GEMMs read operands a bounded number of times."""

import pytest

from workbench import load_hardware, map_model
from workbench.ir import Graph, Linear
from workbench.scheduling.gemm import MAX_RASTER_GROUP


def _gemm(hw: str, s: int):
    op = Linear(name="g", inputs=("x",), tokens=(s,), in_features=s, out_features=s, dtype="bf16")
    return map_model(Graph(name="g", ops=(op,)), load_hardware(hw)).kernels[0]


@pytest.mark.parametrize("hw", ["l4", "a100-80gb", "h100-sxm"])
def test_large_gemm_rate_does_not_fall_with_size(hw):
    # A bigger square GEMM reuses each operand tile more: its rate never drops. Before the
    # grouped raster, L4's 8192^3 re-read B once per band of rows (4.6 GB of GDDR6 traffic,
    # 11x compulsory) and ran at 61 TFLOP/s against 93 at 4096^3.
    rates = [2 * s**3 / _gemm(hw, s).cost.total_s for s in (4096, 8192, 16384)]
    assert rates == sorted(rates)


def test_offchip_reads_bounded_by_the_group():
    k = _gemm("l4", 8192)
    off = dict(k.cost.traffic)["gddr6"]
    mat = 8192 * 8192 * 2
    grid_m = 8192 // k.tiling.tile_m
    # A once, B once per group of rows, C once (a grouped raster on 8 rows of tiles at most)
    assert off <= mat * (1 + -(-grid_m // MAX_RASTER_GROUP) + 1) * 1.001
    assert k.cost.bottleneck == "compute"


def test_software_scheduled_host_keeps_its_plain_raster():
    # The NumPy executor visits tiles row by row ("mn"): a software-scheduled profile keeps the
    # band model, so the same tile reads more off-chip there than under a library's raster.
    from workbench.lowering import lower
    from workbench.options import MapOptions, TileOverride
    from workbench.scheduling.gemm import gemm_mapspace

    gpu = load_hardware("l4")
    host = gpu.model_copy(
        update={
            "overheads": gpu.overheads.model_copy(update={"tile_issue_s": 1e-6}),
            "scheduling": "software_issued",
        }
    )
    op = Linear(name="g", inputs=("x",), tokens=(8192,), in_features=8192, out_features=8192)
    kernel = lower(Graph(name="g", ops=(op,)), gpu, MapOptions())[0]
    tile = TileOverride(pattern="*", m=128, n=128, k=64, split_k=1, stages=2)
    off = {}
    for name, hw in (("gpu", gpu), ("host", host)):
        ms = gemm_mapspace(kernel, hw, override=tile)
        off[name] = float(ms.traffic["gddr6"].min())
    assert off["gpu"] < off["host"]
