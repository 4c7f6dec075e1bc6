import math

import pytest

from workbench.cost.collective import all_reduce_s
from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.platform.fit import fit_check, kv_bytes_per_token, max_kv_tokens
from workbench.platform.multichip import (
    ParallelPlan,
    collective_share,
    map_parallel,
    ring_all_reduce_s,
)


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


def test_llama2_70b_bf16_does_not_fit_one_80gb_chip(h100):
    r = fit_check("llama2-70b", h100, batch=1, context=4096)
    assert h100.offchip.capacity_bytes == 81559 * 2**20  # nvidia-smi total
    assert not r.fits
    assert r.dominant == "weights"
    assert r.weights_bytes == pytest.approx(2 * 69e9, rel=0.01)  # ~69B params x 2 bytes


def test_summary_prints_capacities_in_binary_units(h100):
    # issue 12: capacities in KiB/MiB/GiB (81559 MiB of HBM is 79.6 GiB), never decimal GB
    line = fit_check("llama2-70b", h100, batch=1, context=4096).summary()
    assert "of 79.6 GiB usable per chip" in line
    assert "weights 128 GiB" in line  # 68.98e9 params x 2 bytes
    assert " GB" not in line


@pytest.mark.parametrize("tp", [2, 4])
def test_llama2_70b_fits_with_tensor_parallel(h100, tp):
    r = fit_check("llama2-70b", h100, batch=1, context=4096, tensor_parallel=tp)
    assert r.fits
    assert r.weights_bytes == pytest.approx(2 * 69e9 / tp, rel=0.02)


def test_kv_cache_term(h100):
    # Llama-2-7B: 2 (K, V) x 32 layers x 32 heads x 128 x 2 bytes = 524,288 B per token
    assert kv_bytes_per_token("llama2-7b") == 2 * 32 * 32 * 128 * 2
    r = fit_check("llama2-7b", h100, batch=64, context=4096)
    assert r.kv_bytes == 64 * 4096 * 524288
    assert r.dominant == "kv_cache"
    assert not r.fits
    assert kv_bytes_per_token("resnet50") == 0


def test_max_kv_tokens(h100):
    r = fit_check("llama2-7b", h100, batch=1, context=1024)
    free = r.capacity_bytes - r.weights_bytes - r.activation_bytes
    assert max_kv_tokens(r, "llama2-7b") == free // 524288
    assert max_kv_tokens(fit_check("resnet50", h100, batch=1), "resnet50") is None


def test_fit_rejects_bad_sizes(h100):
    with pytest.raises(WorkbenchError, match="batch"):
        fit_check("llama2-7b", h100, batch=0)


def test_ring_all_reduce_matches_the_formula_by_hand(h100):
    # hardware/h100-sxm.yaml: 18 NVLink links x 25.0e9 B/s, 0.6 us per ring step and 6.6 us per
    # call (NCCL's tuning model, ring / LL protocol)
    nbytes = 1 * 1 * 4096 * 2  # one decode token's hidden state, bf16
    n = 2
    expected = 6.6e-6 + 2 * (n - 1) / n * nbytes / (18 * 25.0e9) + 2 * (n - 1) * 0.6e-6
    assert ring_all_reduce_s(nbytes, n, h100) == pytest.approx(expected, rel=1e-12)
    res = map_parallel("llama2-7b", h100, ParallelPlan(tensor_parallel=n), batch=1, seq=128)
    colls = [k for k in res.mapping.kernels if k.kernel.kind == "collective"]
    assert len(colls) == 2 * 32 + 1  # attention and MLP per layer, plus the embedding
    attn = next(k for k in colls if "attn" in k.kernel.name)
    # The mapper runs the algorithm NCCL's own model picks (workbench/cost/nccl.py): a
    # decode-sized message is latency-bound, and NVLS's fixed 23 us exceeds the ring's 6.6 + 2 x
    # 0.6 us, so it runs the ring with the LL protocol, whose bus bandwidth is a quarter of the
    # fabric's (0.84 x 25.0e9 B/s x 18 links) capped at NCCL's 87.7 GB/s, and algbw = busbw x N /
    # (2 (N-1)) = busbw for two chips.
    ll = min(87.7e9, 18 * 25.0e9 * 0.84 / 4)
    ring = 6.6e-6 + nbytes / ll + 2 * 0.6e-6
    assert attn.cost.network_s == pytest.approx(ring, rel=1e-9)
    assert "ring" in attn.cost.evidence
    assert "of which 7.8 us is latency" in attn.cost.evidence  # 6.6 + 2 x 0.6 us
    assert attn.cost.bottleneck == "interconnect"
    # A large message over 8 chips takes the in-network reduction: each chip sends its data once
    # (over 2 chips a ring moves the same bytes with less fixed latency).
    big = 256e6
    assert "ring" in all_reduce_s(big, 2, h100)[1]
    t, algo = all_reduce_s(big, 8, h100)
    assert "NVLS" in algo
    # NCCL's model of NVLS: its 23 us once, and 5/6 of the bus bandwidth as algorithm bandwidth,
    # times N/(N+1): each chip moves (N+1)/N x the buffer through the switch each way
    assert t == pytest.approx(23e-6 + big / (18 * 25.0e9 * 0.84 * 5 / 6 * 8 / 9), rel=1e-9)


