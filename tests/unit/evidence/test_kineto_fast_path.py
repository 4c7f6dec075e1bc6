"""The Kineto reader's one-pass fast path reads every event exactly as the checked path does.

:meth:`EventReader.take` reads the common event shapes in one pass and hands the rest to
:meth:`EventReader.take_checked`, which holds every message a bad event gets. Here each kind of
event, its names already seen (so the fast path may take it), gets a hostile value in each field
in turn; both paths must end in the same state or fail with the same message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from workbench.evidence import TraceError, read_trace
from workbench.evidence._jsonstream import TraceEvent, _decode_batch
from workbench.evidence._kineto_events import EventReader

_KERNEL_ARGS = (
    '{"External id": 11, "queued": 0, "device": 0, "context": 1, "stream": 7, '
    '"correlation": 11, "registers per thread": 168, "shared memory": 65536, '
    '"blocks per SM": 1.2, "warps per SM": 9.6, "grid": [132, 4, 1], "block": [256, 1, 1], '
    '"est. achieved occupancy %": 12}'
)
#: Events as Kineto writes them (JSON text): each is read twice, its second time with a field
#: replaced by a hostile value.
TEMPLATES = {
    "kernel": '{"ph": "X", "cat": "kernel", "name": "k_gemm", "pid": 0, "tid": 7, '
    f'"ts": 100.5, "dur": 40.25, "args": {_KERNEL_ARGS}}}',
    "old kernel": '{"ph": "X", "cat": "Kernel", "name": "k_old", "pid": 1, "tid": 9, '
    '"ts": 130, "dur": 4, "args": {"device": 1, "stream": 9, "correlation": 12}}',
    "memcpy": '{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, '
    '"ts": 140.0, "dur": 8.0, "args": {"device": 0, "stream": 7, "correlation": 13, '
    '"bytes": 4194304, "memory bandwidth (GB/s)": 52.4}}',
    "memset": '{"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, '
    '"ts": 150.0, "dur": 1.0, "args": {"device": 0, "stream": 7, "correlation": 14}}',
    "launch": '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, '
    '"tid": 100, "ts": 95.5, "dur": 4.0, "args": {"External id": 11, "cbid": 211, '
    '"correlation": 11}}',
    "driver": '{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 100, '
    '"tid": 100, "ts": 96, "dur": 2, "args": {"correlation": 15}}',
    "cpu op": '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, '
    '"ts": 94.0, "dur": 6.0, "args": {"External id": 11, "Input Dims": [[64, 64], [64, 64]]}}',
    "cpu step": '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 100, '
    '"tid": 100, "ts": 90.0, "dur": 100.0, "args": {"External id": 0}}',
    "gpu step": '{"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#3", "pid": 0, '
    '"tid": 7, "ts": 99.0, "dur": 60.0}',
    "measure": '{"ph": "X", "cat": "user_annotation", "name": "[param|m|0|measure|fwd]", '
    '"ts": 91, "dur": 50}',
    "span": '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", '
    '"tid": "PyTorch Profiler", "ts": 80.0, "dur": 200.0}',
    "window end": '{"ph": "i", "cat": "user_annotation", "name": "Record Window End", '
    '"pid": 100, "tid": 100, "ts": 290.0, "s": "t"}',
    "python": '{"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 100, '
    '"tid": 100, "ts": 92, "dur": 1}',
    "flow": '{"ph": "s", "id": 11, "pid": 100, "tid": 100, "ts": 95.5, "cat": "ac2g", '
    '"name": "ac2g"}',
    "metadata": '{"name": "process_name", "ph": "M", "ts": 80, "pid": 0, "tid": 0, '
    '"args": {"name": "GPU 0"}}',
}
#: Fields replaced: top-level keys, or ``args.KEY``.
FIELDS = (
    "ts", "dur", "pid", "tid", "name", "cat", "ph", "args", "args.device", "args.stream",
    "args.correlation", "args.grid", "args.block", "args.registers per thread",
    "args.shared memory", "args.bytes", "args.External id", "args.blocks per SM", "args.extra",
)  # fmt: skip
#: Values as JSON text, at and around every bound the two paths check.
VALUES = (
    "0", "-0.0", "3.5", "-5", "-1e-9", "1e300", "-1e300", "1.7e308", "NaN", "Infinity",
    "-Infinity", "true", "false", "null", '"12"', '"kernel"', '"X"', '"cuda_runtime"',
    '"Trace"', '"ProfilerStep#4"', '"Record Window End"', '"k_gemm"', '"\\u001b[2Jk"', "[]",
    "{}", "[1, 2]", "[1, 2, 3]", "[1, 2, -3]", "[1, true, 3]", "[1.0, 2, 3]", "[[1], 2, 3]",
    f"[{2**63}, 1, 1]", f"[{2**63 - 1}, 1, 1]", str(2**63), str(2**63 - 1), str(-(2**63)),
    str(-(2**63) + 1), "1" + "0" * 400, "1e17", "-1e17", "99999999999999999", "1e12",
    "1000000000001", "8.64e10", "86400000000", "86400000001", "8.6400000001e10",
    "1700000000000000", "1700000000000000.5",
)  # fmt: skip


def _replace(text: str, field: str, value: str) -> Any:
    ev = json.loads(text)
    if field.startswith("args."):
        if not isinstance(ev.get("args"), dict):
            ev["args"] = {}
        ev["args"][field[5:]] = json.loads(value)
    else:
        ev[field] = json.loads(value)
    return ev


def _typed(ev: Any) -> Any:
    """``ev`` as the stream's typed batch decode gives it: a struct, or as it is when refused."""
    decoded = _decode_batch(f"[{json.dumps(ev)}]", True)[0]
    return decoded if type(decoded) is TraceEvent else ev


