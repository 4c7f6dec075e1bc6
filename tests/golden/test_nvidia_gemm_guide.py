"""Wave and tile quantization: NVIDIA's "Matrix Multiplication Background" user guide.

Source: NVIDIA Deep Learning Performance documentation, "Matrix Multiplication Background User's
Guide", sections "Tile Quantization" and "Wave Quantization" (A100: 108 SMs, 256x128 tiles,
M = 2304, K = 4096, N from 1408 to 2048). Figures copied in ../shared/reference/computed_refs.json
('wave_quant_A100', 'tile_quant_example').
"""

import math

import pytest

from workbench.hw import load_hardware
from workbench.ir import Graph, Linear
from workbench.mapper import map_model
from workbench.options import MapOptions, TileOverride

# (N, tiles, waves) from the guide's A100 example.
GUIDE = [
    (1408, 99, 0.917),
    (1536, 108, 1.0),
    (1664, 117, 1.083),
    (1792, 126, 1.167),
    (2048, 144, 1.333),
]


def _map(m, n, k, tile, hw):
    op = Linear(name="gemm", inputs=("x",), tokens=(m,), in_features=k, out_features=n)
    forced = TileOverride(pattern="gemm", m=tile[0], n=tile[1], k=64, split_k=1)
    return map_model(Graph(name="g", ops=(op,)), hw, MapOptions(tiles=(forced,)))


@pytest.fixture(scope="module")
def a100():
    return load_hardware("a100-80gb")


@pytest.mark.parametrize(("n", "tiles", "waves"), GUIDE)
def test_wave_quantization_matches_the_guide(a100, n, tiles, waves):
    t = _map(2304, n, 4096, (256, 128), a100).kernels[0].tiling
    assert a100.matrix_engine.cores == 108
    assert t.tiles == tiles
    assert t.tiles / a100.matrix_engine.cores == pytest.approx(waves, abs=5e-4)
    assert t.waves == math.ceil(waves)


def test_crossing_a_wave_boundary_costs_a_whole_wave(a100):
    # The guide: going from 108 tiles (1 wave) to 117 tiles (1.083 waves) nearly doubles time.
    t1536 = _map(2304, 1536, 4096, (256, 128), a100).time_s
    t1664 = _map(2304, 1664, 4096, (256, 128), a100).time_s
    assert t1664 / t1536 > 1.6


def test_tile_quantization_matches_the_guide(a100):
    # 256x256 output with 128x128 tiles: 4 tiles; 257x256: 6 tiles (two thirds padding in the
    # new row of tiles).
    assert _map(256, 256, 1024, (128, 128), a100).kernels[0].tiling.tiles == 4
    k257 = _map(257, 256, 1024, (128, 128), a100).kernels[0]
    assert k257.tiling.tiles == 6
    useful = 2 * 257 * 256 * 1024
    assert k257.tiling.padded_flops == 2 * 384 * 256 * 1024
    assert k257.kernel.flops == useful
