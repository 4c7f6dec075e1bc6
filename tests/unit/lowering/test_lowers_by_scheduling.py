"""Lowering and scheduling read the typed scheduling style, never the tile-issue cost.

A GPU profile restyled ``software_issued`` lowers and tiles like a host; the same GPU with a
tile-issue cost but still ``hardware_scheduled`` lowers and tiles like the GPU. Either test fails
if a stage goes back to asking ``overheads.tile_issue_s`` (or any overhead) whether it is a host.
"""

import ast
from pathlib import Path

import pytest

import workbench.lowering as lowering_pkg
import workbench.scheduling as scheduling_pkg
from workbench.hw import load_hardware
from workbench.ir import Graph, Linear
from workbench.lowering import lower
from workbench.lowering.formats import engine_for
from workbench.options import MapOptions
from workbench.scheduling.attention import packed_group
from workbench.scheduling.gemm import native_mn

SOURCES = sorted(
    [
        *Path(lowering_pkg.__file__).parent.glob("*.py"),
        *Path(scheduling_pkg.__file__).parent.glob("*.py"),
    ]
)
#: Overheads that once said "host" when compared with 0.
OVERHEADS = {"tile_issue_s", "attention_block_issue_s", "attention_qtile_issue_s", "conv_setup_s"}


def _restyled(hw, scheduling: str, tile_issue_s: float):
    data = hw.model_dump()
    data["scheduling"] = scheduling
    data["overheads"]["tile_issue_s"] = tile_issue_s
    return type(hw).model_validate(data)


@pytest.fixture(scope="module")
def gpu():
    return load_hardware("a100-80gb")


@pytest.fixture(scope="module")
def as_host(gpu):
    return _restyled(gpu, "software_issued", 2e-6)


@pytest.fixture(scope="module")
def paying_gpu(gpu):
    return _restyled(gpu, "hardware_scheduled", 2e-6)


def _skinny():
    from workbench.lowering.kernel import GemmProblem

    return GemmProblem(batch=1, m=1, n=4096, k=4096, a_bytes=2, b_bytes=2, c_bytes=2)


def test_an_unsupported_format_is_widened_on_hardware_tiles_only(gpu, as_host, paying_gpu):
    # NOTE: the A100 has no fp8: its matrix engine runs it at bf16/fp16; a host's vector unit.
    assert engine_for(gpu, "fp8_e4m3")[0] == engine_for(paying_gpu, "fp8_e4m3")[0] == "matrix"
    assert engine_for(as_host, "fp8_e4m3")[0] == "vector"


def test_skinny_gemms_swap_ab_on_hardware_tiles_only(gpu, as_host, paying_gpu):
    p = _skinny()
    me = gpu.matrix_engine
    assert native_mn(p, gpu) == native_mn(p, paying_gpu) == (me.native_tile_n, me.native_tile_m)
    assert native_mn(p, as_host) == (me.native_tile_m, me.native_tile_n)


def test_gqa_packs_query_heads_on_hardware_tiles_only(gpu, as_host, paying_gpu):
    from workbench.lowering.kernel import AttentionProblem

    p = AttentionProblem(
        batch=64, heads=64, kv_heads=8, q_len=1, kv_len=2048, head_dim=128,
        causal=True, elem_bytes=2, kv_bytes=2,
    )  # fmt: skip
    assert packed_group(p, gpu) == packed_group(p, paying_gpu) == 8
    assert packed_group(p, as_host) == 1


def test_a_restyled_gpu_lowers_like_a_host(gpu, as_host, paying_gpu):
    ops = (
        Linear(name="a", inputs=("x",), tokens=(512,), in_features=1024, out_features=1024),
        Linear(name="b", inputs=("a",), tokens=(512,), in_features=1024, out_features=1024),
    )
    graph = Graph(name="g", ops=ops)
    opts = MapOptions(dtype="fp8")

    def shape(hw):
        return [(k.name, k.engine, k.dtype, k.bytes_read) for k in lower(graph, hw, opts)]

    assert shape(paying_gpu) == shape(gpu)
    assert shape(as_host) != shape(gpu)
    assert {k.engine for k in lower(graph, as_host, opts)} == {"vector"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_stage_compares_an_overhead_to_decide_host_or_chip(path):
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        tests = []
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            tests.append(node.test)
        elif isinstance(node, ast.BoolOp | ast.Compare):
            tests.append(node)
        for test in tests:
            names = {getattr(n, "attr", getattr(n, "id", None)) for n in ast.walk(test)}
            if names & OVERHEADS:
                found.append(f"line {test.lineno}: {ast.unparse(test)}")
    assert found == []
