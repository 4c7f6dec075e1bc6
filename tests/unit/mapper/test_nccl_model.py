"""NCCL's own collective model (workbench/cost/nccl.py): the pair it picks and its time.

Constants: NVIDIA/nccl src/graph/tuning.cc at b6475625 (2.20.3): baseLat, hwLat[NVLINK], llMaxBw.
"""

import pytest

from workbench.cost.collective import all_gather_s, all_reduce_s
from workbench.cost.nccl import nccl_collective_s
from workbench.hw import load_hardware

A100_BUS = 12 * 25.0e9 * 0.84  # hardware/a100-80gb.yaml: links x link rate x sustained fraction


def test_small_messages_take_ll_and_large_ones_simple():
    sizes = (32768, 2**24, 2**30)
    names = [nccl_collective_s("all_reduce", s, 8, A100_BUS, "ampere", False).name for s in sizes]
    assert names == ["NCCL ring/LL", "NCCL ring/LL128", "NCCL ring/Simple"]


def test_the_ring_ll_time_by_hand():
    # 6.6 us + 14 steps x 0.6 us; LL reaches a quarter of the bus bandwidth (under the 87.7 GB/s
    # cap here), and a ring's algorithm bandwidth is busbw x N / (2 (N-1))
    c = nccl_collective_s("all_reduce", 32768, 8, A100_BUS, "ampere", False)
    algbw = A100_BUS / 4 * 8 / 14
    assert c.latency_s == pytest.approx(15.0e-6)
    assert c.time_s == pytest.approx(15.0e-6 + 32768 / algbw)


def test_the_ll_cap_binds_on_a_fast_fabric():
    bus = 18 * 25.0e9 * 0.84  # h100-sxm: bus / 4 = 94.5 GB/s > 87.7 GB/s
    c = nccl_collective_s("all_reduce", 32768, 2, bus, "hopper", False)
    assert c.time_s == pytest.approx((6.6 + 2 * 0.6) * 1e-6 + 32768 / 87.7e9)


def test_nvls_wins_large_all_reduces_only_where_the_switch_reduces():
    bus = 18 * 25.0e9 * 0.84
    assert nccl_collective_s("all_reduce", 2**30, 8, bus, "hopper", True).algorithm == "NVLS"
    assert nccl_collective_s("all_reduce", 2**30, 8, bus, "hopper", False).algorithm == "ring"
    assert nccl_collective_s("all_reduce", 8192, 8, bus, "hopper", True).algorithm == "ring"
    # all-gather: ring only (no tree, no in-switch reduction to gain from)
    assert nccl_collective_s("all_gather", 2**30, 8, bus, "hopper", True).algorithm == "ring"


@pytest.mark.parametrize("op", ["all_reduce", "all_gather"])
def test_time_grows_with_bytes_and_never_beats_the_bus(op):
    prev = 0.0
    for size in (1, 2**10, 2**16, 2**20, 2**24, 2**28, 2**32):
        t = nccl_collective_s(op, size, 8, A100_BUS, "ampere", False).time_s
        assert t > prev
        prev = t
        sent = (2 if op == "all_reduce" else 1) * 7 / 8 * size  # bytes a ring moves per chip
        assert t >= sent / A100_BUS


def test_profiles_without_nccl_keep_their_fabric_model():
    mi300x, h100 = load_hardware("mi300x"), load_hardware("h100-sxm")
    assert mi300x.interconnect.nccl_generation is None
    assert "direct to 7 peers" in all_reduce_s(64e6, 8, mi300x)[1]
    assert all_reduce_s(64e6, 8, h100)[1].startswith("NCCL ")
    assert all_gather_s(64e6, 8, h100) == pytest.approx(
        nccl_collective_s("all_gather", 64e6, 8, 18 * 25.0e9 * 0.84, "hopper", True).time_s
    )


def test_nvls_bus_bandwidth_grows_with_the_chips_and_meets_the_ring_at_four():
    # NVLS moves (N+1)/N x the buffer per chip each way at NCCL's 5/6 of the bus rate, so its
    # busbw over the ring's is 2 (N-1)/(N+1) x 5/6: 1.0 at 4 chips, 1.30 at 8 (ml-engineering's
    # 8x H200 sweep measured 1.00x at 4 GPUs, where NCCL runs the ring, and 1.29x at 8)
    bus, size = 18 * 25.0e9 * 0.84, 2**33
    ratios = []
    for n in range(4, 9):
        nvls = nccl_collective_s("all_reduce", size, n, bus, "hopper", True)
        ring = nccl_collective_s("all_reduce", size, n, bus, "hopper", False)
        assert ring.algorithm == "ring"
        ratios.append(ring.time_s / nvls.time_s)
        algbw = bus * 5 / 6 * n / (n + 1)
        assert nvls.time_s == pytest.approx(nvls.latency_s + size / algbw) or n == 4
    assert ratios == sorted(ratios)
    assert ratios[0] == pytest.approx(1.0, abs=0.01)
    assert ratios[-1] == pytest.approx(14 / 9 * 5 / 6, rel=0.01)
