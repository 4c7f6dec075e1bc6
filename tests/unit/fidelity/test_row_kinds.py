"""Corpus row kinds of issue 19: collectives, encoders, forward+backward attention, ratios."""

import pytest

from workbench.cost.collective import all_gather_s, all_reduce_s
from workbench.fidelity import CorpusError, load_corpus, parse_corpus, reproduce
from workbench.fidelity import schema as corpus_schema
from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import PRESETS, encoder_graph

HEAD = """
schema_version: 1
rows:
- id: ROWID
  category: CAT
  split: heldout
  source: "Example benchmark log, table 1, row 1"
  source_key: example
  source_tag: V
  hardware: HW
  stack: STACK
  setup: SETUP
  measured: 100
  unit: UNIT
  expected_bottleneck: interconnect
  approximation: "Reproduced as the kind says."
"""


def _row(setup: str, cat: str, unit: str, hw: str = "h200", stack: str = "nccl", rid="r.x"):
    text = HEAD.replace("SETUP", setup).replace("CAT", cat).replace("UNIT", unit)
    text = text.replace("HW", hw).replace("STACK", stack).replace("ROWID", rid)
    return parse_corpus(text).rows[0]


def _coll(op: str, size: int, ranks: int, hw: str = "h200", stack: str = "nccl"):
    setup = (
        f"{{kind: collective, op: {op}, message_bytes: {size}, ranks: {ranks}, dtype: fp32, "
        'software: "nccl-tests"}'
    )
    return _row(setup, "collective", "GB/s", hw, stack=stack)


@pytest.fixture(scope="module")
def h200():
    return load_hardware("h200")


@pytest.mark.parametrize("size", [32768, 2**30])
def test_all_reduce_bus_bandwidth_is_size_over_time_times_the_bus_factor(h200, size):
    rep = reproduce(_coll("all_reduce", size, 8), h200)
    t, _ = all_reduce_s(size, 8, h200)
    assert rep.time_s == pytest.approx(t)
    assert rep.predicted == pytest.approx(size / t * 2 * 7 / 8)
    assert rep.time_s >= rep.floor_s
    # NOTE: a 32 KiB call is latency-bound, a 1 GiB one is on the links.
    assert rep.bottleneck == ("overhead" if size < 2**20 else "interconnect")


def test_a_torch_distributed_call_pays_pytorchs_host_time_once(h200):
    # stacks/torch-distributed.yaml: one call timed alone carries PyTorch's per-call host time
    # (request_overhead_s); nccl-tests times back-to-back calls, so the nccl stack carries none
    from workbench.hw.stack import load_stack

    host = load_stack("torch-distributed").request_overhead_s.value
    assert host is not None
    assert 20e-6 <= host <= 30e-6
    assert load_stack("nccl").request_overhead_s.value == 0.0
    for size in (32768, 2**30):
        bare = reproduce(_coll("all_reduce", size, 8), h200)
        torch = reproduce(_coll("all_reduce", size, 8, stack="torch-distributed"), h200)
        assert torch.time_s == pytest.approx(bare.time_s + host)
        assert torch.predicted == pytest.approx(size / torch.time_s * 2 * 7 / 8)
        assert torch.floor_s == bare.floor_s  # the floor is the links' alone
    # a small call is mostly host time, a large one is on the links either way
    assert reproduce(_coll("all_reduce", 32768, 8, stack="torch-distributed"), h200).bottleneck == (
        "overhead"
    )


def test_all_gather_and_reduce_scatter_use_the_ring_all_gather(h200):
    for op in ("all_gather", "reduce_scatter"):
        rep = reproduce(_coll(op, 2**30, 8), h200)
        assert rep.predicted == pytest.approx(2**30 / all_gather_s(2**30, 8, h200) * 7 / 8)
        # the floor: (n-1)/n of the buffer over every link at the datasheet rate
        ic = h200.interconnect
        assert rep.bound == pytest.approx(ic.links * ic.link_bandwidth_bytes_per_s)


