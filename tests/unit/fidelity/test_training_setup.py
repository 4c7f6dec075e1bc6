"""The corpus schema's training setup: strict, physical, consistent with the chip count."""

import pytest

from workbench.fidelity import CorpusError, parse_corpus

ROW = """schema_version: 1
rows:
- id: train.example
  category: training
  split: heldout
  source: "Example paper, Table 1, row 2"
  source_key: example
  source_tag: V
  hardware: a100-80gb
  setup:
    kind: training
    arch: {name: x, hidden: 1024, layers: 8, heads: 16, ffn: 4096, vocab: 8192, activation: gelu}
    batch: 2
    seq: 1024
    dtype: bf16
    chips: 16
    tensor_parallel: 2
    training:
      {pipeline_parallel: 2, data_parallel: 4, micro_batch: 2, global_batch: 64, dp_overlap: false}
    software: Megatron
  measured: 40
  unit: MFU%
  expected_bottleneck: compute
  approximation: "One optimizer step of the busiest stage."
"""


def test_a_training_row_parses_with_its_plan():
    t = parse_corpus(ROW).rows[0].setup.training
    assert (t.pipeline_parallel, t.data_parallel, t.interleave, t.flop_count) == (2, 4, 1, "model")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("chips: 16", "chips: 32", "chips 32"),
        ("global_batch: 64", "global_batch: 60", "multiple"),
        ("micro_batch: 2,", "micro_batch: 0,", "micro_batch"),
        ("dp_overlap: false}", "dp_overlap: false, colour: red}", "colour"),
        ("dp_overlap: false}", "dp_overlap: false, dp_sharding: zero9}", "dp_sharding"),
        ("    batch: 2\n", "    batch: 4\n", "batch must equal"),
        ("    training:\n", "    nothing:\n", "nothing"),
        ("kind: training", "kind: prefill", "allowed only there"),
    ],
)
def test_bad_training_setups_are_one_line(old, new, words):
    assert old in ROW
    with pytest.raises(CorpusError, match=words) as err:
        parse_corpus(ROW.replace(old, new))
    assert "\n" not in str(err.value)


def test_a_training_row_needs_its_plan():
    lines = [ln for ln in ROW.splitlines(keepends=True) if "training:" not in ln]
    lines = [ln for ln in lines if "pipeline_parallel" not in ln]
    with pytest.raises(CorpusError, match="'training' is required"):
        parse_corpus("".join(lines))


def test_hardware_flop_count_compares_like_with_like():
    from workbench.fidelity.reproduce import reproduce
    from workbench.hw import load_hardware

    hw = load_hardware("a100-80gb")
    text = ROW.replace("    software: Megatron", "    recompute: 1.0\n    software: Megatron")
    model = reproduce(parse_corpus(text).rows[0], hw)
    counted = text.replace("dp_overlap: false}", "dp_overlap: false, flop_count: hardware}")
    hardware = reproduce(parse_corpus(counted).rows[0], hw)
    # NOTE: same predicted step; only what the utilisation counts differs (about 4/3).
    assert hardware.time_s == pytest.approx(model.time_s)
    assert 1.2 < hardware.predicted / model.predicted < 4 / 3
    assert model.predicted <= model.bound


def _on(stack: str, training_extra: str = "") -> str:
    text = ROW.replace("  hardware: a100-80gb\n", f"  hardware: a100-80gb\n  stack: {stack}\n")
    return text.replace("dp_overlap: false}", f"dp_overlap: false{training_extra}}}")


def test_a_training_row_runs_its_stack_s_selective_policy_where_its_source_ran_one():
    from workbench.fidelity.reproduce import reproduce
    from workbench.hw import load_hardware

    hw = load_hardware("a100-80gb")
    plain = reproduce(parse_corpus(_on("torchtitan")).rows[0], hw)
    sac = reproduce(parse_corpus(_on("torchtitan", ", selective_recompute: true")).rows[0], hw)
    # NOTE: torchtitan's per-op policy re-runs every second GEMM and the non-matrix ops.
    assert sac.time_s > plain.time_s
    no_policy = parse_corpus(_on("pytorch-eager", ", selective_recompute: true")).rows[0]
    with pytest.raises(CorpusError, match="no selective recomputation policy"):
        reproduce(no_policy, hw)


def test_a_training_row_is_mapped_with_its_stack():
    from workbench.fidelity.reproduce import reproduce
    from workbench.hw import load_hardware

    hw = load_hardware("a100-80gb")
    fused = reproduce(parse_corpus(_on("pytorch-compile")).rows[0], hw)
    megatron = reproduce(parse_corpus(_on("nemo-megatron")).rows[0], hw)
    # NOTE: Megatron-LM runs its GeLU and residual adds as kernels after the GEMMs.
    assert megatron.time_s > fused.time_s