def test_full_mesh_splits_links_over_the_peers_of_the_box():
    # docs.habana.ai Network Configuration: 21 scale-up ports, 3 to each of 7 peers in an HLS-3.
    gaudi = load_hardware("gaudi3")
    ic = gaudi.interconnect
    b = ic.link_bandwidth_bytes_per_s * ic.sustained_fraction
    t2, algo2 = all_reduce_s(64e6, 2, gaudi)
    assert "3 links" in algo2
    assert t2 == pytest.approx(ic.collective_latency_s + 64e6 / (3 * b) + 2 * ic.latency_s)
    t8, algo8 = all_reduce_s(64e6, 8, gaudi)
    assert "21 links" in algo8
    assert t8 < t2  # eight cards use every scale-up port, two cards only the three they share


def test_ring_all_reduce_edges(h100):
    assert ring_all_reduce_s(1e6, 1, h100) == 0.0
    assert math.isinf(ring_all_reduce_s(1e6, 2, load_hardware("l4")))


def test_tensor_parallel_speeds_up_and_adds_collectives(h100):
    one = map_parallel("llama2-13b", h100, ParallelPlan(), batch=1, seq=512)
    four = map_parallel("llama2-13b", h100, ParallelPlan(tensor_parallel=4), batch=1, seq=512)
    assert collective_share(one.mapping) == 0.0
    assert 0 < four.collective_share < 1
    assert four.step_s < one.step_s


def test_data_parallel_multiplies_throughput(h100):
    one = map_parallel("gpt2", h100, ParallelPlan(), phase="prefill", batch=1, seq=128)
    dp = map_parallel(
        "gpt2", h100, ParallelPlan(data_parallel=3), phase="prefill", batch=1, seq=128
    )
    assert dp.items_per_s == pytest.approx(3 * one.items_per_s)
    assert dp.step_s == pytest.approx(one.step_s)


def test_interconnect_bound_when_collectives_dominate():
    slow = load_hardware("h100-sxm").model_copy(
        update={
            "interconnect": load_hardware("h100-sxm").interconnect.model_copy(
                update={"link_bandwidth_bytes_per_s": 1e6}
            )
        }
    )
    res = map_parallel("gpt2", slow, ParallelPlan(tensor_parallel=4), batch=8, seq=128)
    assert res.interconnect_bound
    assert "interconnect-bound" in res.summary()


def test_plan_validation():
    with pytest.raises(WorkbenchError, match="tensor_parallel"):
        ParallelPlan(tensor_parallel=0)
    assert ParallelPlan(tensor_parallel=2, data_parallel=2).label == "tp2xdp2"


def test_an_fp8_models_all_reduce_sums_16_bit_values(h100):
    from workbench.mapper import map_model
    from workbench.models import build_graph

    def coll(dtype):
        g = build_graph("llama2-7b", "decode", batch=8, context=256, dtype=dtype,
                        tensor_parallel=2)  # fmt: skip
        return next(
            k for k in map_model(g, h100).kernels if k.kernel.name.endswith("attn.all_reduce")
        )

    bf16, fp8 = coll("bf16"), coll("fp8_e4m3")
    # HCCL sums fp32/bf16/fp16 (docs.habana.ai HCCL C API); an fp8 model's GEMM writes 16-bit.
    assert fp8.kernel.link_bytes == bf16.kernel.link_bytes == 2 * (2 - 1) / 2 * 8 * 4096 * 2
    assert any("16-bit" in n for n in fp8.kernel.notes)
    assert fp8.cost.network_s == pytest.approx(bf16.cost.network_s)
