"""The streaming Chrome-trace parser gives json.loads' answer whatever the chunk boundaries."""

from __future__ import annotations

import json

import pytest

from workbench.evidence import TraceError, read_trace
from workbench.evidence._jsonstream import ChromeTraceStream

DOC = (
    '{"schemaVersion": 1, "flag": true, "none": null, "off": false, "big": -1.5e+300,'
    ' "neg": -Infinity, "traceEvents": [ {"a": "x\\"y\\u00e9", "b": [1, 2.25e-3, -7]} ,'
    '{"t": true, "f": false, "n": null}, 12345678901234567890, "s"] , "tail": {"k": [ ]}}'
)


def _parse(text: str, size: int):
    chunks = iter([text[i : i + size] for i in range(0, len(text), size)])
    meta: dict = {}
    events = list(ChromeTraceStream(chunks, "doc", meta.__setitem__).events())
    return meta, events


@pytest.mark.parametrize("size", range(1, 24))
def test_every_chunk_size_gives_json_loads_answer(size):
    expected = json.loads(DOC)
    meta, events = _parse(DOC, size)
    assert events == expected.pop("traceEvents")
    assert meta == expected


@pytest.mark.parametrize("cut", range(1, len(DOC)))
def test_every_truncation_is_a_trace_error(cut):
    with pytest.raises(TraceError, match="truncated"):
        _parse(DOC[:cut], 5)


def test_extra_data_after_the_document():
    with pytest.raises(TraceError, match="extra data"):
        _parse(DOC + " {}", 8)


def test_a_byte_order_mark_is_accepted(tmp_path):
    doc = '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": 2}]}'
    (tmp_path / "bom.json").write_text("\ufeff" + doc, encoding="utf-8")
    assert read_trace(tmp_path / "bom.json").kernels[0].category == "gemm"


def test_non_utf8_bytes_are_one_clear_error(tmp_path):
    (tmp_path / "bin.json").write_bytes(b'{"traceEvents": ["\xff\xfe"]}')
    with pytest.raises(TraceError, match="not UTF-8"):
        read_trace(tmp_path / "bin.json")


#: One event per line (as Kineto writes), then events spread over lines, a trailing element that
#: is not an object, and the array's end on the last event's line.
LINES = (
    '{"schemaVersion": 1, "traceEvents": [\n'
    + ",\n".join(json.dumps({"ph": "X", "name": f"k{n}", "s": "a\\nb"}) for n in range(40))
    + ',\n{"ph": "X",\n "name": "spread",\n "ts": 2}\n, {"x": [1,\n2]},\n'
    + ",\n".join(json.dumps({"n": n}) for n in range(5))
    + ', 7]\n, "after": {"k": 1}}\n'
)  # fmt: skip


@pytest.mark.parametrize("size", [1, 7, 64, 333, 4096, len(LINES)])
def test_line_batches_give_json_loads_answer(size):
    expected = json.loads(LINES)
    meta, events = _parse(LINES, size)
    assert events == expected.pop("traceEvents")
    assert meta == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"traceEvents": [\n{"a": 1},\n{"b": 2},\n]}\n', r"truncated JSON inside .*\[2\]"),
        ('{"traceEvents": [\n{"a": 1},\n{"b": 2}\n{"c": 3}\n]}\n', r"after traceEvents\[1\]"),
        ('{"traceEvents": [\n{"a": 1},\n{"b": tru},\n{"c": 3}\n]}\n', r"in .*\[1\] \(Expecting"),
    ],
)
def test_a_bad_element_among_lines_reads_as_one_by_one(text, message):
    with pytest.raises(TraceError, match=message):
        _parse(text, 4096)  # the messages the element-by-element reader gives
