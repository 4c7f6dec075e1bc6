"""NCCL's cost model of collectives (workbench/cost/nccl.py) against published nccl-tests results.

busbw is nccl-tests' bus bandwidth: algbw x 2(n-1)/n for an all-reduce, algbw x (n-1)/n for an
all-to-all (nccl-tests doc/PERFORMANCE.md; for the all-to-all, S. Jeaugey in NVIDIA/nccl-tests
issue 130). Tolerance: 15% on bandwidth and on latency floors (the model keeps NCCL's tables,
not its per-channel caps).
"""

from __future__ import annotations

import pytest

from workbench.cost.collective import all_reduce_s, all_to_all_s
from workbench.cost.nccl import A2A_BASE_LAT_S, nccl_collective_s
from workbench.hw import load_hardware

TOL = 0.15


def _ar_busbw(nbytes: float, n: int, profile: str) -> float:
    t, _ = all_reduce_s(nbytes, n, load_hardware(profile))
    return 2 * (n - 1) / n * nbytes / t


def _a2a_busbw(nbytes: float, n: int, profile: str) -> float:
    return (n - 1) / n * nbytes / all_to_all_s(nbytes, n, load_hardware(profile))


@pytest.mark.parametrize(
    ("profile", "nbytes", "measured_gb_s"),
    [
        # 8x A100 (NVSwitch), all_reduce_perf -b 8 -e 4G -f 2 -g 8: 232.54 GB/s busbw at 4 GB
        # (NVIDIA/nccl-tests issue 175, scenario 2, 2023-10-29).
        ("a100-80gb", 4 * 2**30, 232.54),
        # 8x A100, all_reduce_perf at 8 GiB: 234.61 GB/s (S. Bekman, ml-engineering
        # network/README.md at 29c6b7087c66ce78a0333109e7bfa88b9871a26b, 'Real network
        # throughput').
        ("a100-80gb", 8 * 2**30, 234.61),
        # 8x H100 (NVSwitch, NVLS): ~480 GB/s busbw at large sizes (NVIDIA's maintainer in
        # NVIDIA/nccl-tests issue 212); 8x H200 at 16 GiB: 482.26 GB/s (ml-engineering, same).
        ("h100-sxm", 8 * 2**30, 480.0),
        ("h200", 16 * 2**30, 482.26),
    ],
)
def test_large_all_reduce_busbw_is_nccl_tests(profile, nbytes, measured_gb_s):
    busbw = _ar_busbw(nbytes, 8, profile) / 1e9
    print(f"{profile} 8x all-reduce {nbytes / 2**30:g} GiB: model {busbw:.1f} GB/s, "
          f"nccl-tests {measured_gb_s} GB/s")  # fmt: skip
    assert busbw == pytest.approx(measured_gb_s, rel=TOL)


def test_large_all_to_all_busbw_is_nccl_tests():
    # 4x H100 80GB HBM3 on one NVSwitch node, alltoall_perf -b 500M -e 524M: 334.90 GB/s busbw
    # at 524288000 B out of place (NVIDIA/nccl issue 2169, turn 2).
    busbw = _a2a_busbw(524288000, 4, "h100-sxm") / 1e9
    print(f"h100-sxm 4x all-to-all 500 MiB: model {busbw:.1f} GB/s, nccl-tests 334.90 GB/s")
    assert busbw == pytest.approx(334.90, rel=TOL)


def test_small_all_to_all_pays_nccls_p2p_latency():
    # An H20 node (Hopper, NVLink 4 via NVSwitch, as the H100 profile's fabric), alltoall_perf:
    # 10.59 us at 128 B out of place (deepseek-ai/DeepEP issue 303).
    t = all_to_all_s(128, 8, load_hardware("h100-sxm"))
    print(f"h100-sxm 8x all-to-all 128 B: model {t * 1e6:.1f} us, nccl-tests (H20) 10.59 us")
    assert t == pytest.approx(10.59e-6, rel=TOL)


@pytest.mark.parametrize("profile", ["a100-80gb", "h100-sxm"])
def test_a_2_6_mb_all_to_all_over_16_ranks_is_above_nccls_latency_floor(profile):
    # Issue 26: it was expected in a few us, below any NCCL call. NCCL's least latency of any
    # call is ring/LL's 6.6 us base + a step (tuning.cc baseLat/hwLat); the P2P floor is higher.
    hw = load_hardware(profile)
    t = all_to_all_s(2.6e6, 16, hw)
    floor = nccl_collective_s("all_reduce", 0.0, 2, 1e12, hw.interconnect.nccl_generation or "",
                              False).time_s  # fmt: skip
    print(f"{profile} 16x all-to-all 2.6 MB: {t * 1e6:.1f} us (NCCL's least call {floor * 1e6} us)")
    assert t > A2A_BASE_LAT_S > floor
    # 16 ranks span two 8-GPU nodes: half of each rank's bytes cross its NIC share.
    so = hw.interconnect.scale_out
    assert so is not None
    assert t > 0.5 * 2.6e6 / (so.bandwidth_bytes_per_s * so.sustained_fraction)


def test_small_all_reduce_latency_is_tens_of_microseconds():
    # NCCL's own floor on one node: ring/LL, 6.6 us + 14 steps x 0.6 us = 15 us (tuning.cc, as in
    # workbench/cost/nccl.py). The published 8x H200 32 KiB row (39.8 us) is timed through
    # torch.distributed, whose per-call host time the stack adds (the corpus row, -2.0%).
    # Across two nodes NCCL's network steps (hwLat[NET]) raise it.
    one = all_reduce_s(32768, 8, load_hardware("h200"))[0]
    two = all_reduce_s(32768, 16, load_hardware("h100-sxm"))[0]
    print(
        f"32 KiB all-reduce: 8 ranks {one * 1e6:.1f} us, 16 ranks on two nodes {two * 1e6:.1f} us"
    )
    assert 10e-6 < one < two < 100e-6
