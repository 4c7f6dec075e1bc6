"""Bad profiler traces through ``workbench run --from-trace`` (issue 17).

Every generated trace either becomes a record that ``load_record`` reads back, with finite
figures and no raw control character anywhere in what was printed or written, or is refused in
one line naming the file, with nothing written. Cases are generated on the fly and stay small.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from fuzz_contract import HOSTILE_TEXT, assert_contract, assert_sane_numbers, fresh, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.review.records.store import load_record

_RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
#: Values as JSON text (so 5,000-digit integers and NaN literals can be written as they appear).
NUMBERS = (
    "1e300", "-1e300", "1.7e308", "-1.7e308", "1e999", "-5", "0", "-0.0", "3.5",
    "1" + "0" * 400, "-" + "1" * 400, "1" + "0" * 5000, str(2**63), str(2**64 + 1),
    "NaN", "Infinity", "-Infinity", "true", "null", '"12"', "[]", "{}", "8.64e10", "8.64e12",
)  # fmt: skip
NAMES = (
    *HOSTILE_TEXT,
    "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "line\nbreak", "cr\rreturn", "\x00nul", "\u202eevil",
    "\x9b2J", "a" * 70_000, "", " ", "k" * 3000,
)  # fmt: skip
FIELDS = ("ts", "dur", "pid", "tid", "args.device", "args.stream", "args.correlation",
          "args.grid", "args.bytes", "step.ts", "step.dur", "launch.ts")  # fmt: skip


def _events(kernel: dict[str, str]) -> list[str]:
    """A two-step trace, one kernel a step; ``kernel`` overrides step 1's fields (JSON text)."""
    first = {"ts": "100", "dur": "5", "pid": "0", "tid": "7", "args.device": "0",
             "args.stream": "7", "args.correlation": "1", "args.grid": "[1, 1, 1]",
             "args.bytes": "null", "step.ts": "90", "step.dur": "30", "launch.ts": "95",
             "name": '"sm90_xmma_gemm_bf16"'}  # fmt: skip
    second = {**first, "ts": "140", "step.ts": "130", "launch.ts": "135", "args.correlation": "2"}
    first.update(kernel)
    out = []
    for step, f in ((1, first), (2, second)):
        args = ", ".join(f'"{k[5:]}": {v}' for k, v in f.items() if k.startswith("args."))
        out += [
            f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", '
            f'"ts": {f["step.ts"]}, "dur": {f["step.dur"]}}}',
            f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", '
            f'"ts": {f["launch.ts"]}, "dur": 1, "args": {{"correlation": {step}}}}}',
            f'{{"ph": "X", "cat": "kernel", "name": {f["name"]}, "ts": {f["ts"]}, '
            f'"dur": {f["dur"]}, "pid": {f["pid"]}, "tid": {f["tid"]}, "args": {{{args}}}}}',
        ]
    return out


def _write(folder: Path, events: list[str], device: str = '"NVIDIA H100 80GB HBM3"') -> Path:
    path = fresh(folder, "trace.json")
    meta = f'"deviceProperties": [{{"id": 0, "name": {device}}}], '
    path.write_text('{"schemaVersion": 1, ' + meta + '"traceEvents": [' + ", ".join(events) + "]}")
    return path


def _check(folder: Path, trace: Path) -> None:
    before = trace.read_bytes()
    record = fresh(folder, "run.json")
    outcome = assert_contract(
        run_cli("run", "--from-trace", str(trace), "--record", str(record)),
        names=(str(trace),),
        outputs=(record,),
    )
    assert trace.read_bytes() == before
    assert not _RAW_CONTROL.search(outcome.out + outcome.err), (outcome.out, outcome.err)
    if outcome.code == 0:
        loaded = load_record(record)  # NOTE: whatever the tool writes, it reads back
        assert math.isfinite(loaded.model.time_s)
        assert loaded.model.time_s > 0
        doc = json.loads(record.read_text())
        assert_sane_numbers(doc)
        for k in doc["kernels"]:
            assert not _RAW_CONTROL.search(k["name"]), k["name"]
            assert len(k["name"]) <= 64 * 1024


@pytest.mark.parametrize("value", NUMBERS)
@pytest.mark.parametrize("field", FIELDS)
def test_hostile_numbers_in_every_field(tmp_path, field, value):
    _check(tmp_path, _write(tmp_path, _events({field: value})))


@pytest.mark.parametrize("name", NAMES, ids=range(len(NAMES)))
def test_hostile_kernel_and_device_names(tmp_path, name):
    _check(tmp_path, _write(tmp_path, _events({"name": json.dumps(name)}), json.dumps(name)))


@pytest.mark.parametrize("jump_us", [8.64e10 + 1000, 3.2e13, 1e16, -3.2e13])
def test_timestamps_that_jump(tmp_path, jump_us):
    late = (
        f'{{"ph": "X", "cat": "kernel", "name": "late", "ts": {jump_us!r}, "dur": 5, '
        '"args": {"device": 0, "stream": 7}}'
    )
    trace = _write(tmp_path, [*_events({}), late])
    outcome = run_cli("run", "--from-trace", str(trace), "--record", str(tmp_path / "r.json"))
    assert_contract(outcome, names=("'late'",), outputs=(tmp_path / "r.json",))
    assert outcome.code == 2


@given(
    overrides=st.dictionaries(st.sampled_from(FIELDS), st.sampled_from(NUMBERS), max_size=3),
    name=st.one_of(st.sampled_from(NAMES), st.text(max_size=20)),
)
def test_random_combinations(tmp_path, overrides, name):
    _check(tmp_path, _write(tmp_path, _events({**overrides, "name": json.dumps(name)})))


@settings(max_examples=25, deadline=None)
@given(
    kernels=st.lists(
        st.tuples(
            st.floats(0, 1000, allow_nan=False), st.floats(0, 300, allow_nan=False),
            st.sampled_from((7, 8)),
        ),
        min_size=1, max_size=12,
    )
)  # fmt: skip
def test_kernels_on_one_stream_are_never_counted_twice(tmp_path, kernels):
    """Kernels that overlap on one stream: the stream's total never exceeds its busy span."""
    from workbench.evidence import read_trace

    events = [
        {"ph": "X", "cat": "kernel", "name": f"volta_sgemm_{i}", "pid": 0, "tid": s, "ts": ts,
         "dur": dur, "args": {"correlation": i + 1, "stream": s, "device": 0}}
        for i, (ts, dur, s) in enumerate(kernels)
    ]  # fmt: skip
    path = fresh(tmp_path, "t.json")
    path.write_text(json.dumps({"traceEvents": events}))
    assert_contract(run_cli("trace", str(path)))
    run = read_trace(path)
    for stream in (7, 8):
        spans = sorted((ts, ts + dur) for ts, dur, s in kernels if s == stream)
        busy, end = 0.0, float("-inf")
        for lo, hi in spans:  # the union of the stream's intervals, us
            busy += max(hi - max(lo, end), 0.0)
            end = max(end, hi)
        total = sum(k.duration_s for k in run.kernels if k.stream == stream)
        assert total <= busy * 1e-6 * (1 + 1e-9) + 1e-15, (stream, total, busy)
