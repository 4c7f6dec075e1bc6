"""The framework operators a Kineto trace recorded, with their shapes, linked to their kernels.

A PyTorch profiler run with ``record_shapes=True`` writes every ``cpu_op`` event with
``args["Input Dims"]`` (one list of sizes per input; ``[]`` for a scalar or a non-tensor) and
``args["Input type"]`` (``float``, ``c10::Half``, ``long``, ``Scalar``...). A kernel is linked to
the operator that launched it through its runtime launch event (``cuda_runtime``, same
``correlation`` id as the kernel):

1. the launch's ``External id`` when it names a ``cpu_op`` (newer PyTorch versions);
2. failing that, the innermost ``cpu_op`` (or ``nccl:<collective>`` annotation, which holds the
   collective's tensor sizes where ``record_param_comms`` records none) of the launching thread
   (same ``pid``/``tid``) whose ``[ts, ts + dur]`` holds the launch's start (older traces, whose
   launch events carry their own correlation id as ``External id``), as Holistic Trace
   Analysis's call stacks do.

Only operators that launched at least one kernel are kept. Times stay in the trace's own
microseconds here: only the nesting matters, and kernels are joined by correlation id.
"""

from __future__ import annotations

import bisect
import gzip
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.evidence._jsonstream import ChromeTraceStream
from workbench.evidence._source import (
    DEFAULT_MAX_BYTES,
    check_trace_file,
    no_gc,
    open_regular,
    read_chunks,
)

__all__ = ["OperatorCollector", "RecordedOp", "RecordedOps", "read_operators"]

_OP_CATS = {"cpu_op", "Operator"}
_RUNTIME_CATS = {"cuda_runtime", "Runtime"}
_KEPT_ARGS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "dtype",
    "Group size",
    "Concrete Inputs",
)
#: Longest operator name kept, characters (longer ones are cut; names are shown, not parsed).
_MAX_NAME = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedOp:
    """One ``cpu_op`` event that launched kernels.

    Attributes:
        name: The operator (``aten::addmm``, ``fbgemm::...``).
        input_dims: Per input, its sizes; ``()`` for a scalar, None when the trace has no
            shapes for this op.
        input_types: Per input, the recorded type (``float``, ``c10::Half``, ``Scalar``...).
        module: The ``Module Hierarchy`` the profiler recorded (``""`` when absent).
        thread: ``(pid, tid)`` of the launching thread.
        args: Other recorded arguments a graph needs, as text: a collective's ``Collective
            name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``, and
            ``Concrete Inputs`` (strides, paddings) where newer PyTorch versions record them.
    """

    name: str
    input_dims: tuple[tuple[int, ...], ...] | None
    input_types: tuple[str, ...]
    module: str = ""
    thread: tuple[int, int] = (0, 0)
    args: tuple[tuple[str, str], ...] = ()

    def arg(self, key: str) -> str | None:
        """The recorded argument ``key`` as text, or None."""
        return dict(self.args).get(key)

    @property
    def signature(self) -> str:
        """``name(shape:type, ...)``: what identifies the operator's work across two runs."""
        if self.input_dims is None:
            return self.name
        parts = [
            f"{'x'.join(map(str, d)) or 's'}:{t}"
            for d, t in zip(self.input_dims, self.input_types, strict=False)
            if t and t != "Scalar"
        ]
        return f"{self.name}({', '.join(parts)})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedOps:
    """The operators of a trace and which one launched each kernel.

    Attributes:
        ops: Every operator that launched at least one kernel, in trace order.
        by_correlation: Kernel correlation id -> index into :attr:`ops`.
        shapes_recorded: Whether the trace carries ``Input Dims`` (``record_shapes=True``).
    """

    ops: tuple[RecordedOp, ...]
    by_correlation: Mapping[int, int]
    shapes_recorded: bool

    def op_of(self, correlation: int | None) -> RecordedOp | None:
        """The operator that launched the kernel with ``correlation``, or None."""
        if correlation is None:
            return None
        index = self.by_correlation.get(correlation)
        return None if index is None else self.ops[index]