def test_a_full_mesh_floor_uses_only_the_links_to_the_peers_taking_part():
    mi = load_hardware("mi300x")
    two, eight = (reproduce(_coll("all_reduce", 2**32, n, "mi300x"), mi) for n in (2, 8))
    assert eight.bound == pytest.approx(7 * two.bound)


def test_bad_collectives_are_refused_in_one_line(h200):
    with pytest.raises(CorpusError, match="ranks"):
        _coll("all_reduce", 1024, 1)
    with pytest.raises(CorpusError, match="op"):
        _coll("broadcast", 1024, 8)
    with pytest.raises(CorpusError, match="ranks do not fit"):
        reproduce(_coll("all_reduce", 1024, 64), h200)


def test_an_encoder_row_is_the_bert_forward_through_the_mapper():
    a100 = load_hardware("a100-80gb")
    setup = '{kind: encoder, model: bert-large, batch: 8, seq: 384, dtype: fp16, software: "x"}'
    t = map_model(encoder_graph(PRESETS["bert-large"], batch=8, seq=384, dtype="fp16"), a100)
    latency = reproduce(_row(setup, "encoder", "ms", "a100-80gb", "tensorrt"), a100)
    rate = reproduce(_row(setup, "encoder", "sequences/s", "a100-80gb", "tensorrt"), a100)
    assert latency.predicted == pytest.approx(t.time_s)
    assert rate.predicted == pytest.approx(8 / t.time_s)
    assert latency.floor_s <= latency.time_s
    with pytest.raises(CorpusError, match="seq"):
        _row(setup.replace("384", "1024"), "encoder", "ms")


def test_forward_backward_attention_counts_3_5_forwards_and_costs_the_class_backward():
    # NOTE: FlashAttention-2's backward runs at 63% of peak against its forward's 73%
    # (arXiv:2307.08691 Section 1): 2.5 forwards of FLOPs take 2.5 x 73 / 63 forwards of time.
    h100 = load_hardware("h100-sxm")
    base = (
        "{kind: attention, batch: 8, heads: 16, kv_heads: 16, seq: 2048, head_dim: 128, "
        "causal: true, dtype: bf16, software: FA2, flop_convention: causal_halfP}"
    )
    fwd = reproduce(_row(base.replace("P", ""), "attention", "TFLOP/s", "h100-sxm"), h100)
    both = base.replace("P", ", passes: forward_backward")
    fb = reproduce(_row(both, "attention", "TFLOP/s", "h100-sxm"), h100)
    assert fb.time_s == pytest.approx((1 + 2.5 * 73 / 63) * fwd.time_s)
    assert fb.predicted == pytest.approx(fwd.predicted * 3.5 / (1 + 2.5 * 73 / 63))
    assert fb.floor_s == pytest.approx(3.5 * fwd.floor_s)
    # NOTE: Triton's backward is slower still against its forward (FA2 is 1.3-1.5x faster
    # forward, 2x backward): its fwd+bwd rate falls further below its forward rate.
    tri = base.replace("software: FA2", "software: Triton")
    tf = reproduce(_row(tri.replace("P", ""), "attention", "TFLOP/s", "h100-sxm", "triton"), h100)
    tfb = reproduce(
        _row(tri.replace("P", ", passes: forward_backward"), "attention", "TFLOP/s", "h100-sxm",
             "triton"), h100)  # fmt: skip
    assert tfb.predicted / tf.predicted < fb.predicted / fwd.predicted


def _serving(b: int) -> str:
    return (
        f"{{kind: serving, model: llama2-7b, batch: {b}, seq: 128, output_len: 16, "
        'dtype: fp16, software: "x"}'
    )


