"""A bandwidth-bound kernel pays its first request's latency and its last stores' drain.

``exec = max(pipeline, level time + latency of the level + store drain)`` on chips
(cost/scored.py ``finish``); a calibrated host measured its rates over whole calls (no ramp).
"""

import pytest

from workbench.cost.issue import tile_issue
from workbench.hw import load_hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.options import MapOptions


def _gemv(k: int, n: int) -> Graph:
    op = O.Linear(
        name="fc", inputs=("x",), tokens=(1,), in_features=k, out_features=n, dtype="bf16"
    )
    return Graph(name="g", ops=(op,))


@pytest.mark.parametrize("name", ["a100-80gb", "h100-sxm"])
def test_a_streaming_kernel_adds_the_latency_and_the_drain_to_its_bytes(name):
    hw = load_hardware(name)
    kernel = map_model(_gemv(8192, 8192), hw, MapOptions(launch="graph")).kernels[0]
    cost = kernel.cost
    off = hw.offchip
    assert cost.bottleneck == f"bandwidth:{off.name}"
    ramp = off.latency_s + off.latency_s  # the level's latency + the stores' drain
    assert ramp == tile_issue(hw).streaming(kernel.kernel, hw).ramp_s[off.name] > 0
    assert cost.exec_s == pytest.approx(cost.time_at(off.name) + ramp)
    assert cost.exec_s >= cost.pipeline_s


def test_the_ramp_is_the_level_latency_plus_the_drain_on_chips_and_nothing_on_hosts():
    chip = load_hardware("teaching")
    kernel = map_model(_gemv(64, 64), chip, MapOptions()).kernels[0].kernel
    ramp = tile_issue(chip).streaming(kernel, chip).ramp_s
    for level in chip.memory:
        assert ramp[level.name] == level.latency_s + chip.offchip.latency_s
    data = chip.model_dump()
    data["overheads"]["tile_issue_s"] = 2e-6
    data["scheduling"] = "software_issued"
    host = type(chip).model_validate(data)
    assert all(v == 0.0 for v in tile_issue(host).streaming(kernel, host).ramp_s.values())
