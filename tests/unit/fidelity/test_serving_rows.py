"""Generate/serving rows of the published corpus: the stack's step overhead and memory fit."""

import pytest

from workbench.fidelity import fit_step_overhead, load_corpus, parse_corpus, reproduce
from workbench.hw import load_hardware

ROW = """
schema_version: 1
rows:
- id: gen.example
  category: llm_decode
  split: heldout
  source: "Example vendor page, latency table, row 1"
  source_key: example
  source_tag: V
  hardware: h100-sxm
  setup: {kind: generate, model: llama2-7b, batch: BATCH, seq: 128, output_len: 20, dtype: bf16,
          software: "Example stack"STEP}
  measured: 150
  unit: ms
  expected_bottleneck: bandwidth
  approximation: "Prefill + 19 decode steps."
"""


def _row(batch: int = 1, step: str = ""):
    return parse_corpus(ROW.replace("BATCH", str(batch)).replace("STEP", step)).rows[0]


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


def test_a_stack_step_overhead_is_paid_once_per_step(h100):
    # 1 prefill + 19 decode steps, each paying the stack's host time instead of the profile's.
    base = reproduce(_row(), h100)
    stack = reproduce(_row(step=", step_overhead_s: 2.0e-3"), h100)
    extra = 20 * (2.0e-3 - h100.overheads.step_s)
    assert stack.time_s - base.time_s == pytest.approx(extra, rel=1e-6)
    assert stack.floor_s == pytest.approx(base.floor_s)


def test_a_step_overhead_is_fitted_only_to_a_generate_latency(h100):
    from workbench.fidelity import CorpusError

    row = _row()
    fit = fit_step_overhead(row, h100)
    with_fit = row.model_copy(
        update={"setup": row.setup.model_copy(update={"step_overhead_s": fit})}
    )
    assert reproduce(with_fit, h100).time_s == pytest.approx(row.measured_si, rel=1e-9)
    serving = load_corpus().rows[0]  # a GEMM row
    with pytest.raises(CorpusError, match="generate latency"):
        fit_step_overhead(serving, h100)
    fast = row.model_copy(update={"measured": 1.0})  # 1 ms: faster than its kernels
    with pytest.raises(CorpusError, match="exceed"):
        fit_step_overhead(fast, h100)


def test_a_bad_step_overhead_is_refused():
    from workbench.fidelity import CorpusError

    with pytest.raises(CorpusError, match="step_overhead_s"):
        _row(step=", step_overhead_s: -1.0")


def test_a_batch_whose_kv_cache_overflows_memory_is_flagged(h100):
    assert reproduce(_row(batch=1), h100).memory_fits is True
    # Llama-2-7B keeps 0.5 MiB of bf16 KV per token: 4096 sequences x 148 tokens = 296 GiB.
    assert reproduce(_row(batch=4096), h100).memory_fits is False


def test_the_nemo_step_overhead_is_fitted_to_one_calibration_row():
    rows = [r for r in load_corpus().rows if r.id.startswith("gen.nemo.")]
    fitted = {r.setup.step_overhead_s for r in rows}
    assert len(rows) == 10
    assert fitted == {2.59e-3}
    calibration = [r.id for r in rows if r.split == "calibration"]
    assert calibration == ["gen.nemo.h100.llama2-7b.bs1"]
    # The YAML figure is the fit of the current model: refit after a kernel-model change
    # (fidelity.fit_step_overhead on the calibration row) and write the new value in every row.
    row = next(r for r in rows if r.split == "calibration")
    fit = fit_step_overhead(row, load_hardware(row.hardware))
    assert fit == pytest.approx(2.59e-3, rel=0.01), f"refit: step_overhead_s = {fit:.3g}"
    for r in rows:  # the fit is said where it was made, and every tested row names its source
        said = "FITTED" if r.split == "calibration" else "gen.nemo.h100.llama2-7b.bs1"
        assert said in r.approximation, r.id


def test_a_stack_that_does_not_share_kv_across_a_gqa_group_reads_it_per_query_head(h100):
    from workbench.mapper import map_model
    from workbench.models import build_graph
    from workbench.options import MapOptions

    # Llama-2-70B decode at batch 64, context 2048: 64 query heads share 8 KV heads.
    g = build_graph("llama2-70b", phase="decode", batch=64, context=2048)
    shared = map_model(g, h100).kernel("layers.0.attn.sdpa")
    per_head = map_model(g, h100, MapOptions(gqa_kv_sharing=False)).kernel("layers.0.attn.sdpa")
    kv_once = 2 * 64 * 8 * 2048 * 128 * 2  # K and V of every KV head once, bf16
    assert shared.cost.bytes_at("hbm") < 1.1 * kv_once
    assert per_head.cost.bytes_at("hbm") >= 8 * kv_once  # once per query head of each group
    assert per_head.cost.total_s > 4 * shared.cost.total_s
    assert MapOptions(gqa_kv_sharing=False).as_tags()["gqa_kv_sharing"] is False


def test_only_the_trtllm_v061_rows_read_kv_per_query_head():
    rows = [r for r in load_corpus().rows if getattr(r.setup, "gqa_kv_sharing", True) is False]
    assert {r.id for r in rows} == {
        "serve.trtllm.h100.llama70b.tp2.bs1024.128-128",
        "serve.trtllm.h100.llama70b.tp4.bs480.128-2048",
        "serve.trtllm.h100.llama70b.tp2.bs96.2048-128",
        "serve.trtllm.h100.llama70b.tp2.bs64.2048-2048",
    }
    for r in rows:  # a stated software property with its sources, never a fit
        assert r.split == "heldout"
        assert "v0.6.1" in r.setup.software
        note = r.note or ""
        assert "issue 407" in note
        assert "PR 524" in note