def test_a_ratio_is_the_ratio_of_its_two_runs_reproduced_alone(h200):
    h100 = load_hardware("h100-sxm")
    num = f"{{hardware: h200, unit: tokens/s, setup: {_serving(32)}}}"
    den = f"{{hardware: h100-sxm, unit: tokens/s, setup: {_serving(8)}}}"
    row = _row(f"{{kind: ratio, numerator: {num}, denominator: {den}}}", "ratio", "x")
    alone = [
        reproduce(_row(_serving(b), "serving_throughput", "tokens/s", hw), load_hardware(hw))
        for b, hw in ((32, "h200"), (8, "h100-sxm"))
    ]
    rep = reproduce(row, h100)  # NOTE: each run uses its own hardware, not the row's
    assert rep.predicted == pytest.approx(alone[0].predicted / alone[1].predicted)
    assert rep.time_s >= rep.floor_s
    bad = den.replace("unit: tokens/s", "unit: ms")
    with pytest.raises(CorpusError, match="same metric"):
        _row(f"{{kind: ratio, numerator: {num}, denominator: {bad}}}", "ratio", "x")


def test_a_bad_stack_name_is_refused():
    with pytest.raises(CorpusError, match="stack"):
        _row(
            "{kind: collective, op: all_reduce, message_bytes: 8, ranks: 8, dtype: fp32, "
            'software: "x"}',
            "collective",
            "GB/s",
            stack="Bad Stack!",
        )


def test_the_shipped_corpus_reads_every_published_d_file(tmp_path, monkeypatch):
    corpus = load_corpus()
    files = sorted(corpus_schema.EXTRA_DIR.glob("*.yaml"))
    assert files, "published.d holds the issue-19 rows"
    ids = {r.id for f in files for r in load_corpus(f).rows}
    assert ids <= {r.id for r in corpus.rows}
    assert len(corpus.rows) == len(load_corpus(corpus_schema.DEFAULT_PATH).rows) + len(ids)
    # a row id repeated across two files is refused in one line
    extra = tmp_path / "published.d"
    extra.mkdir()
    (extra / "a.yaml").write_text(files[0].read_text())
    (extra / "b.yaml").write_text(files[0].read_text())
    monkeypatch.setattr(corpus_schema, "EXTRA_DIR", extra)
    with pytest.raises(CorpusError, match="duplicate row id"):
        load_corpus()


def test_a_training_row_in_tokens_per_second_is_the_mfu_row_restated():
    h100 = load_hardware("h100-sxm")
    setup = (
        "{kind: training, model: llama3-8b, batch: 2, seq: 2048, dtype: bf16, chips: 8, "
        "training: {data_parallel: 8, micro_batch: 2, global_batch: 16, dp_overlap: true, "
        'dp_sharding: full}, software: "x"}'
    )
    mfu = reproduce(_row(setup, "training", "MFU%", "h100-sxm"), h100)
    tps = reproduce(_row(setup, "training", "tokens/s/chip", "h100-sxm"), h100)
    assert tps.time_s == pytest.approx(mfu.time_s)
    assert tps.predicted == pytest.approx(16 * 2048 / 8 / mfu.time_s)
    assert tps.bound == pytest.approx(16 * 2048 / 8 / mfu.floor_s)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge", "folder", "dangling"])
def test_a_published_d_entry_that_is_no_small_regular_file_is_refused_at_once(
    tmp_path, monkeypatch, capsys, kind
):
    import os
    import signal

    extra = tmp_path / "published.d"
    extra.mkdir()
    entry = extra / "z.yaml"
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero":
        entry.symlink_to("/dev/zero")
    elif kind == "huge":
        with entry.open("wb") as f:
            f.truncate(corpus_schema.MAX_CORPUS_FILE_BYTES + 1)
    elif kind == "folder":
        entry.mkdir()
    else:
        entry.symlink_to(tmp_path / "missing.yaml")
    monkeypatch.setattr(corpus_schema, "EXTRA_DIR", extra)

    def hung(*_):
        raise TimeoutError("load_corpus blocked on a non-regular file")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)  # NOTE: a FIFO read would block forever; fail instead of hanging
    try:
        with pytest.raises(CorpusError, match=r"z\.yaml"):
            load_corpus()
        from workbench.cli import main

        assert main(["validate", "--published"]) == 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("workbench: error: corpus file ")
    assert "z.yaml" in err[0]
