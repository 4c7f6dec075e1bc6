"""The power roof: a board cannot dissipate more than its TDP, so busy kernels run capped.

``execution >= engine FLOPs x energy_pj_per_flop / (tdp_w - idle_w)`` (cost/model.py). Where the
energy figure is derived from the peak the roof is the peak and never binds; on a power-capped
board (L4, T4) it is derived from a measured sustained rate, and busy kernels meet it while a
latency-bound kernel keeps its boost clock.
"""

import pytest

from workbench.cost.issue import tile_issue
from workbench.cost.model import power_floor_s
from workbench.hw import load_hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.options import MapOptions

OPTS = MapOptions(launch="graph")


def _gemm(m: int, k: int, n: int, dtype: str = "fp16") -> Graph:
    op = O.Linear(name="fc", inputs=("x",), tokens=(m,), in_features=k, out_features=n, dtype=dtype)
    return Graph(name="g", ops=(op,))


def _uncapped(hw):
    """``hw`` with every energy figure at ``(tdp - idle) / peak``: a roof that is the peak."""
    budget = hw.power.tdp_w - hw.power.idle_w
    pj = {}
    for fmt in hw.power.energy_pj_per_flop:
        peak = hw.matrix_engine.peak_flops_per_s.get(fmt) or hw.vector_flops(fmt)
        pj[fmt] = budget / peak * 1e12
    data = hw.model_dump()
    data["power"]["energy_pj_per_flop"] = pj
    return type(hw).model_validate(data)


def _sustained(hw, fmt: str) -> float:
    """The rate the profile's energy figure allows under its power budget, FLOP/s."""
    return (hw.power.tdp_w - hw.power.idle_w) / (hw.power.energy_pj_per_flop[fmt] * 1e-12)


@pytest.mark.parametrize(("name", "fmt", "side"), [("l4", "fp16", 10240), ("l4", "bf16", 10240),
                                                   ("t4", "fp16", 4096)])  # fmt: skip
def test_a_sustained_gemm_runs_at_the_rate_its_energy_figure_was_derived_from(name, fmt, side):
    # NOTE: l4.yaml and t4.yaml derive the figure from a measured sustained GEMM of this size.
    hw = load_hardware(name)
    m = map_model(_gemm(side, side, side, fmt), hw, OPTS)
    kernel = m.kernels[0]
    rate = 2.0 * side**3 / kernel.cost.exec_s
    assert rate == pytest.approx(_sustained(hw, fmt), rel=0.01)
    assert kernel.cost.bottleneck == "compute"
    assert "power cap" in kernel.cost.evidence
    # the roof, not the engine model, sets it: at the boost clock the same GEMM is faster
    free = map_model(_gemm(side, side, side, fmt), _uncapped(hw), OPTS).kernels[0]
    assert free.cost.exec_s < 0.8 * kernel.cost.exec_s
    assert free.tiling.shape == kernel.tiling.shape  # ranked at the boost clock


def test_a_latency_bound_kernel_keeps_its_boost_clock():
    hw = load_hardware("l4")
    capped = map_model(_gemm(128, 768, 768), hw, OPTS).kernels[0].cost
    free = map_model(_gemm(128, 768, 768), _uncapped(hw), OPTS).kernels[0].cost
    assert capped.total_s == free.total_s
    assert capped.compute_s == free.compute_s
    assert "power cap" not in capped.evidence


@pytest.mark.parametrize("name", ["a100-80gb", "h100-sxm", "mi300x"])
@pytest.mark.parametrize("shape", [(8192, 8192, 8192), (128, 4096, 4096), (1, 4096, 4096)])
def test_a_figure_derived_from_the_peak_never_binds(name, shape):
    hw = load_hardware(name)
    kernel = map_model(_gemm(*shape, dtype="bf16"), hw, OPTS).kernels[0]
    roof = power_floor_s(hw, "bf16", kernel.tiling.padded_flops)
    assert roof <= kernel.cost.compute_s
    assert "power cap" not in kernel.cost.evidence
    assert roof == pytest.approx(kernel.tiling.padded_flops / hw.peak_flops("bf16"), rel=0.01)


def test_power_floor_is_energy_over_the_budget_above_idle():
    hw = load_hardware("l4")
    pj = hw.power.energy_pj_per_flop["fp16"]
    budget = hw.power.tdp_w - hw.power.idle_w
    assert power_floor_s(hw, "fp16", 1e12) == pytest.approx(1e12 * pj * 1e-12 / budget)
    # a format without its own figure takes the fp32 one, as the energy model does
    assert power_floor_s(hw, "fp4", 1e12) == power_floor_s(hw, "fp32", 1e12)
    data = hw.model_dump()
    data["power"]["idle_w"] = data["power"]["tdp_w"]
    assert power_floor_s(type(hw).model_validate(data), "fp16", 1e12) == 0.0


def test_a_calibrated_host_has_no_power_roof():
    # NOTE: its rates were measured on the host under its own limits; the roof would count it twice.
    hw = load_hardware("teaching")
    data = hw.model_dump()
    data["overheads"]["tile_issue_s"] = 2e-6
    data["scheduling"] = "software_issued"
    data["power"]["energy_pj_per_flop"] = dict.fromkeys(data["power"]["energy_pj_per_flop"], 1e6)
    host = type(hw).model_validate(data)
    kernel = map_model(_gemm(64, 64, 64, "fp32"), host, MapOptions(dtype="fp32")).kernels[0]
    assert tile_issue(host).power_floor_s(kernel.kernel, host, 1e12) == 0.0
    assert tile_issue(hw).power_floor_s(kernel.kernel, hw, 1e12) > 0.0
