"""Memory footprint of a graph on one chip, and the size limits of the cost arithmetic."""

from __future__ import annotations

import pytest

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.models import build_graph
from workbench.models.footprint import check_graph_size, graph_footprint

H100 = load_hardware("h100-sxm")


def test_weights_kv_and_activations_by_hand():
    # Llama-2-7B decode, batch 64, 4,000 cached tokens: KV = 2 x 32 layers x 4096 x 4000 x 64 x 2 B.
    fp = graph_footprint(build_graph("llama2-7b", "decode", batch=64, seq=4000), H100)
    assert fp.kv_bytes == 2 * 32 * 4096 * 4000 * 64 * 2
    assert fp.weights_bytes == build_graph("llama2-7b", seq=16).params * 2
    assert fp.memory_bytes == fp.weights_bytes + fp.kv_bytes + fp.activation_bytes
    assert fp.capacity_bytes == 80_000_000_000
    assert not fp.fits  # 13.5 GB of weights (the whole embedding table) + 134 GB of KV cache
    assert "hbm holds 74.5 GiB" in fp.reason  # 80e9 B: capacities print in binary units


def test_weight_only_format_shrinks_the_weights():
    graph = build_graph("llama2-70b", seq=16)
    bf16, int4 = graph_footprint(graph, H100), graph_footprint(graph, H100, weight_dtype="int4")
    assert int4.weights_bytes * 4 == bf16.weights_bytes
    assert not bf16.fits
    assert int4.fits  # 34 GB of int4 weights fit one 80 GB H100
    assert int4.reason == ""


def test_sizes_past_the_arithmetic_are_refused_in_one_line():
    check_graph_size(build_graph("llama2-7b", seq=2048))
    with pytest.raises(WorkbenchError, match=r"limit is 2\*\*50") as info:
        check_graph_size(build_graph("llama2-7b", batch=100_000_000, seq=2048), "--batch")
    assert str(info.value).startswith("--batch: ")
    assert "\n" not in str(info.value)
