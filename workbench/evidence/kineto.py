"""Read (and, for tests and lessons, write) PyTorch profiler / Kineto Chrome-trace JSON.

The format, as Kineto writes it (``libkineto/src/output_json.cpp``) and Holistic Trace Analysis
reads it::

    {"schemaVersion": 1,
     "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, ...}],
     "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},   (when distributed)
     ...other metadata keys...,
     "traceEvents": [
       {"ph": "X", "cat": "kernel", "name": "...", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.5,
        "args": {"device": 0, "stream": 7, "correlation": 42, "grid": [x, y, z],
                 "block": [x, y, z], "registers per thread": 128, "shared memory": 49152}},
       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"correlation": 42}},
       {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": ..., "dur": ...},
       ...]}

``ts`` and ``dur`` are microseconds; older traces count ``ts`` from the Unix epoch, and their
times are read relative to the first timed event (``start_s`` is then seconds since it).
``gpu_memcpy``/``gpu_memset`` are copies; ``cpu_op``, ``user_annotation`` and
``gpu_user_annotation`` events named ``ProfilerStep#N`` mark iterations (failing those, ranges
named ``step N`` / ``iteration N``, then a benchmark's ``[param|...|measure|...]`` ranges).
Older PyTorch versions spell the categories ``Kernel``, ``Memcpy``, ``Memset``, ``Runtime``,
``Operator``; both spellings are read.

A kernel belongs to step N when its runtime launch (found through ``correlation``) falls inside the
CPU-side ``ProfilerStep#N`` window, as HTA assigns them; failing that, when its own start falls in a
GPU-side step annotation or (with no launch event at all) in the CPU-side window.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from workbench.evidence._assemble import (
    LAUNCH_CALLS,
    UNNUMBERED,
    Activity,
    assemble,
    choose_steps,
    is_measure_range,
    step_index,
)
from workbench.evidence._bounds import TraceBounds
from workbench.evidence._jsonstream import ChromeTraceStream
from workbench.evidence._source import (
    DEFAULT_MAX_BYTES,
    atomic_path,
    check_trace_file,
    no_gc,
    open_regular,
    read_chunks,
)
from workbench.evidence.run import MeasuredKernel, MeasuredRun, TraceError
from workbench.evidence.timeline import StepWindows, derive_step_windows

__all__ = ["read_kineto", "write_kineto_trace"]

_KIND_BY_CAT = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
}
_EPOCH_LIKE_US = 1e12
#: The types an integer field may hold as read (``bool`` is not one: ``type(True) is bool``).
_INT_OR_NONE = frozenset({int, type(None)})
_RUNTIME_CATS = {"cuda_runtime", "Runtime", "cuda_driver", "Driver"}
_CPU_STEP_CATS = {"user_annotation", "cpu_op", "Operator"}
_GPU_STEP_CATS = {"gpu_user_annotation"}
#: Distinct range names whose step index is remembered (bounded; names past it are matched anew).
_STEP_MEMO = 1 << 16
#: Distinct launch shapes shared between activities (bounded).
_SHAPE_MEMO = 1 << 16
#: Top-level metadata keys read as version tags, first present wins (verbatim, never inferred).
_VERSION_KEYS = {
    "driver": ("cuda_driver_version", "driver_version"),
    "cuda": ("cuda_runtime_version", "cuda_version"),
    "framework": ("pytorch_version", "torch_version", "framework_version"),
    "cupti": ("cupti_version",),
}


def read_kineto(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> MeasuredRun:
    """Read a Kineto / PyTorch profiler trace (``.json`` or gzip-compressed), streaming its events.

    Args:
        path: The trace file.
        max_bytes: Largest file (and decompressed text), bytes.

    Returns:
        The measured run (``format="kineto"``).

    Raises:
        TraceError: One line naming the file, what is wrong and where (event index).
    """
    p = check_trace_file(path, max_bytes)
    with no_gc():
        return _read(p, max_bytes)


def _read(p: Path, max_bytes: int) -> MeasuredRun:
    meta: dict[str, Any] = {}
    reader = _EventReader(str(p))
    bounds = TraceBounds(str(p))
    with open_regular(p) as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        binary = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        f = io.TextIOWrapper(binary, encoding="utf-8-sig")
        stream = ChromeTraceStream(
            read_chunks(f, str(p), max_bytes, 1 << 20), str(p), bounds.meta(meta.__setitem__)
        )
        check, take = bounds.event, reader.take
        for index, event in enumerate(stream.events()):
            check(index, event)
            take(index, event)
    bounds.finish()
    return assemble(
        source=str(p),
        fmt="kineto",
        activities=reader.activities,
        launch_s=reader.launch_s,
        launch_dur_s=reader.launch_dur_s,
        cpu_steps=StepWindows(choose_steps(reader.cpu_steps)),
        gpu_steps=StepWindows(choose_steps(reader.gpu_steps)),
        tags=_tags(meta, {a.device for a in reader.activities}),
        rank=_rank(meta),
    )


class _EventReader:
    """Keeps only what the run needs from each event (GPU activities, launches, steps)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.activities: list[Activity] = []
        self.launch_s: dict[int, float] = {}
        #: Duration of each launch call (:data:`LAUNCH_CALLS`) by correlation id, s.
        self.launch_dur_s: dict[int, float] = {}
        self.cpu_steps: list[tuple[str, int, float, float]] = []
        self.gpu_steps: list[tuple[str, int, float, float]] = []
        self.base_us: float | None = None
        self._steps: dict[str, int | None] = {}
        self._shapes: dict[tuple[int, int, int], tuple[int, int, int]] = {}

    def take(self, index: int, ev: Any) -> None:
        if not isinstance(ev, dict):
            raise TraceError(f"{self.where}: traceEvents[{index}] is not an object")
        if ev.get("ph") != "X":
            return
        cat = ev.get("cat")
        kind = _KIND_BY_CAT.get(cat) if type(cat) is str else None
        if kind is not None:
            self._activity(index, ev, kind)
        elif cat in _RUNTIME_CATS:
            args = ev.get("args")
            corr = (args if type(args) is dict else _args(self.where, index, ev)).get("correlation")
            if type(corr) is int:
                start, dur = self._times(index, ev)
                self.launch_s[corr] = start
                if ev.get("name") in LAUNCH_CALLS:
                    self.launch_dur_s[corr] = dur
        elif cat in _CPU_STEP_CATS or cat in _GPU_STEP_CATS:
            name = ev.get("name")
            step = self._step_of(name)
            if step is not None:
                start, dur = self._times(index, ev)
                windows = self.gpu_steps if cat in _GPU_STEP_CATS else self.cpu_steps
                windows.append((str(name), step, start, start + dur))

    def _dim3(self, v: list[int]) -> tuple[int, int, int]:
        """``v`` as a tuple, one shared object per distinct shape (kernels repeat their shapes)."""
        t = (v[0], v[1], v[2])
        kept = self._shapes.get(t)
        if kept is None:
            kept = t
            if len(self._shapes) < _SHAPE_MEMO:
                self._shapes[t] = t
        return kept

    def _step_of(self, name: object) -> int | None:
        """The step index of a range name (memoized: a trace has few distinct op names)."""
        if type(name) is not str:
            return None
        if name in self._steps:
            return self._steps[name]
        step = step_index(name)
        if step is None and is_measure_range(name):
            step = UNNUMBERED
        if len(self._steps) < _STEP_MEMO:
            self._steps[name] = step
        return step

    def _times(self, index: int, ev: Mapping[str, Any]) -> tuple[float, float]:
        ts, dur = ev.get("ts"), ev.get("dur")
        t_ts, t_dur = type(ts), type(dur)
        if not (
            (t_ts is float or t_ts is int)
            and (t_dur is float or t_dur is int)
            and math.isfinite(ts)  # type: ignore[arg-type]
            and math.isfinite(dur)  # type: ignore[arg-type]
        ):
            for key, v in (("ts", ts), ("dur", dur)):
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise TraceError(
                        f"{self.where}: traceEvents[{index}] has no finite numeric {key!r} "
                        f"(got {v!r})"
                    )
        assert isinstance(ts, int | float)
        assert isinstance(dur, int | float)
        if dur < 0:
            raise TraceError(
                f"{self.where}: clock skew at traceEvents[{index}] ({ev.get('name')!r}): "
                f"negative duration {dur} us (end before start)"
            )
        if self.base_us is None:
            # NOTE: epoch-based microsecond clocks (~1.7e15) leave a double ~0.25 us of precision
            # in seconds; times are kept relative to the first event's when the clock is that big.
            self.base_us = float(ts) if abs(ts) > _EPOCH_LIKE_US else 0.0
        return (ts - self.base_us) * 1e-6, dur * 1e-6

    def _activity(self, index: int, ev: Mapping[str, Any], kind: str) -> None:
        start, dur = self._times(index, ev)
        args = _args(self.where, index, ev)
        name = ev.get("name")
        if type(name) is not str:
            raise TraceError(f"{self.where}: traceEvents[{index}] ({kind}) has no string 'name'")
        pid, tid = ev.get("pid"), ev.get("tid")
        get = args.get
        device = get("device", pid if isinstance(pid, int) else None)
        stream = get("stream", tid if isinstance(tid, int) else None)
        corr, regs = get("correlation"), get("registers per thread")
        smem, nbytes = get("shared memory"), get("bytes")
        grid, block = get("grid"), get("block")
        # NOTE: the common case (each field an int or absent, dims three non-negative ints) is
        # checked in one expression; anything else goes through the field checks for its message.
        if not (
            {type(device), type(stream), type(corr), type(regs), type(smem), type(nbytes)}
            <= _INT_OR_NONE
            and _is_dim3_or_none(grid)
            and _is_dim3_or_none(block)
        ):
            field = _Field(self.where, index)
            device = field.integer(args, "device", pid if isinstance(pid, int) else None)
            stream = field.integer(args, "stream", tid if isinstance(tid, int) else None)
            corr = field.integer(args, "correlation")
            regs = field.integer(args, "registers per thread")
            smem = field.integer(args, "shared memory")
            nbytes = field.integer(args, "bytes")
            grid, block = field.dim3(args, "grid"), field.dim3(args, "block")
        self.activities.append(
            Activity(
                name=name,
                kind=kind,
                start_s=start,
                duration_s=dur,
                device=device,
                stream=stream,
                correlation=corr,
                grid=None if grid is None else self._dim3(grid),
                block=None if block is None else self._dim3(block),
                registers_per_thread=regs,
                shared_memory_bytes=smem,
                bytes=nbytes,
            )
        )


