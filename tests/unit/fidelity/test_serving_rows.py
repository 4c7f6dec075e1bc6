"""Generate/serving rows of the published corpus: the stack's step overhead and memory fit."""

import pytest

from workbench.fidelity import fit_step_overhead, load_corpus, parse_corpus, reproduce
from workbench.hw import load_hardware
from workbench.hw.stack import list_stacks, load_stack, patched_stacks, with_step_overhead

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
  stack: gpt-fast
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
    row = _row()
    base = reproduce(row, h100)
    with patched_stacks({"gpt-fast": with_step_overhead(load_stack("gpt-fast"), 2.0e-3)}):
        stack = reproduce(row, h100)
    extra = 20 * (2.0e-3 - h100.overheads.step_s)
    assert stack.time_s - base.time_s == pytest.approx(extra, rel=1e-6)
    assert stack.floor_s == pytest.approx(base.floor_s)


def test_a_stack_request_overhead_is_paid_once_per_request(h100):
    row = _row()
    gpt_fast = load_stack("gpt-fast")
    req = gpt_fast.request_overhead_s.model_copy(update={"value": 5.0e-3})
    with patched_stacks({"gpt-fast": gpt_fast.model_copy(update={"request_overhead_s": req})}):
        paid = reproduce(row, h100)
    assert paid.time_s - reproduce(row, h100).time_s == pytest.approx(5.0e-3, rel=1e-6)


def test_a_step_overhead_is_fitted_only_to_a_generate_latency(h100):
    from workbench.fidelity import CorpusError

    row = _row()
    fit = fit_step_overhead(row, h100)
    with patched_stacks({"gpt-fast": with_step_overhead(load_stack("gpt-fast"), fit)}):
        assert reproduce(row, h100).time_s == pytest.approx(row.measured_si, rel=1e-9)
    serving = load_corpus().rows[0]  # a GEMM row
    with pytest.raises(CorpusError, match="generate latency"):
        fit_step_overhead(serving, h100)
    fast = row.model_copy(update={"measured": 1.0})  # 1 ms: faster than its kernels
    with pytest.raises(CorpusError, match="exceed"):
        fit_step_overhead(fast, h100)


def test_a_row_sets_no_stack_option_of_its_own():
    from workbench.fidelity import CorpusError

    for option in ("step_overhead_s: 2.0e-3", "gqa_kv_sharing: false", "attention_dtype: fp16"):
        with pytest.raises(CorpusError, match=option.split(":")[0]):
            _row(step=", " + option)


def test_a_batch_whose_kv_cache_overflows_memory_is_flagged(h100):
    assert reproduce(_row(batch=1), h100).memory_fits is True
    # Llama-2-7B keeps 0.5 MiB of bf16 KV per token: 4096 sequences x 148 tokens = 296 GiB.
    assert reproduce(_row(batch=4096), h100).memory_fits is False


def test_the_tensorrt_llm_step_overhead_is_fitted_to_one_calibration_row():
    from workbench.fidelity.fits import FITS

    trtllm = ("nemo-inference", "tensorrt-llm-0.5", "tensorrt-llm-0.6", "tensorrt-llm-0.7+")
    rows = [r for r in load_corpus().rows if r.stack in trtllm]
    calibration = [r.id for r in rows if r.split == "calibration"]
    assert calibration == ["gen.nemo.h100.llama2-7b.bs1"]
    fit = next(f for f in FITS if f.kind == "step_overhead_s")
    assert set(fit.targets) == set(trtllm)
    values = set()
    for name in trtllm:  # every TensorRT-LLM stack ships the fit and names its row
        step = load_stack(name).step_overhead_s
        assert step.fitted
        assert step.rows == ("gen.nemo.h100.llama2-7b.bs1",)
        values.add(step.value)
    assert len(values) == 1
    # The stack's figure is the fit of the current model: refit after a kernel-model change
    # (python scripts/fit_attention_classes.py) and write it in every TensorRT-LLM stack.
    row = next(r for r in rows if r.split == "calibration")
    solved = fit_step_overhead(row, load_hardware(row.hardware))
    assert solved == pytest.approx(values.pop(), rel=0.01), f"refit: step_overhead_s {solved:.3g}"
    nemo = [r for r in rows if r.id.startswith("gen.nemo.")]
    assert len(nemo) == 10
    for r in nemo:  # the fit is said where it was made, and every tested row names its source
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


