"""Every JSON layout of a real trace reads to the same run and operators, in one pass.

The three traces of ``tests/data/hta`` (Holistic Trace Analysis's test data) are written as
PyTorch's profiler wrote them (events spread over indented lines), as compact one-line JSON
(``json.dumps(obj, separators=(",", ":"))``, what many tools write), one line with ``json.dump``'s
default separators, with Windows line ends, and gzip-compressed; each must give the same measured
run and the same operators. Bad documents in the compact layout get one line naming the file.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from workbench.evidence import TraceError, read_trace, read_trace_and_operators
from workbench.evidence.operators import read_operators

HTA = Path(__file__).parents[2] / "data" / "hta"
SMALL = "alexnet_a100.json.gz"
#: The DLRM traces (35 MB of JSON each) take seconds a layout.
TRACES = (
    SMALL,
    pytest.param("dlrm_a100.json.gz", marks=pytest.mark.slow),
    pytest.param("dlrm_v100_rank1.json.gz", marks=pytest.mark.slow),
)


def _layouts(text: str, *, every: bool) -> dict[str, bytes]:
    """The trace's text in each layout, as the bytes of a file (``every``: two more)."""
    doc = json.loads(text)
    compact = json.dumps(doc, separators=(",", ":"))
    layouts = {
        "compact": compact.encode(),
        "crlf": text.replace("\n", "\r\n").encode(),
        "compact.gz": gzip.compress(compact.encode(), compresslevel=1),
    }
    if every:
        layouts |= {"indented": text.encode(), "spaced": json.dumps(doc).encode()}
    return layouts


def _same_source(run, source):
    return dataclasses.replace(run, source=source)


def _write_layouts(name: str, folder: Path) -> dict[str, Path]:
    """Each layout of trace ``name`` written in ``folder`` (the DLRM ones: three of them)."""
    text = gzip.decompress((HTA / name).read_bytes()).decode()
    paths = {}
    for layout, data in _layouts(text, every=name == SMALL).items():
        paths[layout] = folder / f"trace.{layout}.json"
        paths[layout].write_bytes(data)
    return paths


@pytest.mark.parametrize("name", TRACES)
def test_every_layout_reads_to_the_same_run_and_operators(tmp_path, name):
    run, ops = read_trace_and_operators(HTA / name)  # gzip, indented as PyTorch wrote it
    assert run.kernels
    assert ops.ops
    for layout, path in _write_layouts(name, tmp_path).items():
        got_run, got_ops = read_trace_and_operators(path)
        assert _same_source(got_run, run.source) == run, layout
        assert got_ops == ops, layout


def test_one_pass_gives_what_the_two_readers_give(tmp_path):
    paths = _write_layouts(SMALL, tmp_path)
    for path in (HTA / SMALL, paths["compact"]):
        run, ops = read_trace_and_operators(path)
        assert run == read_trace(path)
        assert ops == read_operators(path)


@pytest.fixture(scope="module")
def compact_text():
    text = gzip.decompress((HTA / SMALL).read_bytes()).decode()
    return json.dumps(json.loads(text), separators=(",", ":"))


@pytest.mark.parametrize("fraction", [0.0001, 0.01, 0.3, 0.5, 0.77, 0.999])
def test_a_truncated_compact_trace_is_one_line_naming_the_file(tmp_path, compact_text, fraction):
    path = tmp_path / "cut.json"
    path.write_text(compact_text[: int(len(compact_text) * fraction)])
    with pytest.raises(TraceError, match="truncated JSON") as info:
        read_trace_and_operators(path)
    _one_line_naming(str(info.value), path)


@pytest.mark.parametrize(
    ("garbage", "message"),
    [
        (lambda t: t.replace('"ph":"X"', '"ph":X', 1), "malformed JSON"),
        (lambda t: t.replace("},{", "}{", 1), "malformed JSON"),
        (lambda t: t.replace("},{", "},,{", 1), "malformed JSON"),
        (lambda t: t + "garbage", "extra data"),
        (lambda t: t[: len(t) // 2] + "\x00" + t[len(t) // 2 :], "malformed JSON"),
        (lambda t: '"a string"', "not a trace this reads"),
        (lambda t: "[42]", "not an object"),
        (lambda t: '{"schemaVersion":1}', "no 'traceEvents' array"),
        (lambda t: t.replace('"traceEvents":[', '"traceEvents":{"x":[', 1), "not an array"),
    ],
)
def test_a_bad_compact_trace_is_one_line_naming_the_file(tmp_path, compact_text, garbage, message):
    path = tmp_path / "bad.json"
    path.write_text(garbage(compact_text))
    with pytest.raises(TraceError, match=message) as info:
        read_trace_and_operators(path)
    _one_line_naming(str(info.value), path)


def _one_line_naming(message: str, path: Path) -> None:
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    assert "\r" not in message
