"""Bad input to the corpus (issue 19): every case is one CorpusError line, never a crash."""

import pytest

from workbench.fidelity import CorpusError, parse_corpus

GEMM = "{kind: gemm, m: 4096, n: 4096, k: 4096, dtype: bf16, software: cuBLAS}"
DECODE = "{kind: decode, model: llama2-7b, batch: 1, seq: 128, dtype: bf16, software: vLLM}"
CNN = "{kind: cnn, model: resnet50, batch: 8, dtype: bf16, software: TensorRT}"
ROW = f"""
- id: row.example
  category: gemm
  split: heldout
  source: "Example paper, Table 1, row 2"
  source_key: example
  source_tag: V
  hardware: h100-sxm
  setup: {GEMM}
  measured: 700
  unit: TFLOP/s
  expected_bottleneck: compute
  approximation: "One Linear through the mapper."
"""


def _doc(*changes: tuple[str, str]) -> str:
    row = ROW
    for old, new in changes:
        assert old in row
        row = row.replace(old, new)
    return "schema_version: 1\nrows:\n" + row


def _decode(setup: str) -> str:
    return _doc((GEMM, setup), ("TFLOP/s", "ms"), ("category: gemm", "category: llm_decode"))


def test_the_example_row_parses():
    assert parse_corpus(_doc()).rows[0].id == "row.example"
    assert parse_corpus(_decode(DECODE)).rows[0].setup.kind == "decode"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (_doc(("  measured: 700", "  ? [a, b]\n  : 1\n  measured: 700")), "mapping key"),
        # NOTE: the shared strict loader stops at its depth limit before Python's recursion one
        ("schema_version: 1\nrows: " + "[" * 1200 + "]" * 1200, "nested deeper than 32"),
        (
            _doc(("  unit:", "  note: " + "[" * 30 + "]" * 30 + "\n  unit:")),
            "nested deeper",
        ),
        (_doc(("m: 4096", "m: " + str(10**30))), "beyond the largest"),
        (_doc(("measured: 700", "measured: 1e300")), "beyond the largest"),
        (_doc(("measured: 700", "measured: .nan")), "not a finite number"),
        (_doc(("m: 4096", "m: true")), "boolean, not a number"),
        (_doc(("measured: 700", "measured: false")), "boolean, not a number"),
        (_doc(("measured: 700", "measured: 1:30")), "base-60"),
        (_decode(DECODE.replace("batch: 1", "batch: 1, tensor_parallel: 1000")), "tensor_parallel"),
        # NOTE: stack options belong to stacks/*.yaml, never to a row (issue 19)
        (_decode(DECODE.replace("batch: 1", "batch: 1, step_overhead_s: 5.0")), "step_overhead_s"),
        (_decode(DECODE.replace("batch: 1", "batch: 1, gqa_kv_sharing: false")), "gqa_kv_sharing"),
        (
            _doc(("hardware: h100-sxm", "hardware: h100-sxm\n  stack: no-such-stack")),
            "not a known stack",
        ),
        (
            _doc(("hardware: h100-sxm", "hardware: h100-sxm\n  stack: ../stacks/vllm")),
            "not a known stack",
        ),
        (_decode(DECODE.replace("batch: 1", "batch: 1, recompute: 0.5")), "does not use recompute"),
        (
            _doc((GEMM, CNN.replace("batch: 8", "batch: 8, seq: 7")), ("TFLOP/s", "images/s")),
            "does not use seq",
        ),
        (_doc(("hardware: h100-sxm", "hardware: no-such-chip")), "not a known profile"),
        (_doc(("hardware: h100-sxm", "hardware: ../../../etc/passwd")), "not a known profile"),
        (_doc(("hardware: h100-sxm", "hardware: /tmp/x.yaml")), "not a known profile"),
    ],
)
def test_bad_input_is_one_line(text, words):
    with pytest.raises(CorpusError) as err:
        parse_corpus(text)
    msg = str(err.value)
    assert words in msg
    assert "\n" not in msg


def test_a_quoted_time_is_text_not_ninety():
    # "1:30" quoted is a string: in a numeric field it is refused by the schema, not read as 90
    with pytest.raises(CorpusError, match="measured"):
        parse_corpus(_doc(("measured: 700", 'measured: "1:30"')))