def _is_dim3_or_none(v: object) -> bool:
    return v is None or (
        type(v) is list
        and len(v) == 3
        and type(v[0]) is int
        and type(v[1]) is int
        and type(v[2]) is int
        and v[0] >= 0
        and v[1] >= 0
        and v[2] >= 0
    )


def _args(where: str, index: int, ev: Mapping[str, Any]) -> Mapping[str, Any]:
    args = ev.get("args", {})
    if not isinstance(args, dict):
        raise TraceError(f"{where}: traceEvents[{index}].args is not an object")
    return args


class _Field:
    def __init__(self, where: str, index: int) -> None:
        self.where, self.index = where, index

    def integer(self, args: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
        v = args.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise TraceError(
                f"{self.where}: traceEvents[{self.index}].args[{key!r}] is not an integer"
            )
        return v

    def dim3(self, args: Mapping[str, Any], key: str) -> tuple[int, int, int] | None:
        v = args.get(key)
        if v is None:
            return None
        if not (
            isinstance(v, list)
            and len(v) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v)
        ):
            raise TraceError(
                f"{self.where}: traceEvents[{self.index}].args[{key!r}] is not three "
                "non-negative integers"
            )
        return (v[0], v[1], v[2])


def _rank(meta: Mapping[str, Any]) -> int | None:
    info = meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _tags(meta: Mapping[str, Any], devices: set[int | None]) -> tuple[tuple[str, str], ...]:
    props = meta.get("deviceProperties")
    by_id = {}
    if isinstance(props, list):
        by_id = {d.get("id"): d for d in props if isinstance(d, dict)}
    used = [by_id[d] for d in sorted(x for x in devices if x is not None) if d in by_id]
    names = sorted({str(d["name"]) for d in used if isinstance(d.get("name"), str)})
    caps = sorted(
        {
            f"{d['computeMajor']}.{d['computeMinor']}"
            for d in used
            if isinstance(d.get("computeMajor"), int) and isinstance(d.get("computeMinor"), int)
        }
    )
    sms = sorted({str(d["numSms"]) for d in used if isinstance(d.get("numSms"), int)})
    tags = [
        ("device", ", ".join(names) or "unknown"),
        ("compute_capability", ", ".join(caps) or "unknown"),
        ("sm_count", ", ".join(sms) or "unknown"),
    ]
    for tag, keys in _VERSION_KEYS.items():
        value = next((meta[k] for k in keys if isinstance(meta.get(k), str | int | float)), None)
        tags.append((tag, "unknown" if value is None else str(value)))
    info = meta.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    for key in ("backend", "rank", "world_size"):
        v = info.get(key)
        tags.append((key, str(v) if isinstance(v, str | int) else "unknown"))
    version = meta.get("schemaVersion")
    tags.append(("trace_schema", f"kineto {version}" if version is not None else "unknown"))
    return tuple(tags)


