"""Hostile recorded shapes through ``workbench trace`` (expected-vs-measured, issue 17).

A trace recorded with shapes can claim any sizes for an operator or a collective. Whatever it
claims, ``workbench trace`` exits 0 or 2 in one line, prints only finite figures, and never
sets an expectation beside a kernel that its shapes could not have produced in the measured
time: such rows are left out as corrupt, and said so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_contract import assert_contract, assert_sane_numbers, fresh, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.review.join.expected import IMPOSSIBLE_RATIO

#: Sizes as JSON text: ordinary, huge, beyond 2^63, negative, non-integer, non-number.
SIZES = ("64", "4096", "8388608", str(2**40), str(2**62), str(2**64), "0", "-1", "1e300",
         "3.5", '"12"', "null", "[]", "true")  # fmt: skip
TYPES = ('"float"', '"c10::Half"', '"long"', '"int"', '"Scalar"', "7", '""')
OPS = ("aten::mm", "aten::addmm", "nccl:all_to_all", "nccl:all_reduce", "nccl:all_gather",
       "aten::add", "aten::native_layer_norm", "record_param_comms")  # fmt: skip
WORLDS = ("2", "8", "0", "-3", "1" + "0" * 400, '"x"', "null")


def _trace(folder: Path, op: str, dims: list[list[str]], types: list[str], world: str) -> Path:
    dims_json = "[" + ", ".join("[" + ", ".join(d) + "]" for d in dims) + "]"
    events = [
        '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, '
        '"ts": 0, "dur": 1000}',
        f'{{"ph": "X", "cat": "{"user_annotation" if op.startswith("nccl:") else "cpu_op"}", '
        f'"name": "{op}", "pid": 1, "tid": 1, "ts": 10, "dur": 500, "args": {{'
        f'"External id": 5, "Input Dims": {dims_json}, "Input type": [{", ".join(types)}]}}}}',
        '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
        '"ts": 20, "dur": 5, "args": {"correlation": 7, "External id": 7}}',
        '{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, '
        '"ts": 30, "dur": 50, "args": {"correlation": 7, "stream": 7, "device": 0}}',
    ]
    path = fresh(folder, "trace.json")
    path.write_text(
        '{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": ' + world + "}, "
        '"deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB"}], "traceEvents": ['
        + ", ".join(events)
        + "]}"
    )
    return path


def _check(folder: Path, trace: Path) -> None:
    before = trace.read_bytes()
    for extra in ((), ("--on", "h100-sxm")):
        outcome = assert_contract(run_cli("trace", str(trace), "--json", *extra))
        assert trace.read_bytes() == before
        if outcome.code != 0:
            continue
        doc = json.loads(outcome.out)
        assert_sane_numbers(doc)
        for row in doc["expected"].get("rows", []):
            assert row["expected_s"] >= 0
            assert row["measured_s"] > 0
            assert row["efficiency"] <= IMPOSSIBLE_RATIO, row
        if doc["what_if"]:
            assert doc["what_if"]["expected_s"] >= 0
        text = assert_contract(run_cli("trace", str(trace), *extra))
        assert "e+" not in text.out.split("iterations:")[0], text.out  # no absurd expectation


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", OPS)
def test_hostile_sizes_for_each_operator(tmp_path, op, size):
    dims = [[size, size], [size, size], [size, size]]
    _check(tmp_path, _trace(tmp_path, op, dims, ['"float"'] * 3, "2"))


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from(OPS),
    dims=st.lists(st.lists(st.sampled_from(SIZES), max_size=3), max_size=3),
    types=st.lists(st.sampled_from(TYPES), max_size=3),
    world=st.sampled_from(WORLDS),
)
def test_random_shapes_types_and_world_sizes(tmp_path, op, dims, types, world):
    _check(tmp_path, _trace(tmp_path, op, dims, types, world))


#: Every operator the shape reader knows (workbench/models/from_trace.py), one name each.
KNOWN = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear",
         "aten::matmul", "aten::convolution", "aten::_scaled_dot_product_flash_attention",
         "aten::_efficient_attention_forward", "aten::native_layer_norm", "aten::rms_norm",
         "aten::_softmax", "aten::embedding", "aten::sum", "aten::add", "aten::relu",
         "nccl:all_reduce", "nccl:all_gather", "nccl:all_to_all")  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    op=st.sampled_from(KNOWN),
    ranks=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=4),
    size=st.sampled_from(("1", "4", "16", "64")),
)
def test_every_known_operator_at_every_rank(tmp_path, op, ranks, size):
    """A tensor of any rank, for any operator the reader knows: trace, --on and --against."""
    dims = [[size] * r for r in ranks]
    trace = _trace(tmp_path, op, dims, ['"float"'] * len(dims), "2")
    _check(tmp_path, trace)
    other = _trace(tmp_path, "aten::mm", [["4", "4"], ["4", "4"]], ['"float"'] * 2, "2")
    for pair in ((trace, other), (other, trace)):
        before = trace.read_bytes()
        assert_contract(run_cli("trace", str(pair[0]), "--against", str(pair[1])))
        assert_contract(run_cli("trace", str(pair[0]), "--against", str(pair[1]), "--json"))
        assert trace.read_bytes() == before
