"""Software stacks as data (stacks/*.yaml, workbench/hw/stack.py; issue 19)."""

from __future__ import annotations

import pytest

from workbench.cli import main
from workbench.fidelity import load_corpus
from workbench.hw.stack import (
    DEFAULT_STACK,
    StackError,
    list_stacks,
    load_stack,
    parse_stack,
    stacks_dir,
)
from workbench.options import MapOptions

GOOD = (stacks_dir() / "gpt-fast.yaml").read_text(encoding="utf-8")
_FRACTION = "decode_bandwidth_fraction:\n  value: {}\n  assumption: a tiny fraction here\n"
_REQUEST = (
    "request_overhead_s:\n  value: 0.0\n  assumption: 'none published: no host time per request "
    "beyond the steps'"
)
_FITTED = "request_overhead_s:\n  value: 0.0\n  fitted: true\n  rows: {}"

#: Every stack the issue names, and the kernel libraries and engines the corpus measured.
EXPECTED = {
    "tensorrt-llm-0.5",
    "tensorrt-llm-0.6",
    "tensorrt-llm-0.7+",
    "vllm",
    "nemo-megatron",
    "gpt-fast",
    "pytorch-eager",
    "pytorch-compile",
    "jax-maxtext",
    "deepspeed",
    "tensorrt",
}


def test_every_shipped_stack_loads_and_names_its_file():
    names = list_stacks()
    assert set(names) >= EXPECTED
    assert DEFAULT_STACK in names
    for name in names:
        assert load_stack(name).name == name


def _figures(stack):
    for field in type(stack).model_fields:
        value = getattr(stack, field)
        if hasattr(value, "fitted"):
            yield field, value


def test_every_figure_has_exactly_one_origin():
    for name in list_stacks():
        for field, fig in _figures(load_stack(name)):
            origins = [fig.source is not None, fig.fitted, fig.assumption is not None]
            assert sum(origins) == 1, f"{name}.{field}"
            assert fig.fitted == bool(fig.rows), f"{name}.{field}"


def test_a_fitted_stack_figure_is_a_fit_in_code():
    # fitted: true in a stack file is only allowed where fits.py solves it (LOSO re-solves it)
    from workbench.fidelity.fits import FITS

    fitted = {
        (name, field)
        for name in list_stacks()
        for field, fig in _figures(load_stack(name))
        if fig.fitted
    }
    solved = {(t, f.kind) for f in FITS for t in f.targets}
    assert fitted
    assert fitted <= solved
    rows = {r.id: r for r in load_corpus().rows}
    for name, field in fitted:
        fig = getattr(load_stack(name), field)
        assert all(rows[i].split == "calibration" for i in fig.rows), (name, field)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("recompute:", "colour: red\nrecompute:"), "colour: unknown field"),
        (("request_overhead_s:\n  value: 0.0", "request_overhead_s:\n  value: -0.001"), ">= 0"),
        (("request_overhead_s:\n  value: 0.0", "request_overhead_s:\n  value: 5.0"), "<= 1"),
        (("request_overhead_s:\n  value: 0.0", "request_overhead_s:\n  value: true"), "number"),
        (
            ("  source: 'gpt-fast README", "  fitted: true\n  source: 'gpt-fast README"),
            "exactly one",
        ),
        (("name: gpt-fast", "name: vllm"), "differs from the file's name"),
        (("schema_version: 1", "schema_version: 2"), "schema_version"),
        (("description:", "description: x\ndescription:"), "duplicate"),
        (("schema_version: 1", "schema_version: true"), "schema_version: must be one of 1"),
        (("schema_version: 1", "schema_version: 1.0"), "schema_version: must be one of 1"),
        (("value: true", "value: 1"), "must be true or false"),
        (("recompute:", _FRACTION.format("1.0e-300") + "recompute:"), ">= 0.001"),
        (("recompute:", _FRACTION.format("5.0e-324") + "recompute:"), ">= 0.001"),
        (("recompute:", _FRACTION.format("0.0") + "recompute:"), ">= 0.001"),
        (("recompute:", _FRACTION.format("true") + "recompute:"), "must be a number"),
        (
            (
                _REQUEST,
                _FITTED.format("[no-such-row, ../../etc/passwd]"),
            ),
            "'../../etc/passwd' is no corpus row id",
        ),
        (
            (
                _REQUEST,
                _FITTED.format("[a, a]"),
            ),
            "named twice",
        ),
        (
            (
                _REQUEST,
                _FITTED.format("[7]"),
            ),
            "must be a string",
        ),
    ],
)
def test_a_bad_stack_file_is_refused_in_one_line(change, words):
    text = GOOD.replace(*change, 1)
    assert text != GOOD, change
    with pytest.raises(StackError) as err:
        parse_stack(text, "stacks/gpt-fast.yaml", expect="gpt-fast")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("stacks/gpt-fast.yaml: ")
    assert words in msg


