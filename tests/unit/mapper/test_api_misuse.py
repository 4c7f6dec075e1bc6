"""Python API misuse is one exception type naming the argument (issue 30)."""

from __future__ import annotations

import pytest

from workbench import MapOptions, OptionsError, TileOverride, WorkbenchError, map_model
from workbench.hw import load_hardware
from workbench.models import build_graph


@pytest.fixture(scope="module")
def graph_hw():
    return build_graph("mlp"), load_hardware("teaching")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"m": 0}, "TileOverride.m: 0 is outside"),
        ({"n": 10**30}, "TileOverride.n: about 10**30 is outside"),
        ({"k": -64}, "TileOverride.k: -64 is outside"),
        ({"m": 64.0}, "TileOverride.m: expected an integer"),
        ({"m": True}, "TileOverride.m: expected an integer"),
        ({"split_k": 0}, "TileOverride.split_k"),
        ({"stages": 10**6}, "TileOverride.stages"),
        ({"pattern": ""}, "TileOverride.pattern"),
        ({"pattern": 7}, "TileOverride.pattern"),
    ],
)
def test_a_bad_tile_override_names_its_field(fields, named):
    with pytest.raises(OptionsError, match=named.replace("*", r"\*")):
        TileOverride(**{"pattern": "*", "m": 64, "n": 64, "k": 64, **fields})


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"chips": 0}, "MapOptions.chips"),
        ({"chips": True}, "MapOptions.chips"),
        ({"chips": 2.0}, "MapOptions.chips"),
        ({"disabled_fusion": "gemm_epilogue"}, "MapOptions.disabled_fusion"),
        ({"tiles": [("*", 1, 1, 1)]}, "MapOptions.tiles"),
        ({"tiles": "*=1x1x1"}, "MapOptions.tiles"),
        ({"dtype": 16}, "MapOptions.dtype"),
        ({"dtype_overrides": [("*",)]}, "MapOptions.dtype_overrides"),
        ({"step_overhead_s": float("nan")}, "MapOptions.step_overhead_s"),
        ({"launch_host_s": "1e-6"}, "MapOptions.launch_host_s"),
        ({"barrier_per_layer": "yes"}, "MapOptions.barrier_per_layer"),
        ({"layout": None}, "MapOptions.layout"),
    ],
)
def test_bad_map_options_name_their_field(fields, named):
    with pytest.raises(OptionsError, match=named):
        MapOptions(**fields)


def test_map_model_names_a_misused_argument(graph_hw):
    graph, hw = graph_hw
    for args, named in (
        (("mlp", hw), "graph must be a Graph"),
        ((graph, "teaching"), "hw must be a Hardware"),
        ((graph, hw, {"chips": 2}), "options must be a MapOptions"),
    ):
        with pytest.raises(OptionsError, match=named):
            map_model(*args)


def test_options_error_is_the_documented_bad_input_type(graph_hw):
    assert issubclass(OptionsError, WorkbenchError)
    graph, hw = graph_hw
    lists = MapOptions(dtype_overrides=[("*", "fp32")], disabled_fusion=["layout_fold"])
    assert lists.dtype_overrides == (("*", "fp32"),)
    assert lists.disabled_fusion == ("layout_fold",)
    assert map_model(graph, hw, lists).total.total_s > 0