def write_kineto_trace(
    path: str | os.PathLike[str],
    kernels: Sequence[MeasuredKernel],
    *,
    iterations: Sequence[tuple[int, float, float]] | None = None,
    device_properties: Sequence[Mapping[str, Any]] = (),
    metadata: Mapping[str, Any] | None = None,
    gz: bool = False,
    launch_lead_s: float = 5e-6,
    cpu_ops: bool = False,
) -> Path:
    """Write ``kernels`` as a Kineto trace that :func:`read_kineto` reads back (tests, lessons).

    Every kernel gets a ``cudaLaunchKernel`` runtime event ``launch_lead_s`` before it, linked by
    correlation id. Written atomically (temp file, then rename), streamed event by event.

    Args:
        path: Where to write (``.json``; gzip-compressed when ``gz``).
        kernels: The activities; ``kind`` picks the category (kernel, gpu_memcpy, gpu_memset).
        iterations: ``(index, start_s, end_s)`` CPU-side ``ProfilerStep#N`` windows; by default one
            per ``kernel.iteration`` value, from its first launch to its last kernel's end.
        device_properties: ``deviceProperties`` entries (``id``, ``name``, ``computeMajor``...).
        metadata: Extra top-level keys (``distributedInfo``, ``cuda_driver_version``...).
        gz: Compress with gzip.
        launch_lead_s: How long before each kernel its launch event starts, s.
        cpu_ops: Also write an ``aten::`` ``cpu_op`` event around each launch, as real traces have
            (the reader skips them; the ingest benchmark uses them for a realistic event mix).

    Returns:
        The path written.
    """
    if iterations is None:
        windows = derive_step_windows(kernels, launch_lead_s)
    else:
        windows = list(iterations)
    head: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": list(device_properties)}
    head.update(metadata or {})
    with atomic_path(path) as tmp:
        opener = gzip.open if gz else open
        with opener(tmp, "wt", encoding="utf-8") as f:
            _write(f, head, _events(kernels, windows, launch_lead_s, cpu_ops))
    return Path(path)


