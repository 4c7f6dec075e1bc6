"""Fused attention's off-chip traffic scales as the FlashAttention paper says.

Source: Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
NeurIPS 2022, Theorem 2: standard attention needs Theta(N d + N^2) HBM accesses, FlashAttention
Theta(N^2 d^2 / M) for SRAM size M (d <= M <= N d).
"""

import pytest

from workbench.hw import load_hardware
from workbench.ir import Attention, Graph
from workbench.mapper import map_model
from workbench.options import MapOptions


def _no_cache(hw, sram_bytes):
    """A copy of ``hw`` whose SRAM is ``sram_bytes`` and with no cache or register level, so
    off-chip traffic is what the SRAM alone implies (the setting of the paper's theorem)."""
    levels = [lvl for lvl in hw.memory if lvl.kind in ("sram", "dram")]
    levels[0] = levels[0].model_copy(update={"capacity_bytes": sram_bytes})
    return hw.model_copy(update={"memory": tuple(levels)})


def _traffic(hw, n, d=64, fused=True):
    op = Attention(
        name="attn",
        inputs=("q", "k", "v"),
        batch=1,
        heads=1,
        kv_heads=1,
        q_len=n,
        kv_len=n,
        head_dim=d,
        causal=False,
    )
    opts = MapOptions() if fused else MapOptions(disabled_fusion=("flash_attention",))
    m = map_model(Graph(name="a", ops=(op,)), hw, opts)
    return m.total.bytes_at(hw.offchip.name)


@pytest.fixture(scope="module")
def teaching():
    return load_hardware("teaching")


def test_fused_traffic_grows_quadratically_in_n(teaching):
    hw = _no_cache(teaching, 64 * 1024)
    ratio = _traffic(hw, 32768) / _traffic(hw, 8192)
    assert 12 < ratio <= 16.5  # 4x N -> ~16x traffic when N^2 d^2 / M dominates


def test_fused_traffic_falls_with_sram_size(teaching):
    small = _traffic(_no_cache(teaching, 32 * 1024), 16384)
    large = _traffic(_no_cache(teaching, 128 * 1024), 16384)
    assert small / large > 2.5  # Theta(1/M): 4x SRAM -> several times less traffic


def test_unfused_traffic_has_the_n_squared_score_matrix(teaching):
    hw = _no_cache(teaching, 192 * 1024)  # an A100-sized SRAM, the paper's setting
    n, d = 8192, 64
    unfused = _traffic(hw, n, d, fused=False)
    assert unfused >= 4 * n * n * 2  # S written and read, P written and read (bf16)
    assert _traffic(hw, n, d) < unfused / 4
