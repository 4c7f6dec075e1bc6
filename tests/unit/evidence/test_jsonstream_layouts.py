"""The layouts trace writers use decode in batches, and give json.loads' answer in every case.

PyTorch's profiler spreads each event over several lines (``args`` indented); other writers put
one event on a line, end lines with ``\\r\\n``, or write the whole document on one line
(``json.dump``, with or without spaces after separators). The streaming parser decodes the
events of a buffer in one call in each of these layouts, and falls back to one element at a time
(same answer) where a cut would fall inside an event.
"""

from __future__ import annotations

import json

import pytest

from workbench.evidence._jsonstream import ChromeTraceStream


def _kineto_event(n: int) -> str:
    """An event as PyTorch's profiler writes it (``libkineto/src/output_json.cpp``)."""
    return (
        '  {\n    "ph": "X", "cat": "kernel", "name": "void gemm<\\"},\\">", "pid": 0, '
        f'"tid": 7,\n    "ts": {1661938466265032 + n}, "dur": 25,\n    "args": {{\n'
        f'      "External id": {n}, "grid": [1, 2, 3],\n      "Input Dims": [[], [4, 5]]\n'
        "    }\n  }"
    )


def _document(events: list[str], newline: str = "\n") -> str:
    text = '{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + ",\n".join(events) + "\n]}\n"
    return text.replace("\n", newline)


def _one_line(separators: tuple[str, str]) -> str:
    """The document on one line; every event's strings hold the separator of two events."""
    comma, _ = separators
    events = [
        {"ph": "X", "name": f"k{n}}}{comma}{{", "args": {"s": f'}}{comma}{{"x'}, "n": n}
        for n in range(300)
    ]
    doc = {"schemaVersion": 1, "traceEvents": events, "after": [{"a": 1}, {"b": 2}]}
    return json.dumps(doc, separators=separators)


#: PyTorch's layout; one event a line; Windows line ends; lists of objects spread over lines
#: inside an event (a ``},`` at a line end that is no event's end); the whole document on one
#: line, compact and spaced.
LAYOUTS = {
    "pytorch": _document([_kineto_event(n) for n in range(300)]),
    "one a line": _document(
        [json.dumps({"ph": "X", "n": n, "a": {"b": "},"}}) for n in range(300)]
    ),
    "crlf": _document([_kineto_event(n) for n in range(300)], "\r\n"),
    "nested": _document(
        [_kineto_event(n) if n % 7 else '{"a": [\n{"b": 1},\n{"c": 2}\n]}' for n in range(300)]
    ),
    "compact": _one_line((",", ":")),
    "spaced": _one_line((", ", ": ")),
    "nested compact": _document(
        [json.dumps({"n": n, "a": [{"b": 1}, {"c": 2}, {"d": 3}, {"e": 4}]}) for n in range(300)]
    ).replace("\n", ""),
}


def _parse(text: str, size: int) -> tuple[list, int]:
    """The events, and how many were decoded one by one (not in a batch)."""
    chunks = iter([text[i : i + size] for i in range(0, len(text), size)])
    stream = ChromeTraceStream(chunks, "doc", lambda key, value: None)
    one_by_one = 0
    decode = stream._value

    def counted(what: str):
        nonlocal one_by_one
        one_by_one += what.startswith("traceEvents[")
        return decode(what)

    stream._value = counted  # type: ignore[method-assign]
    return list(stream.events()), one_by_one


@pytest.mark.parametrize("size", [1, 13, 500, 4096, 1 << 20])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_gives_json_loads_answer(layout, size):
    events, _ = _parse(LAYOUTS[layout], size)
    assert events == json.loads(LAYOUTS[layout])["traceEvents"]


@pytest.mark.parametrize(
    "layout", ["pytorch", "one a line", "crlf", "compact", "spaced", "nested compact"]
)
def test_events_of_a_buffer_decode_in_one_call(layout):
    """At most a few events a buffer are decoded one by one (the one cut by the buffer's end)."""
    text = LAYOUTS[layout]
    events, one_by_one = _parse(text, 4096)
    buffers = len(text) // 4096 + 1
    assert len(events) == 300
    assert one_by_one <= 2 * buffers < len(events) / 2


#: Values msgspec's decoder refuses and ``json`` reads, or reads where ``json`` could differ.
TRICKY = [
    '{"ts": NaN}',
    '{"ts": Infinity, "dur": -Infinity}',
    '{"ts": 1e400}',
    '{"id": 18446744073709551616, "b": -9223372036854775809}',
    '{"s": "\\ud800"}',
    '{"a": 1, "b": 2, "a": 3}',
    '{"z": -0.0, "f": 2.4703282292062328e-324, "g": 0.30000000000000004}',
    '{"deep": ' + "[" * 500 + "]" * 500 + "}",
]


@pytest.mark.parametrize("event", TRICKY)
def test_batches_give_json_loads_values(event):
    text = '{"traceEvents": [' + ",\n".join([event] * 3 + ['{"b": 1}']) + "]}"
    events, one_by_one = _parse(text, 1 << 20)
    assert repr(events) == repr(json.loads(text)["traceEvents"])
    assert one_by_one == 1  # the three in one batch; the last has no cut after it