def _take(reader: EventReader, index: int, ev: Any) -> None:
    """What the trace reader does with one event (:func:`workbench.evidence.kineto._read`)."""
    typed = _typed(ev)
    if type(typed) is TraceEvent:
        reader.take(index, typed)
    else:
        reader.take_any(index, typed)


def _outcome(events: list[Any], fast: bool) -> str:
    reader = EventReader("t.json")
    try:
        for index, ev in enumerate(events):
            if fast:
                _take(reader, index, ev)
            else:
                reader.take_checked(index, ev)
    except TraceError as exc:
        return f"TraceError: {exc}"
    b = reader.bounds
    return repr(
        (reader.activities, reader.launch_s, reader.launch_dur_s, reader.cpu_steps,
         reader.gpu_steps, reader.base_us, b.names, b._first, b._last, b.lo_us, b.hi_us,
         b.longest_gpu, b.window, b._cut, b._name_chars)
    )  # fmt: skip


#: Clocks: from the process start, and (older Kineto) from the Unix epoch, us.
CLOCKS_US = (0, 1_700_000_000_000_000)


def _template(text: str, clock_us: int) -> Any:
    ev = json.loads(text)
    ev["ts"] += clock_us
    return ev


def _trace(name: str, field: str, value: str, clock_us: int = 0) -> list[Any]:
    """Every template once (names seen, clock origin set), the hostile event, then all again."""
    plain = [_template(t, clock_us) for t in TEMPLATES.values()]
    again = [_template(t, clock_us) for t in TEMPLATES.values()]
    return [*plain, _replace(json.dumps(plain[list(TEMPLATES).index(name)]), field, value), *again]


@pytest.mark.parametrize(
    ("name", "clock_us"),
    [(name, 0) for name in TEMPLATES]
    + [(name, CLOCKS_US[1]) for name in ("kernel", "launch", "cpu step", "window end")],
)
def test_the_fast_path_reads_every_hostile_event_as_the_checked_path(name, clock_us):
    differ = []
    for field in FIELDS:
        for value in VALUES:
            fast = _outcome(_trace(name, field, value, clock_us), fast=True)
            checked = _outcome(_trace(name, field, value, clock_us), fast=False)
            if fast != checked:
                differ.append(f"{field}={value}: {fast[:300]} != {checked[:300]}")
    assert not differ, "\n".join(differ[:5])


@pytest.mark.parametrize("clock_us", CLOCKS_US)
def test_hostile_values_reach_the_fast_path(clock_us):
    """The cases above reach the hostile event: some are refused there, the rest are read."""
    outcomes = [
        _outcome(_trace(name, field, value, clock_us), fast=True)
        for name in ("kernel", "launch", "cpu step")
        for field in ("ts", "dur", "pid", "args.grid", "args.correlation")
        for value in VALUES
    ]
    errors = [o for o in outcomes if o.startswith("TraceError")]
    assert 0.2 * len(outcomes) < len(errors) < 0.8 * len(outcomes)
    assert all(f"traceEvents[{len(TEMPLATES)}]" in e for e in errors), errors[:3]


def test_events_seen_before_take_the_fast_path(monkeypatch):
    """Only the first of each repeated event goes through the checked path."""
    checked: list[int] = []
    reader = EventReader("t.json")
    original = reader.take_checked

    def count(index: int, ev: Any) -> None:
        checked.append(index)
        original(index, ev)

    monkeypatch.setattr(reader, "take_checked", count)
    lines = [t for name, t in TEMPLATES.items() if name != "window end"]
    events = [json.loads(t) for _ in range(5) for t in lines]
    first: dict[str, int] = {}
    for index, ev in enumerate(events):
        first.setdefault(ev["name"], index)
        _take(reader, index, ev)
    assert checked == sorted(first.values())
    assert len(reader.activities) == 5 * 4
    assert len(reader.cpu_steps) == 5 * 2


def test_a_category_or_a_name_that_is_no_string_is_read_as_unknown(tmp_path):
    """``"cat": [1]`` or a launch named ``[1]`` once ended in an internal error (unhashable)."""
    events = [
        '{"ph": "X", "cat": [1], "name": "a", "ts": 1, "dur": 2}',
        '{"ph": "X", "cat": {"k": 1}, "name": "a", "ts": 1, "dur": 2}',
        '{"ph": "X", "cat": "cuda_runtime", "name": [1], "ts": 1, "dur": 1, '
        '"args": {"correlation": 1}}',
        '{"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 2, "args": {"correlation": 1}}',
    ]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + ", ".join(events) + "]}")
    run = read_trace(path)
    assert [k.name for k in run.kernels] == ["k"]
    assert run.kernels[0].launch_start_s is None  # NOTE: a call not named as a launch call