def _write(f: IO[str], head: Mapping[str, Any], events: Iterator[dict[str, Any]]) -> None:
    f.write("{\n")
    for key, value in head.items():
        f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
    f.write('  "traceEvents": [\n')
    first = next(events, None)
    if first is not None:
        f.write(json.dumps(first))
    for event in events:
        f.write(",\n")
        f.write(json.dumps(event))
    f.write("\n  ]\n}\n")


def _events(
    kernels: Sequence[MeasuredKernel],
    windows: Sequence[tuple[int, float, float]],
    lead_s: float,
    cpu_ops: bool,
) -> Iterator[dict[str, Any]]:
    for index, start, end in windows:
        yield {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{index}",
            "pid": 1,
            "tid": 1,
            "ts": round(start * 1e6, 3),
            "dur": round((end - start) * 1e6, 3),
        }
    cat = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
    for n, k in enumerate(kernels):
        corr = k.correlation if k.correlation is not None else n + 1
        launch = {"kernel": "cudaLaunchKernel", "memcpy": "cudaMemcpyAsync"}
        if cpu_ops:
            yield {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm" if k.category == "gemm" else "aten::add",
                "pid": 1,
                "tid": 1,
                "ts": round((k.start_s - 1.2 * lead_s) * 1e6, 3),
                "dur": round(lead_s * 0.9e6, 3),
                "args": {"External id": n + 1, "Sequence number": n, "Fwd thread id": 0},
            }
        yield {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": launch.get(k.kind, "cudaMemsetAsync"),
            "pid": 1,
            "tid": 1,
            "ts": round((k.start_s - lead_s) * 1e6, 3),
            "dur": round(lead_s * 0.5e6, 3),
            "args": {"correlation": corr},
        }
        args: dict[str, Any] = {"device": k.device, "stream": k.stream, "correlation": corr}
        optional = {
            "grid": list(k.grid) if k.grid else None,
            "block": list(k.block) if k.block else None,
            "registers per thread": k.registers_per_thread,
            "shared memory": k.shared_memory_bytes,
            "bytes": k.bytes,
        }
        args.update({key: v for key, v in optional.items() if v is not None})
        yield {
            "ph": "X",
            "cat": cat[k.kind],
            "name": k.name,
            "pid": k.device if k.device is not None else 0,
            "tid": k.stream if k.stream is not None else 7,
            "ts": round(k.start_s * 1e6, 3),
            "dur": round(k.duration_s * 1e6, 3),
            "args": {key: v for key, v in args.items() if v is not None},
        }
