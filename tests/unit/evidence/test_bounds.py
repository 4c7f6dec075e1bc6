"""Bad traces (issue 17): physical bounds, huge numbers, long and many names, escaped text."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest

from workbench.errors import printable
from workbench.evidence import TraceError, read_trace
from workbench.evidence import _jsonstream as jsonstream
from workbench.evidence._bounds import MAX_NAME_CHARS

DAY_US = 86_400e6


def events(kernel="k_gemm", dur="5", ts="100", extra=()):
    """A one-step trace: a step window, a launch and one kernel (``dur``/``ts`` as JSON text)."""
    return [
        '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 90, "dur": 30}',
        '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 95, "dur": 1, '
        '"args": {"correlation": 1}}',
        f'{{"ph": "X", "cat": "kernel", "name": {json.dumps(kernel)}, "ts": {ts}, "dur": {dur}, '
        '"args": {"device": 0, "stream": 7, "correlation": 1}}',
        *extra,
    ]


def write(tmp_path, evs, meta="", name="t.json"):
    path = tmp_path / name
    path.write_text('{"schemaVersion": 1, ' + meta + '"traceEvents": [' + ", ".join(evs) + "]}")
    return path


def refused(path, match):
    with pytest.raises(TraceError, match=match) as info:
        read_trace(path)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    ("dur", "match"),
    [
        ("1e300", r"traceEvents\[2\] 'k_gemm' lasts 1e\+294 s \(.* years\), longer than a day"),
        ("1.7e308", r"traceEvents\[2\] 'k_gemm' lasts 1\.7e\+302 s"),
        ("-5", r"clock skew at traceEvents\[2\]"),
        (str(int(2 * DAY_US)), r"traceEvents\[2\] 'k_gemm' lasts 1\.73e\+05 s \(2 days\)"),
        ("1" + "0" * 399, r"traceEvents\[2\] 'k_gemm': 'dur' is an integer of 400 digits"),
        ("1" + "0" * 4999, r"traceEvents\[2\] 'k_gemm' holds an integer of thousands of digits"),
        ("Infinity", r"traceEvents\[2\] has no finite numeric 'dur'"),
    ],
)
def test_impossible_durations_name_the_event(tmp_path, dur, match):
    refused(write(tmp_path, events(dur=dur)), match)


@pytest.mark.parametrize("ts", ["-1.7e308", "1.7e308", "1e18"])
def test_timestamps_off_any_clock_are_refused(tmp_path, ts):
    refused(write(tmp_path, events(ts=ts)), r"traceEvents\[2\] 'k_gemm': 'ts' is .*any clock")


def test_a_timestamp_that_jumps_by_years_names_both_events(tmp_path):
    late = (
        '{"ph": "X", "cat": "kernel", "name": "late\\u001b[2J", "ts": 3.2e13, "dur": 5, '
        '"args": {"device": 0, "stream": 7}}'
    )
    msg = refused(write(tmp_path, events(extra=[late])), r"traceEvents\[3\] 'late\\x1b\[2J'")
    assert "1.01 years from traceEvents[0] 'ProfilerStep#1'" in msg
    assert "\x1b" not in msg


def test_a_trace_longer_than_a_day_is_refused(tmp_path):
    ts = f"{1.5 * DAY_US:.0f}"
    later = f'{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": {ts}, "dur": 1}}'
    refused(write(tmp_path, events(extra=[later])), r"lies 1\.5 days from .*never more than a day")


def test_a_kernel_longer_than_the_recorded_window_is_refused(tmp_path):
    span = (
        '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", '
        '"tid": "PyTorch Profiler", "ts": 80, "dur": 60}'
    )
    path = write(tmp_path, events(dur="5000000", extra=[span]))
    refused(path, r"traceEvents\[2\] 'k_gemm' lasts 5 s, longer than the 6e-05 s window")
    end = '{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 130}'
    ok = write(tmp_path, events(extra=[span, end]), name="ok.json")
    assert read_trace(ok).kernels[0].duration_s == pytest.approx(5e-6)


@pytest.mark.parametrize(
    ("where", "match"),
    [
        ('"args": {"device": 0, "correlation": 1%s}', r"args\['correlation'\] is an integer of 31"),
        ('"pid": 1%s, "args": {"device": 0}', r"pid is an integer of 31 digits"),
        ('"tid": -1%s, "args": {"device": 0}', r"tid is an integer of 31 digits"),
        ('"args": {"device": 0, "grid": [1, 1%s, 1]}', r"args\['grid'\] is an integer of 31"),
        ('"args": {"stream": 7, "x": [-1%s]}', r"args\['x'\] is an integer of 31"),
    ],
)
def test_ids_beyond_64_bits_are_refused(tmp_path, where, match):
    kernel = '{"ph": "X", "cat": "kernel", "name": "k", "ts": 100, "dur": 5, ' + where + "}"
    evs = [*events()[:2], kernel % ("0" * 30)]
    refused(write(tmp_path, evs), r"traceEvents\[2\] 'k': " + match)


def test_names_are_escaped_in_the_run_and_its_record(tmp_path):
    hostile = "\x1b[31mred\x1b[0m\nnext\u202eevil"
    device = json.dumps("GPU\x1b]0;x\x07")
    meta = f'"deviceProperties": [{{"id": 0, "name": {device}}}], '
    run = read_trace(write(tmp_path, events(kernel=hostile), meta=meta))
    assert run.kernels[0].name == printable(hostile) == "\\x1b[31mred\\x1b[0m\\nnext\\u202eevil"
    assert run.tag("device") == "GPU\\x1b]0;x\\x07"


def test_long_names_are_cut_with_one_warning(tmp_path):
    long_a, long_b = "a" * (3 * MAX_NAME_CHARS), "b" * (MAX_NAME_CHARS + 1)
    extra = [e.replace("k_gemm", long_b).replace("100", "110") for e in events()[2:]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = read_trace(write(tmp_path, events(kernel=long_a, extra=extra)))
    assert {len(k.name) for k in run.kernels} == {MAX_NAME_CHARS}
    texts = [str(w.message) for w in caught if "cut" in str(w.message)]
    assert len(texts) == 1
    assert f"longer than {MAX_NAME_CHARS} characters are cut" in texts[0]
    assert f"traceEvents[2], {3 * MAX_NAME_CHARS} characters" in texts[0]


def test_repeated_names_are_interned(tmp_path):
    evs = events()[:1]
    for i in range(200):
        evs.append(
            f'{{"ph": "X", "cat": "kernel", "name": "k{i % 4}", "ts": {95 + i * 0.1:.1f}, '
            '"dur": 0.05, "args": {"device": 0, "stream": 7}}'
        )
    run = read_trace(write(tmp_path, evs))
    assert len({id(k.name) for k in run.kernels}) == 4


def test_a_long_string_is_decoded_in_linear_time(tmp_path, monkeypatch):
    """One 16 MiB name in a gzip: the text decoded over every retry stays a small multiple of
    the document (~3x; it was chunks x size / 2, ~8x here and quadratic, when each 1 MiB chunk
    retried the value from its start)."""
    scanned = []
    decode = jsonstream._DECODER.raw_decode

    def counting(text, pos):
        scanned.append(len(text) - pos)
        return decode(text, pos)

    monkeypatch.setattr(jsonstream._DECODER, "raw_decode", counting)
    size = 16 * 2**20
    path = tmp_path / "long.json.gz"
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents": [' + ", ".join(events(kernel="x" * size)) + "]}")
    with pytest.warns(RuntimeWarning, match="cut to that length"):
        assert len(read_trace(path).kernels[0].name) == MAX_NAME_CHARS
    assert len(scanned) < 40
    assert sum(scanned) < 4 * size


def _nsys(tmp_path, name="k", duration_s=1e-3, start_s=1.0, late_s=None):
    from workbench.evidence import MeasuredKernel, write_nsys_sqlite

    ks = [MeasuredKernel(name=name, category="gemm", rule="", start_s=start_s,
                         duration_s=duration_s, device=0, stream=7, iteration=0)]  # fmt: skip
    if late_s is not None:
        ks.append(MeasuredKernel(name="late", category="gemm", rule="", start_s=late_s,
                                 duration_s=1e-3, device=0, stream=7, iteration=0))  # fmt: skip
    return write_nsys_sqlite(tmp_path / "t.sqlite", ks)


def test_nsys_rows_are_bounded_and_escaped(tmp_path):
    refused(_nsys(tmp_path, duration_s=2 * 86_400.0), r"KERNEL row 1 lasts 1\.73e\+05 s")
    refused(_nsys(tmp_path, late_s=5 * 86_400.0), r"KERNEL row 2 lies 5 days from .*row 1")
    run = read_trace(_nsys(tmp_path, name="k\x1b[2J\n"))
    assert run.kernels[0].name == "k\\x1b[2J\\n"


@pytest.mark.parametrize("key", ["args", "top"])
def test_a_huge_integer_in_a_key_no_reader_reads_is_still_refused(tmp_path, key):
    """The typed decode skips keys no reader reads; a 5,000-digit integer there is named as
    before (``json`` refuses it wherever it stands)."""
    from workbench.evidence import read_trace_and_operators

    huge = "1" + "0" * 4999
    where = f'"args": {{"Call stack": {huge}}}' if key == "args" else f'"Ev Idx": {huge}'
    op = f'{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 94, "dur": 3, {where}}}'
    path = write(tmp_path, [op, *events()])
    refused(path, r"traceEvents\[0\] 'aten::mm' holds an integer of thousands of digits")
    with pytest.raises(TraceError, match="thousands of digits"):
        read_trace_and_operators(path)