def read_operators(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> RecordedOps:
    """Read the operators of a Kineto trace and link each kernel to the one that launched it.

    Args:
        path: The trace file (``.json`` or gzip).
        max_bytes: Largest file (and decompressed text), bytes.

    Returns:
        The operators (see the module doc); empty for a trace without ``cpu_op`` events.

    Raises:
        TraceError: The file cannot be read as a trace (as :func:`read_trace`).
    """
    p = check_trace_file(path, max_bytes)
    collector = OperatorCollector()
    with no_gc():
        with open_regular(p) as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            binary = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
            f = io.TextIOWrapper(binary, encoding="utf-8-sig")
            chunks = read_chunks(f, str(p), max_bytes, 1 << 20)
            take = collector.take
            for event in ChromeTraceStream(chunks, str(p), _ignore).events():
                take(event)
        return collector.link()


def _ignore(_key: str, _value: Any) -> None:
    return None


class OperatorCollector:
    """Keeps the operators and runtime launches of a trace's events, then links them.

    :func:`read_operators` feeds it a file's events;
    :func:`workbench.evidence.read_trace_and_operators` feeds it the events
    :func:`workbench.evidence.read_kineto` reads, so a file is parsed once.
    """

    def __init__(self) -> None:
        self.ops: list[tuple[float, float, tuple[int, int], int | None, dict[str, Any]]] = []
        self.launches: list[tuple[float, tuple[int, int], int, int | None]] = []

    def take(self, ev: object) -> None:
        """Keep what ``ev`` (one element of ``traceEvents``) says about operators and launches."""
        if type(ev) is not dict or ev.get("ph") != "X":
            return
        cat = ev.get("cat")
        if type(cat) is not str:
            return
        if cat in _OP_CATS or (cat == "user_annotation" and _is_collective(ev.get("name"))):
            self._op(ev)
        elif cat in _RUNTIME_CATS:
            self._launch(ev)

    def _op(self, ev: Mapping[str, Any]) -> None:
        timed = _timed(ev)
        if timed is None:
            return
        ts, dur, thread, args = timed
        kept = tuple((k, str(args[k])[:_MAX_NAME]) for k in _KEPT_ARGS if k in args)
        info = {
            "name": ev.get("name"),
            "dims": args.get("Input Dims"),
            "types": args.get("Input type"),
            "module": args.get("Module Hierarchy"),
            "args": kept,
        }
        self.ops.append((ts, dur, thread, _int(args.get("External id")), info))

    def _launch(self, ev: Mapping[str, Any]) -> None:
        timed = _timed(ev)
        if timed is None:
            return
        ts, _, thread, args = timed
        corr = _int(args.get("correlation"))
        if corr is not None:
            self.launches.append((ts, thread, corr, _int(args.get("External id"))))

    def link(self) -> RecordedOps:
        """The operators kept, each kernel's correlation id linked to the one that launched it."""
        by_ext = {ext: i for i, (*_, ext, _info) in enumerate(self.ops) if ext is not None}
        per_thread: dict[tuple[int, int], list[int]] = {}
        for i in sorted(range(len(self.ops)), key=lambda i: (self.ops[i][0], -self.ops[i][1])):
            per_thread.setdefault(self.ops[i][2], []).append(i)
        starts = {t: [self.ops[i][0] for i in idx] for t, idx in per_thread.items()}
        chosen: dict[int, int] = {}
        for ts, thread, corr, ext in self.launches:
            found = by_ext.get(ext) if ext is not None and ext != corr else None
            if found is None:
                found = _innermost(ts, per_thread.get(thread, []), starts.get(thread, []), self.ops)
            if found is not None:
                chosen[corr] = found
        kept = sorted(set(chosen.values()))
        remap = {old: new for new, old in enumerate(kept)}
        ops = tuple(_recorded(self.ops[i][4], self.ops[i][2]) for i in kept)
        shapes = any(op.input_dims is not None for op in ops)
        return RecordedOps(
            ops=ops,
            by_correlation={c: remap[i] for c, i in chosen.items()},
            shapes_recorded=shapes,
        )


def _timed(
    ev: Mapping[str, Any],
) -> tuple[float, float, tuple[int, int], dict[str, Any]] | None:
    """``(ts, dur, (pid, tid), args)`` of an event (times in us), or None when one is unusable."""
    args = ev.get("args")
    if not isinstance(args, dict):
        return None
    ts, dur = _float(ev.get("ts")), _float(ev.get("dur"))
    if ts is None or dur is None:
        return None
    return ts, dur, (_int(ev.get("pid")) or 0, _int(ev.get("tid")) or 0), args


def _is_collective(name: object) -> bool:
    """Whether a ``user_annotation`` is ProcessGroupNCCL's ``nccl:<collective>`` range."""
    return isinstance(name, str) and name.startswith("nccl:")


def _innermost(
    ts: float, order: Sequence[int], starts: Sequence[float], ops: Sequence[tuple[Any, ...]]
) -> int | None:
    """The latest-starting op of the thread (sorted by start) that still holds ``ts``."""
    j = bisect.bisect_right(starts, ts) - 1
    # NOTE: ops nest, so the innermost holder is the latest-starting one that ends after ts; a
    # bounded look-back keeps this linear-ish on traces with long sibling lists.
    for k in range(j, max(j - 256, -1), -1):
        start, dur = ops[order[k]][0], ops[order[k]][1]
        if start <= ts <= start + dur:
            return order[k]
    return None


def _recorded(info: Mapping[str, Any], thread: tuple[int, int]) -> RecordedOp:
    name = info.get("name")
    name = name[:_MAX_NAME] if isinstance(name, str) else "?"
    dims_raw, types_raw = info.get("dims"), info.get("types")
    dims: tuple[tuple[int, ...], ...] | None = None
    if isinstance(dims_raw, list):
        dims = tuple(
            tuple(v for v in d if _int(v) is not None and v >= 0) if isinstance(d, list) else ()
            for d in dims_raw
        )
    types = (
        tuple(t[:64] if isinstance(t, str) else "" for t in types_raw)
        if isinstance(types_raw, list)
        else ()
    )
    module = info.get("module")
    return RecordedOp(
        name=name,
        input_dims=dims,
        input_types=types,
        module=module[:_MAX_NAME] if isinstance(module, str) else "",
        thread=thread,
        args=info.get("args", ()),
    )


def _float(v: object) -> float | None:
    """``v`` as a finite time in microseconds, or None (a bad number is skipped, not read)."""
    t = type(v)  # NOTE: JSON numbers are exactly int or float (bool is neither), never subclasses
    if (t is float or t is int) and -1e18 < v < 1e18:  # type: ignore[operator]
        return float(v)  # type: ignore[arg-type]
    return None


def _int(v: object) -> int | None:
    return v if type(v) is int and -(2**63) < v < 2**63 else None
