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
The ``Trace iteration`` argument is not a step marker: Kineto writes the iteration of the
profiling span (``op.traceSpan()->iteration``, libkineto's ChromeTraceLogger), one value for
every event of a file (0 throughout HTA's DLRM traces, ``ProfilerStep#10`` included), so a trace
without step markers stays one window, with the warning that says so.
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
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from workbench.evidence._assemble import (
    assemble,
    choose_steps,
)
from workbench.evidence._jsonstream import ChromeTraceStream, TraceEvent
from workbench.evidence._kineto_events import EventReader
from workbench.evidence._source import (
    DEFAULT_MAX_BYTES,
    atomic_path,
    check_trace_file,
    no_gc,
    open_regular,
    read_chunks,
)
from workbench.evidence.operators import OperatorCollector, RecordedOps
from workbench.evidence.run import MeasuredKernel, MeasuredRun
from workbench.evidence.timeline import StepWindows, derive_step_windows

__all__ = ["read_kineto", "read_kineto_and_operators", "write_kineto_trace"]

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
        return _read(p, max_bytes, None)


def read_kineto_and_operators(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[MeasuredRun, RecordedOps]:
    """:func:`read_kineto` and :func:`~workbench.evidence.operators.read_operators` in one pass.

    The file is read and parsed once; each event goes to both readers.

    Args:
        path: The trace file.
        max_bytes: Largest file (and decompressed text), bytes.

    Returns:
        The measured run and the trace's operators.

    Raises:
        TraceError: As :func:`read_kineto`.
    """
    p = check_trace_file(path, max_bytes)
    collector = OperatorCollector()
    with no_gc():
        return _read(p, max_bytes, collector), collector.link()


def _read(p: Path, max_bytes: int, collector: OperatorCollector | None) -> MeasuredRun:
    meta: dict[str, Any] = {}
    reader = EventReader(str(p), collector)
    bounds = reader.bounds
    with open_regular(p) as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        binary = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        f = io.TextIOWrapper(binary, encoding="utf-8-sig")
        stream = ChromeTraceStream(
            read_chunks(f, str(p), max_bytes, 1 << 19), str(p), bounds.meta(meta.__setitem__)
        )
        start = 0
        # NOTE: hot (once per event): a batch's loop resumes no generator per event
        for batch in stream.batches(typed=True):
            if batch and type(batch[0]) is TraceEvent:
                reader.take_batch(start, batch)
            else:
                for index, event in enumerate(batch, start):
                    reader.take_any(index, event)
            start += len(batch)
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
