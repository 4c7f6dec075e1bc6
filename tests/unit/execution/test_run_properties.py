"""Property tests: random GEMM shapes and forced tilings run through ``execute`` equal float64."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.execution.run import execute, make_inputs
from workbench.hw import load_hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.options import MapOptions, TileOverride

HW = load_hardware("h100-sxm")
# Max abs error allowed relative to the output's scale (fp32 accumulation; bf16 rounding).
TOL = {"fp32": 1e-4, "bf16": 2e-2}

dims = st.integers(min_value=1, max_value=70)
tiles = st.integers(min_value=1, max_value=48)


def _mapped(m: int, k: int, n: int, batch: int, dtype: str, tile: tuple[int, int, int]):
    if batch == 1:
        op = O.Linear(
            name="fc", inputs=("x",), tokens=(m,), in_features=k, out_features=n, dtype=dtype
        )
    else:
        op = O.MatMul(name="fc", inputs=("a", "w"), batch=batch, m=m, n=n, k=k, dtype=dtype)
    graph = Graph(name="g", ops=(op,))
    forced = TileOverride(pattern="*", m=tile[0], n=tile[1], k=tile[2])
    (km,) = map_model(graph, HW, MapOptions(dtype=dtype, tiles=(forced,))).kernels
    return graph, km


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=dims,
    k=dims,
    n=dims,
    batch=st.sampled_from([1, 1, 3]),
    dtype=st.sampled_from(["fp32", "bf16"]),
    tile=st.tuples(tiles, tiles, tiles),
    split_k=st.sampled_from([1, 2, 3]),
    raster=st.sampled_from(["mn", "nm"]),
)
def test_forced_gemm_tilings_match_float64(m, k, n, batch, dtype, tile, split_k, raster):
    import dataclasses

    graph, km = _mapped(m, k, n, batch, dtype, tile)
    tiling = dataclasses.replace(km.tiling, split_k=split_k, raster=raster)
    assert (tiling.tile_m, tiling.tile_n, tiling.tile_k) == tile
    inputs = make_inputs(km.kernel, seed=m * 7 + n, backend="numpy", graph=graph)
    res = execute((km.kernel, tiling), inputs, graph=graph, backend="numpy")
    a = inputs["a"].astype(np.float64)
    b = inputs["b"].astype(np.float64)
    want = a @ b
    got = np.asarray(res.output, dtype=np.float64)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    assert float(np.abs(got - want).max()) <= TOL[dtype] * scale * max(1.0, np.sqrt(k) / 4)
