"""Command-line values, ONNX dimensions and opsets, HF context fields and kernel operands
(issue 21): each case exits 0 with sane results or 2 with one line naming the input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fuzz_contract import assert_contract, assert_sane_mapping, fresh, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench.execution as ex
from workbench.errors import WorkbenchError
from workbench.execution.errors import ExecutionError

#: Integer spellings Python's int() takes that a command line must not: sign, underscore,
#: other scripts' digits, blanks, exponent, fraction.
NOT_PLAIN = ("+5", "1_000", "٣", "-1", " 3", "3 ", "1e3", "2.0", "0x10", "", "٠١", "３")
INT_OPTIONS = (
    ("map", "--chips"), ("map", "--batch"), ("map", "--seq"), ("map", "--context"),
    ("sweep-latency", "--max-batch"), ("sweep-latency", "--requests"),
    ("sweep-latency", "--tensor-parallel"), ("compare", "--chips"), ("compare", "--max-batch"),
    ("validate", "--repeats"), ("validate", "--rounds"), ("sweep", "--limit"),
    ("sweep", "--workers"),
)  # fmt: skip


@pytest.mark.parametrize(("command", "option"), INT_OPTIONS)
@pytest.mark.parametrize("text", NOT_PLAIN)
def test_integer_options_take_plain_decimals_only(tmp_path, command, option, text):
    extra = ("--hardware", "teaching", "--model", "gpt2", "--out", str(tmp_path / "s.jsonl"))
    argv = (command, option, text, *(extra if command == "sweep" else ()))
    out = assert_contract(run_cli(*argv), names=(option,), allowed=(2,))
    reasons = ("plain decimal", "outside", "expected one argument", "an empty value")
    assert any(r in out.err for r in reasons), out.err


@pytest.mark.parametrize(
    ("chips", "needle"),
    [("33", "32 attention heads"), ("64", "32 attention heads"), ("1000000", "at most 32")],
)
def test_chips_beyond_the_heads_are_refused(chips, needle):
    out = assert_contract(run_cli("map", "--hardware", "teaching", "--chips", chips), allowed=(2,))
    assert needle in out.err


def test_an_uneven_split_says_how_it_pads(tmp_path):
    out = assert_contract(
        run_cli("map", "--hardware", "h100-sxm", "--chips", "3", "--format", "json"),
        allowed=(0,),
    )
    assert "padded heads 32 -> 33" in out.err
    assert_sane_mapping(json.loads(out.out))


@pytest.mark.parametrize(
    "argv",
    [
        ("map", "--model", ""),
        ("map", "--hardware", ""),
        ("map", "--dtype", ""),
        ("map", "--hf-config", ""),
        ("map", "--onnx", ""),
        ("sweep", "--hardware", "teaching", "--model", "gpt2", "--dtype", "fp64"),
        ("sweep", "--hardware", "teaching", "--model", "gpt2", "--dtype", "bf16,"),
        ("sweep", "--hardware", "teaching", "--model", "gpt2", "--phase", "train"),
        ("sweep", "--hardware", "teaching", "--model", "gpt2", "--batch", "1,+2"),
    ],
)
def test_names_and_lists_are_known_or_refused(tmp_path, argv):
    out_file = tmp_path / "s.jsonl"
    argv = (*argv, "--out", str(out_file)) if argv[0] == "sweep" else argv
    assert_contract(run_cli(*argv), allowed=(2,), outputs=(out_file,))


def _onnx(dim: object, opset: int) -> bytes:
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, 16])
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 8], [0.0] * 128)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


@settings(max_examples=25, deadline=None)
@given(
    dim=st.one_of(st.integers(min_value=-10, max_value=4), st.sampled_from(["N", "batch"])),
    opset=st.sampled_from([1, 9, 13, 17, 99, 9999]),
)
def test_onnx_dims_and_opsets(tmp_path, dim, opset):
    import onnx

    path = fresh(tmp_path, "m.onnx")
    path.write_bytes(_onnx(dim, opset))
    out = assert_contract(run_cli("map", "--onnx", str(path), "--hardware", "teaching"))
    bad_dim = isinstance(dim, int) and dim <= 0
    bad_opset = opset > onnx.defs.onnx_opset_version()
    if bad_opset or bad_dim:
        assert out.code == 2
        assert (f"opset {opset}" if bad_opset else f"dimension 0 is {dim}") in out.err
    elif opset >= 13:
        assert out.code == 0, out.err


@settings(max_examples=20, deadline=None)
@given(
    field=st.sampled_from(["max_position_embeddings", "n_positions"]),
    context=st.integers(min_value=1, max_value=4096),
    seq=st.integers(min_value=1, max_value=8192),
)
def test_hf_context_fields_bound_seq(tmp_path, field, context, seq):
    cfg = {
        "model_type": "llama" if field == "max_position_embeddings" else "gpt2",
        "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 100, field: context,
        "n_embd": 64, "n_layer": 1, "n_head": 4,
    }  # fmt: skip
    path = fresh(tmp_path, "config.json")
    path.write_text(json.dumps(cfg))
    argv = ("map", "--hf-config", str(path), "--seq", str(seq), "--hardware", "teaching")
    out = assert_contract(run_cli(*argv, "--format", "json"))
    if seq > context:
        assert out.code == 2, f"seq {seq} past a {context}-token {field} mapped"
        assert "--seq" in out.err
    else:
        assert out.code == 0, out.err
        assert_sane_mapping(json.loads(out.out))


X = np.ones((4, 8), np.float32)
Q = np.ones((1, 2, 3, 4), np.float32)
operands = st.one_of(
    st.integers(min_value=0, max_value=10).map(lambda n: np.ones(n, np.float32)),
    st.sampled_from([np.ones((8, 1)), np.ones((2, 4)), ["a"] * 8, "gamma", None]),
)


def _outcome(call):
    """``(result, None)`` or ``(None, the library's error)``; any other exception propagates."""
    try:
        return call(), None
    except WorkbenchError as exc:
        return None, exc


@given(gamma=operands, beta=operands)
def test_norm_operands_are_checked(gamma, beta):
    y, exc = _outcome(lambda: ex.layernorm(X, gamma=gamma, beta=beta))
    if exc is not None:
        assert isinstance(exc, ExecutionError)
        assert "gamma" in str(exc) or "beta" in str(exc)
        return
    assert y.shape == X.shape
    assert np.isfinite(y).all()
    for t in (gamma, beta):
        assert t is None or np.asarray(t).shape == (8,)


@given(lkv=st.integers(min_value=0, max_value=5), lq=st.integers(min_value=0, max_value=3))
def test_attention_lengths_are_checked(lkv, lq):
    k = np.ones((1, 2, lkv, 4), np.float32)
    q = np.ones((1, 2, lq, 4), np.float32)
    for call in (ex.attention_fused, ex.attention_unfused):
        out, exc = _outcome(lambda call=call: call(q, k, k, causal=False))
        assert (exc is not None) == (lkv == 0 or lq == 0), exc
        if exc is not None:
            assert isinstance(exc, ExecutionError)
        else:
            assert np.isfinite(np.asarray(out)).all()


WRITERS = (
    ("map", "--hardware", "teaching", "--model", "gpt2", "--seq", "64", "--output", "{out}"),
    ("map", "--hardware", "teaching", "--model", "gpt2", "--seq", "64", "--format", "json",
     "--output", "{out}"),
    ("run", "--hardware", "teaching", "--model", "gpt2", "--seq", "64", "--record", "{out}"),
    ("review", "--hardware", "teaching", "--model", "gpt2", "--seq", "64", "--out", "{out}"),
    ("validate", "--published", "--split", "calibration", "--chart", "{out}"),
    ("sweep", "--hardware", "teaching", "--model", "gpt2", "--seq", "64", "--workers", "1",
     "--out", "{out}"),
)  # fmt: skip


@pytest.mark.parametrize("argv", WRITERS, ids=lambda a: f"{a[0]}-{a[-2]}")
def test_disk_full_on_every_writer(tmp_path, monkeypatch, argv):
    import errno
    import os

    suffix = ".html" if argv[0] in ("review", "validate") else ".json"
    out = tmp_path / f"out{suffix}"
    fresh_file = argv[0] == "sweep"  # a sweep appends to its own file: start with none
    if not fresh_file:
        out.write_text("old", encoding="utf-8")
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        if fd > 2:  # stdout/stderr still work: the error line must get out
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    def full_sync(fd: int) -> None:  # buffered writers (the sweep's journal) see it here
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    monkeypatch.setattr(os, "fsync", full_sync)
    outcome = run_cli(*(a.replace("{out}", str(out)) for a in argv))
    monkeypatch.undo()
    assert_contract(outcome, allowed=(2,))
    assert "disk full" in outcome.err or "No space" in outcome.err, outcome.err
    if fresh_file:  # at most the header line made it to disk before the disk filled
        assert not out.exists() or out.read_text(encoding="utf-8").count("\n") <= 1
    else:
        assert out.read_text(encoding="utf-8") == "old"
    left = {p.name for p in tmp_path.iterdir()} - {out.name, out.stem + ".md", f".{out.name}.lock"}
    assert not left, f"left behind: {left}"


@pytest.mark.parametrize(
    "tile", ["*=9223372036854775808x1x1", "*=99999999x1x1", "*=+64x64x64", "*=6_4x64x64",
             "*=٦٤x64x64", "*=0x64x64", "*=64x64", "=64x64x64"],
)  # fmt: skip
def test_forced_tiles_are_plain_sides_in_range(tile):
    out = assert_contract(run_cli("map", "--hardware", "teaching", "--tile", tile), allowed=(2,))
    assert "--tile" in out.err