def test_a_fitted_figure_naming_a_row_the_corpus_lacks_is_refused(tmp_path):
    from workbench.fidelity.fits import check_stack_rows
    from workbench.fidelity.schema import CorpusError
    from workbench.hw.stack import patched_stacks

    ids = {r.id for r in load_corpus().rows}
    check_stack_rows(ids)  # every shipped stack's rows are rows of the corpus
    text = GOOD.replace(
        "request_overhead_s:\n  value: 0.0\n  assumption: 'none published: no host time per "
        "request beyond the steps'",
        _FITTED.format("[no-such-row]"),
    )
    with patched_stacks({"gpt-fast": parse_stack(text)}), pytest.raises(CorpusError) as err:
        check_stack_rows(ids)
    assert "gpt-fast.yaml: request_overhead_s.rows: 'no-such-row' is no row" in str(err.value)


def test_a_figure_without_a_source_is_refused():
    text = GOOD.replace(
        "  assumption: 'none published: no host time per request beyond the steps'\n", "", 1
    )
    assert text != GOOD
    with pytest.raises(StackError, match="request_overhead_s: give exactly one of source"):
        parse_stack(text, "stacks/gpt-fast.yaml")
    fitted_no_rows = GOOD.replace(
        "  assumption: 'none published: no host time per request beyond the steps'",
        "  fitted: true",
        1,
    )
    with pytest.raises(StackError, match="names its calibration rows"):
        parse_stack(fitted_no_rows, "stacks/gpt-fast.yaml")


@pytest.mark.parametrize("name", ["no-such-stack", "../hardware/h100-sxm", "/etc/passwd", ""])
def test_an_unknown_stack_name_is_one_line(name):
    if not name:
        assert load_stack(name).name == DEFAULT_STACK  # NOTE: no name: the default stack
        return
    with pytest.raises(StackError, match="is not a known stack") as err:
        load_stack(name)
    assert "\n" not in str(err.value)


def test_every_corpus_row_names_a_shipped_stack():
    names = set(list_stacks())
    for row in load_corpus().rows:
        assert row.stack in names, row.id


def test_every_row_of_a_stack_is_mapped_with_the_same_figures():
    from workbench.fidelity.schema import ModelSetup

    # NOTE: the stack options a row could once set itself are gone from the row schema
    for option in ("step_overhead_s", "gqa_kv_sharing", "attention_dtype"):
        assert option not in ModelSetup.model_fields


def test_a_stack_sets_the_mapping_options():
    trt = load_stack("tensorrt-llm-0.6").map_options()
    assert trt.gqa_kv_sharing is False
    assert trt.step_overhead_s == load_stack("tensorrt-llm-0.6").step_overhead_s.value > 0
    assert trt.launch == "eager"
    fa3 = load_stack("flash-attention-3").map_options()
    assert fa3.attention_kernel == "fa3"
    default = load_stack().map_options()
    assert default.step_overhead_s is None  # NOTE: None = the hardware profile's own
    assert default.launch == "graph"


