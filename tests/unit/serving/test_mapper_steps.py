import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.serving import (
    ServingError,
    Workload,
    mapper_batch_time,
    mapper_step_time,
    simulate,
    step_seconds,
)


@pytest.fixture(scope="module")
def hw():
    return load_hardware("h100-sxm")


@pytest.fixture(scope="module")
def table(hw):
    return mapper_step_time("gpt2", hw, batches=(1, 4), prompt_tokens=(64, 256), contexts=(64, 512))


def test_grid_points_equal_the_mapper(hw, table):
    graph = build_graph("gpt2", "prefill", batch=4, seq=256)
    assert table.prefill_time(4, 256) == pytest.approx(map_model(graph, hw).time_s)
    dec = build_graph("gpt2", "decode", batch=1, seq=512, context=512)
    assert table.decode_time(1, 512) == pytest.approx(map_model(dec, hw).time_s)


def test_step_time_grows_with_context_and_batch(table):
    assert table.decode_time(4, 512) > table.decode_time(4, 64)
    assert table.prefill_time(4, 256) > table.prefill_time(1, 256)


def test_cache_returns_the_same_value(hw):
    a = step_seconds("gpt2", hw, MapOptions(), phase="decode", batch=2, tokens=100)
    b = step_seconds("gpt2", hw, MapOptions(), phase="decode", batch=2, tokens=100)
    assert a == b > 0


def test_decode_context_is_clamped_to_positions(hw):
    t = step_seconds("gpt2", hw, MapOptions(), phase="decode", batch=1, tokens=5000)
    assert t == step_seconds("gpt2", hw, MapOptions(), phase="decode", batch=1, tokens=1023)


def test_low_load_latency_equals_unloaded_step_sum(table):
    # three requests far apart: each runs alone, e2e = prefill + (out - 1) decode steps
    w = Workload(arrival_s=[0.0, 100.0, 200.0], prompt_tokens=[64, 64, 64], output_tokens=[5, 5, 5])
    r = simulate(w, table)
    expected = table.prefill_time(1, 64) + sum(table.decode_time(1, 64 + i) for i in range(1, 5))
    assert r.e2e.p50_s == pytest.approx(expected, rel=0.02)


def test_batch_time_table(hw):
    bt = mapper_batch_time("resnet50", hw, batches=(1, 8))
    assert bt(8) == pytest.approx(map_model(build_graph("resnet50", batch=8), hw).time_s)
    assert bt(1) < bt(4) < bt(8) < bt(16)


def test_batch_time_rejects_bad_batches(hw):
    with pytest.raises(ServingError, match="increasing"):
        mapper_batch_time("resnet50", hw, batches=(8, 1))


def test_grid_points_share_one_graph_across_options_and_keep_their_times():
    # The steps of an optimisation trajectory map the same grid point with different options:
    # the graph is built once, and each time equals a direct map_model of a fresh graph.
    from workbench.hw import load_hardware
    from workbench.mapper import map_model
    from workbench.models import build_graph
    from workbench.options import MapOptions
    from workbench.serving import mapper_steps

    hw = load_hardware("h100-sxm")
    mapper_steps.clear_step_cache()
    eager = MapOptions(launch="eager")
    for opts in (MapOptions(), eager):
        got = mapper_steps.step_seconds("gpt2", hw, opts, phase="decode", batch=2, tokens=64)
        fresh = build_graph("gpt2", "decode", batch=2, seq=64, context=64)
        assert got == map_model(fresh, hw, opts).time_s
    assert mapper_steps._graph.cache_info().misses == 1
    mapper_steps.clear_step_cache()
    assert mapper_steps._graph.cache_info().currsize == 0
