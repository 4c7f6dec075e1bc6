"""Launch and sync overheads: the stack's host time per eager launch, and what a drain exposes.

An eager launch costs the host its framework's dispatch, not only the driver's submission (a
PyTorch eager op ~20 us against ~4 us: reference dossier A6); a device-wide sync after a kernel
(the per-layer debugging barrier) drains the device and exposes the next launch.
"""

import pytest

from workbench.cost.model import host_launch_s, launch_and_sync
from workbench.hw import load_hardware
from workbench.hw.stack import load_stack
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions

H100 = load_hardware("h100-sxm")
OH = H100.overheads


def test_an_eager_launch_pays_the_host_time_it_is_given():
    short = 2e-6
    assert launch_and_sync(short, H100, launch="eager")[0] == pytest.approx(
        OH.kernel_launch_s - short
    )
    launch, _ = launch_and_sync(short, H100, launch="eager", host_s=20e-6)
    assert launch == pytest.approx(20e-6 - short)
    # a kernel longer than the host time hides it behind its execution (pipelined launches)
    long_launch, _ = launch_and_sync(50e-6, H100, launch="eager", host_s=20e-6)
    assert long_launch == pytest.approx(OH.graph_launch_s)
    # graph replay never pays it
    graph, _ = launch_and_sync(short, H100, launch="graph", host_s=20e-6)
    assert graph == pytest.approx(OH.graph_launch_s)


def test_no_stack_figure_means_the_drivers_submission():
    assert host_launch_s(H100) == OH.kernel_launch_s
    assert host_launch_s(H100, 7e-6) == 7e-6


def test_the_pytorch_stacks_pay_the_frameworks_dispatch_and_a_cpp_runtime_the_driver():
    eager, compiled = load_stack("pytorch-eager"), load_stack("pytorch-compile")
    for stack in (eager, compiled):
        fig = stack.eager_launch_s
        assert fig is not None
        assert fig.source
        assert "[S]" in fig.source
        assert stack.map_options().launch_host_s == fig.value > OH.kernel_launch_s
    assert eager.map_options().launch == "eager"
    assert eager.eager_launch_s.value > compiled.eager_launch_s.value  # Python dispatch per op
    trt = load_stack("tensorrt-llm-0.6")
    assert trt.eager_launch_s is None
    assert trt.map_options().launch_host_s is None  # the profile's kernel_launch_s


def test_options_refuse_a_host_time_that_is_no_time():
    from workbench.errors import WorkbenchError

    for bad in (-1e-6, float("nan"), float("inf"), 2.0):
        with pytest.raises(WorkbenchError, match="launch_host_s"):
            MapOptions(launch_host_s=bad)


@pytest.fixture(scope="module")
def decode():
    return build_graph("llama2-7b", "decode", 1, 512)


def test_eager_decode_pays_the_frameworks_dispatch_on_every_short_kernel(decode):
    graph = map_model(decode, H100, MapOptions(search="heuristic"))
    driver = map_model(decode, H100, MapOptions(search="heuristic", launch="eager"))
    framework = map_model(
        decode, H100, load_stack("pytorch-eager").map_options(MapOptions(search="heuristic"))
    )
    # the driver's 4 us hides behind most decode kernels; a PyTorch op's ~20 us does not
    assert driver.time_s / graph.time_s - 1 < 0.05
    assert framework.time_s / graph.time_s - 1 > 0.15
    assert framework.time_s - graph.time_s > 10 * (driver.time_s - graph.time_s)
    floor = framework.options.launch_host_s
    assert all(k.cost.exec_s + k.cost.launch_s >= floor - 1e-12 for k in framework.kernels)


def test_a_drain_in_graph_mode_exposes_the_next_segments_launch():
    _, sync = launch_and_sync(10e-6, H100, launch="graph", drains=1)
    assert sync == pytest.approx(OH.barrier_s + OH.kernel_launch_s - OH.graph_launch_s)
    # a grid barrier inside a kernel (split rows, split-K) is the sync alone
    _, grid = launch_and_sync(10e-6, H100, launch="graph", grid_barriers=1)
    assert grid == pytest.approx(OH.barrier_s)