def _map(capsys, *argv):
    code = main(["map", "--model", "llama2-7b", "--phase", "decode", "--context", "512", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_map_states_its_stack_and_the_default(capsys):
    code, out, _ = _map(capsys)
    assert code == 0
    assert any(x.startswith(f"stack     {DEFAULT_STACK} (default)") for x in out.splitlines())
    code, trt_out, _ = _map(capsys, "--stack", "tensorrt-llm-0.6")
    assert code == 0
    stack_line = next(x for x in trt_out.splitlines() if x.startswith("stack "))
    assert stack_line.split(";")[0] == "stack     tensorrt-llm-0.6"

    def step(text):
        line = next(x for x in text.splitlines() if x.startswith("time"))
        return line

    assert step(trt_out) != step(out)  # a 2.4 ms host step overhead shows in the step time


def test_map_refuses_an_unknown_stack_in_one_line(capsys):
    code, _, err = _map(capsys, "--stack", "no-such-stack")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "not a known stack" in lines[0]


def test_a_published_decode_bandwidth_fraction_slows_decode_only():
    from workbench.fidelity import parse_corpus, reproduce
    from workbench.hw import load_hardware
    from workbench.hw.stack import Fraction, patched_stacks

    text = """schema_version: 1
rows:
- id: decode.example
  category: llm_decode
  split: heldout
  source: "Example vendor page, decode table, row 1"
  source_key: example
  source_tag: V
  hardware: h100-sxm
  stack: vllm
  setup: {kind: decode, model: llama2-7b, batch: 1, seq: 512, dtype: bf16, software: vLLM}
  measured: 7
  unit: ms
  expected_bottleneck: bandwidth
  approximation: "One decode step."
"""
    row = parse_corpus(text).rows[0]
    hw = load_hardware("h100-sxm")
    vllm = load_stack("vllm")
    assert vllm.decode_bandwidth_fraction is None  # NOTE: none published: the profile's own
    base = reproduce(row, hw).time_s
    half = Fraction(value=hw.offchip.sustained_fraction / 2, assumption="a test's half rate")
    with patched_stacks({"vllm": vllm.model_copy(update={"decode_bandwidth_fraction": half})}):
        slow = reproduce(row, hw).time_s
    assert 1.6 * base < slow < 2.0 * base  # bandwidth-bound: about twice as long


def test_the_stacks_command_lists_every_stack_and_the_default(capsys):
    assert main(["stacks"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in out.splitlines()[2:-1]]
    assert names == list_stacks()
    assert f"{DEFAULT_STACK} (default)" in out
    trt = next(line for line in out.splitlines() if line.startswith("tensorrt-llm-0.6 "))
    assert "(f)" in trt  # the fitted step overhead says so
    assert "eager launch" in out.splitlines()[0]
    eager = next(line for line in out.splitlines() if line.startswith("pytorch-eager "))
    assert eager.endswith("20 us (s)")  # the framework's host time per launch, with its origin
    assert trt.endswith("profile")  # a C++ runtime pays the driver's submission alone
    assert main(["stacks", "--format", "json"]) == 0
    assert '"default": "pytorch-compile"' in capsys.readouterr().out


def test_an_attention_row_s_stack_is_the_kernel_its_source_names():
    from workbench.cost.attention_class import class_for_software
    from workbench.fidelity.schema import AttentionSetup

    rows = [r for r in load_corpus().rows if isinstance(r.setup, AttentionSetup)]
    assert rows
    for r in rows:
        named = class_for_software(r.setup.software)
        assert named is not None, r.id
        assert load_stack(r.stack).attention_kernel.value == named, r.id


def _with_training_figures(extra: str) -> str:
    return GOOD.replace("sources:", extra + "sources:", 1)


def test_a_stack_states_its_fusion_and_training_figures():
    tt, compiled = load_stack("torchtitan"), load_stack("torchtitan-compile")
    assert tt.selective_recompute is not None
    assert tt.selective_recompute.value == "every_other_gemm"
    assert set(compiled.map_options().disabled_fusion) < set(tt.map_options().disabled_fusion)
    assert "gemm_epilogue" in load_stack("nemo-megatron").map_options().disabled_fusion
    # NOTE: the default stack changes nothing a hardware profile says.
    assert load_stack().map_options().disabled_fusion == ()
    # NOTE: a row's own fusion switches are kept beside the stack's.
    mine = tt.map_options(MapOptions(disabled_fusion=("layout_fold",)))
    assert "layout_fold" in mine.disabled_fusion
    assert "gemm_epilogue" in mine.disabled_fusion
    slow = load_stack("nemo-megatron").overlap_slowdown
    assert slow is not None
    assert 0 < slow.value < 1
    assert slow.source is not None
    assert "2507.03114" in slow.source


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("disabled_fusion:\n  value: [no_such_rule]\n  assumption: 'a stated assumption'\n",
         "unknown fusion rule"),
        ("selective_recompute:\n  value: everything\n  assumption: 'a stated assumption'\n",
         "selective_recompute"),
        ("overlap_slowdown:\n  value: 1.5\n  assumption: 'a stated assumption'\n", "<= 1"),
        ("overlap_slowdown:\n  value: 0.2\n", "exactly one"),
        ("training_efficiency:\n  value: 0.0\n  assumption: 'a stated assumption'\n",
         "training_efficiency"),
        ("training_efficiency:\n  value: 1.2\n  assumption: 'a stated assumption'\n", "<= 1"),
    ],
)  # fmt: skip
def test_a_bad_training_figure_is_refused_in_one_line(extra, words):
    with pytest.raises(StackError, match=words) as err:
        parse_stack(_with_training_figures(extra), "stacks/gpt-fast.yaml")
    assert "\n" not in str(err.value)


def _prefill_row(stack: str):
    from workbench.fidelity import parse_corpus

    text = f"""schema_version: 1
rows:
- id: ttft.example
  category: llm_prefill_ttft
  split: heldout
  source: "Example vendor page, first-token latency table, row 1"
  source_key: example
  source_tag: V
  hardware: h100-sxm
  stack: {stack}
  setup: {{kind: prefill, model: llama2-7b, batch: 2, seq: 512, dtype: bf16, software: x}}
  measured: 30
  unit: ms
  expected_bottleneck: compute
  approximation: "One prefill."
"""
    return parse_corpus(text).rows[0]


@pytest.mark.parametrize(("stack", "rows"), [("tensorrt-llm-0.5", 2), ("gpt-fast", 2 * 512)])
def test_a_prefill_computes_the_logits_its_stack_says(monkeypatch, stack, rows):
    import importlib

    from workbench.hw import load_hardware

    mod = importlib.import_module("workbench.fidelity.reproduce")
    graphs = []
    real = mod.map_model

    def spy(graph, hw, options):
        graphs.append(graph)
        return real(graph, hw, options)

    monkeypatch.setattr(mod, "map_model", spy)
    mod.reproduce(_prefill_row(stack), load_hardware("h100-sxm"))
    (head,) = [op for g in graphs for op in g.ops if op.name == "lm_head"]
    # NOTE: TensorRT-LLM gathers each sequence's last hidden state before the LM head (its
    # stack's prefill_logits: last); gpt-fast's prefill runs the head on every position.
    assert head.m == rows


def test_prefill_logits_is_refused_unless_last_or_all():
    bad = GOOD.replace(
        "sources:", "prefill_logits: {value: first, assumption: 'a test value'}\nsources:", 1
    )
    with pytest.raises(StackError):
        parse_stack(bad, "bad.yaml")
