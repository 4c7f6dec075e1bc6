"""All-to-all on each fabric: the bytes every link of a chip must carry (cost/collective.py)."""

from __future__ import annotations

import pytest

from workbench.cost.collective import all_gather_s, all_to_all_s, mesh_links_per_peer
from workbench.cost.nccl import A2A_BASE_LAT_S, A2A_NET_LAT_S
from workbench.hw import load_hardware
from workbench.ir import AllToAll, Graph
from workbench.mapper import map_model


def _b(hw):
    ic = hw.interconnect
    return ic.link_bandwidth_bytes_per_s * ic.sustained_fraction


def test_on_a_switch_each_chip_sends_all_but_its_own_slice_over_all_links():
    hw = load_hardware("a100-80gb")
    ic = hw.interconnect
    assert ic.topology == "switch"
    s = 1e9
    # NCCL's fabric: its P2P latency floor (issue 26) before the bytes.
    want = A2A_BASE_LAT_S + 7 / 8 * s / (ic.links * _b(hw))
    assert all_to_all_s(s, 8, hw) == pytest.approx(want)


def test_across_nodes_the_nic_share_carries_the_other_nodes_slices():
    # Issue 26: 16 ranks on two 8-GPU nodes; half of each rank's bytes leave its node.
    hw = load_hardware("h100-sxm")
    so = hw.interconnect.scale_out
    s = 2.6e6
    want = A2A_BASE_LAT_S + A2A_NET_LAT_S + 8 / 16 * s / (so.bandwidth_bytes_per_s * 0.9)
    assert so.sustained_fraction == 0.9
    assert all_to_all_s(s, 16, hw) == pytest.approx(want)


def test_on_a_ring_far_slices_cross_several_links():
    hw = load_hardware("v100-sxm2")
    ic = hw.interconnect
    assert ic.topology == "ring"
    s = 1e9
    # 8 chips: peers 1..7 steps away cross 1, 2, 3, 4, 3, 2, 1 links = 16 slice-hops.
    want = ic.collective_latency_s + s / 8 * 16 / (ic.links * _b(hw)) + 4 * ic.latency_s
    assert all_to_all_s(s, 8, hw) == pytest.approx(want)
    # Two chips: one slice, one hop.
    two = ic.collective_latency_s + s / 2 / (ic.links * _b(hw)) + ic.latency_s
    assert all_to_all_s(s, 2, hw) == pytest.approx(two)


def test_on_a_full_mesh_each_slice_has_its_own_links():
    hw = load_hardware("gaudi3")
    ic = hw.interconnect
    assert ic.topology == "full-mesh"
    s = 8e8
    want = ic.collective_latency_s + s / 8 / (mesh_links_per_peer(hw) * _b(hw)) + ic.latency_s
    assert all_to_all_s(s, 8, hw) == pytest.approx(want)


def test_one_chip_or_no_bytes_cost_nothing_and_no_links_cannot_run():
    hw = load_hardware("a100-80gb")
    assert all_to_all_s(1e9, 1, hw) == 0.0
    assert all_to_all_s(0.0, 8, hw) == 0.0
    linkless = hw.model_copy(
        update={"interconnect": hw.interconnect.model_copy(update={"links": 0})}
    )
    assert all_to_all_s(1e9, 8, linkless) == float("inf")


def test_a_mapped_all_to_all_is_an_interconnect_kernel_at_that_time():
    hw = load_hardware("v100-sxm2")
    op = AllToAll(name="a2a", inputs=("a2a.x",), dtype="fp32", shape=(2, 1024, 34820), chips=2)
    mapping = map_model(Graph(name="g", ops=(op,)), hw)
    (km,) = mapping.kernels
    assert km.kernel.kind == "collective"
    assert km.kernel.link_bytes == pytest.approx(op.output_tensor().nbytes / 2)
    assert km.cost.exec_s == pytest.approx(all_to_all_s(op.output_tensor().nbytes, 2, hw))
    assert km.cost.bottleneck == "interconnect"
    # An all-to-all of the same bytes is never slower than a ring all-gather of them on a switch.
    a100 = load_hardware("a100-80gb")
    assert all_to_all_s(1e9, 8, a100) <= all_gather_s(1e9, 8, a100) + 1e-12