def test_a_drain_in_eager_mode_loses_the_launchs_overlap_with_the_kernel():
    host = 20e-6
    _, long_sync = launch_and_sync(50e-6, H100, launch="eager", host_s=host, drains=1)
    assert long_sync == pytest.approx(OH.barrier_s + host - OH.graph_launch_s)
    # a kernel shorter than the launch overlapped only its own execution with it
    _, short_sync = launch_and_sync(3e-6, H100, launch="eager", host_s=host, drains=1)
    assert short_sync == pytest.approx(OH.barrier_s + 3e-6)


def test_a_barrier_per_layer_costs_each_layer_its_sync_and_an_exposed_launch():
    graph = build_graph("gpt2", seq=64)
    plain = map_model(graph, H100, MapOptions(search="heuristic"))
    synced = map_model(graph, H100, MapOptions(search="heuristic", barrier_per_layer=True))
    drains = sum(k.kernel.barriers for k in synced.kernels)
    assert drains >= 12
    per = OH.barrier_s + OH.kernel_launch_s - OH.graph_launch_s
    assert synced.time_s - plain.time_s == pytest.approx(drains * per, rel=1e-9)


def test_map_states_the_host_time_of_an_eager_launch(capsys):
    from workbench.cli import main

    argv = ["map", "--model", "gpt2", "--seq", "64"]
    assert main([*argv, "--stack", "pytorch-eager"]) == 0
    stack = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("stack"))
    assert stack.endswith("eager launches, 20 us of host time each (the stack's)")
    assert main([*argv, "--stack", "tensorrt", "--launch", "eager"]) == 0
    stack = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("stack"))
    assert "4 us of host time each (the profile's driver submission)" in stack
    assert main(argv) == 0
    stack = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("stack"))
    assert "eager" not in stack  # graph replay: no host launch per kernel


def test_a_sync_bound_kernel_names_the_drain_not_a_grid_barrier():
    graph = build_graph("gpt2", "decode", 1, 64)
    synced = map_model(graph, H100, MapOptions(barrier_per_layer=True))
    sync = [k for k in synced.kernels if k.cost.bottleneck == "sync"]
    assert sync
    assert all("device-wide sync(s) after it" in k.cost.evidence for k in sync)
    assert not any("grid barrier" in k.cost.evidence for k in sync)


def _fp8_gemm(n: int):
    """An n^3 FP8 GEMM whose C is written in fp16 (as the Azure hipblaslt-bench rows run it)."""
    from workbench.ir import Graph, Linear
    from workbench.ir.ops_vector import Quantize

    op = Linear(
        name="gemm", inputs=("x",), tokens=(n,), in_features=n, out_features=n, dtype="fp8_e4m3"
    )
    c = Quantize(name="c", inputs=("gemm",), shape=(n, n), to="fp16", dtype="fp8_e4m3")
    return Graph(name="gemm", ops=(op, c))


def test_a_hipblaslt_bench_call_takes_at_least_the_librarys_host_time():
    # hipblaslt-bench issues each call from the host, no graph (testing_matmul.hpp, ROCm 6.2):
    # a 1024^3 FP8 GEMM, ~3 us on MI300X, is timed at hipblasLtMatmul's host time (9.1 us,
    # hipBLASLt PR 1754); the Azure table's 53.13 TFLOP/s (40.4 us a call) is slower still.
    mi300x = load_hardware("mi300x")
    options = load_stack("hipblaslt").map_options()
    assert options.launch == "eager"
    assert options.launch_host_s == pytest.approx(9.1e-6)
    small = map_model(_fp8_gemm(1024), mi300x, options)
    assert small.kernels[0].cost.exec_s < options.launch_host_s
    assert small.time_s == pytest.approx(options.launch_host_s)
    assert small.kernels[0].cost.bottleneck == "overhead"
    assert 2 * 1024**3 / small.time_s > 53.13e12
    # a GEMM longer than the host time hides it: 4096^3 pays only the in-stream gap, as a graph
    big = map_model(_fp8_gemm(4096), mi300x, options)
    graphed = map_model(_fp8_gemm(4096), mi300x, MapOptions(launch="graph"))
    assert big.time_s == pytest.approx(graphed.time_s)
    assert big.kernels[0].cost.bottleneck == "compute"