def test_only_tensorrt_llm_before_v07_reads_kv_per_query_head():
    per_head = [n for n in list_stacks() if not load_stack(n).gqa_kv_sharing.value]
    assert per_head == ["tensorrt-llm-0.5", "tensorrt-llm-0.6"]
    for name in per_head:  # a stated property of the stack with its sources, never a fit
        flag = load_stack(name).gqa_kv_sharing
        assert not flag.fitted
        assert "issue 407" in (flag.source or "")
    rows = [r for r in load_corpus().rows if r.stack in per_head]
    assert rows
    assert all(r.split == "heldout" for r in rows)


def test_a_request_overhead_is_fitted_to_a_latency(h100):
    from workbench.fidelity import CorpusError
    from workbench.fidelity.reproduce import fit_request_overhead

    row = _row()
    fit = fit_request_overhead(row, h100)
    gpt_fast = load_stack("gpt-fast")
    req = gpt_fast.request_overhead_s.model_copy(update={"value": fit})
    with patched_stacks({"gpt-fast": gpt_fast.model_copy(update={"request_overhead_s": req})}):
        assert reproduce(row, h100).time_s == pytest.approx(row.measured_si, rel=1e-9)
    with pytest.raises(CorpusError, match="prefill or generate"):
        fit_request_overhead(load_corpus().rows[0], h100)
    with pytest.raises(CorpusError, match="exceeds"):
        fit_request_overhead(row.model_copy(update={"measured": 1.0}), h100)


CNN = """
schema_version: 1
rows:
- id: cnn.example
  category: cnn
  split: heldout
  source: "Example vendor page, latency table, row 1"
  source_key: example
  source_tag: V
  hardware: t4
  stack: STACK
  setup: {kind: cnn, model: resnet50, batch: 2, dtype: fp16, software: "Example stack"}
  measured: MEASURED
  unit: UNIT
  expected_bottleneck: compute
  approximation: "ResNet-50 at batch 2."
"""


def _cnn(stack: str = "tensorrt", measured: float = 2.0, unit: str = "ms"):
    text = CNN.replace("STACK", stack).replace("MEASURED", str(measured)).replace("UNIT", unit)
    return parse_corpus(text).rows[0]


def test_a_cnn_run_pays_its_stack_step_overhead_once():
    # A forward pass is a step: the stack's figure, else the profile's overheads.step_s.
    t4 = load_hardware("t4")
    row = _cnn()
    base = reproduce(row, t4)
    with patched_stacks({"tensorrt": with_step_overhead(load_stack("tensorrt"), 1.0e-3)}):
        paid = reproduce(row, t4)
    assert load_stack("tensorrt").step_overhead_s.value is None
    assert paid.time_s - base.time_s == pytest.approx(1.0e-3 - t4.overheads.step_s, rel=1e-6)
    assert paid.predicted == pytest.approx(paid.time_s)  # a row in ms is one batch's latency
    rate = reproduce(_cnn(measured=1000.0, unit="images/s"), t4)
    assert rate.predicted == pytest.approx(2 / base.time_s)


def test_a_step_overhead_is_fitted_to_a_cnn_latency():
    from workbench.fidelity import CorpusError

    t4 = load_hardware("t4")
    row = _cnn(measured=5.0)
    fit = fit_step_overhead(row, t4)
    with patched_stacks({"tensorrt": with_step_overhead(load_stack("tensorrt"), fit)}):
        assert reproduce(row, t4).time_s == pytest.approx(row.measured_si, rel=1e-9)
    with pytest.raises(CorpusError, match="latency"):
        fit_step_overhead(_cnn(measured=1000.0, unit="images/s"), t4)
