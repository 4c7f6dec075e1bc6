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
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from workbench.evidence._jsonstream import ChromeTraceStream, TraceEvent, decode_value
from workbench.evidence._source import (
    DEFAULT_MAX_BYTES,
    check_trace_file,
    no_gc,
    open_regular,
    read_chunks,
)

__all__ = ["OperatorCollector", "RecordedOp", "RecordedOps", "read_operators"]

_OP, _ANNOTATION, _RUNTIME = "op", "annotation", "runtime"
#: What an event of each category may be (``user_annotation``: an op when named ``nccl:...``).
_ROLE = {
    "cpu_op": _OP,
    "Operator": _OP,
    "user_annotation": _ANNOTATION,
    "cuda_runtime": _RUNTIME,
    "Runtime": _RUNTIME,
}
_KEPT_ARGS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "dtype",
    "Group size",
    "Concrete Inputs",
)
#: The ``args`` an operator's payload holds, after its name: shapes, types, module, kept args.
_PAYLOAD_KEYS = ("Input Dims", "Input type", "Module Hierarchy", *_KEPT_ARGS)
#: A 64-bit integer's exclusive bounds.
_INT_LO, _INT_HI = -(2**63), 2**63
_ENCODE = msgspec.json.Encoder().encode
_UNSET = msgspec.UNSET
_NULL = msgspec.Raw(b"null")


class _OpArgs(
    msgspec.Struct,
    gc=False,
    rename={"ext": "External id", "dims": "Input Dims", "types": "Input type",
            "module": "Module Hierarchy", "coll": "Collective name", "inn": "In msg nelems",
            "outn": "Out msg nelems", "gsize": "Group size", "concrete": "Concrete Inputs"},
):  # fmt: skip
    """An operator's ``args`` as :meth:`OperatorCollector.timed` reads them.

    Its ``External id``, and the payload (:data:`_PAYLOAD_KEYS`) as raw JSON text, ``null`` when
    absent as ``dict.get`` reads it; every other key (a call stack, an event index) is skipped.
    """

    ext: Any = None
    dims: msgspec.Raw = _NULL
    types: msgspec.Raw = _NULL
    module: msgspec.Raw = _NULL
    coll: msgspec.Raw = _NULL
    inn: msgspec.Raw = _NULL
    outn: msgspec.Raw = _NULL
    dtype: msgspec.Raw = _NULL
    gsize: msgspec.Raw = _NULL
    concrete: msgspec.Raw = _NULL


_OP_ARGS = msgspec.json.Decoder(_OpArgs)
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

    NOTE: an operator is kept as five numbers and the index of its payload (name, shapes,
    types, module, the arguments of :data:`_KEPT_ARGS`), one payload per distinct value: a
    training trace repeats each operator once per step (and layer), and most operators launch
    no kernel, so holding each event's decoded lists would cost several times the run's memory
    (and a garbage-collector pass over them when the read ends).
    """

    def __init__(self) -> None:
        self._ts = array("d")
        self._dur = array("d")
        self._ext: list[int | None] = []
        self._thread: list[int] = []
        self._payload = array("q")
        self._threads: dict[tuple[int, int], int] = {}
        self._payloads: dict[object, int] = {}
        #: The payloads of :meth:`timed`, keyed by their JSON text (decoded by :meth:`link`).
        self._raw_payloads: dict[bytes, int] = {}
        #: Each payload's values, or (:meth:`timed`'s) its JSON text.
        self._payload_values: list[tuple[Any, ...] | bytes] = []
        self.launches: list[tuple[float, int, int, int | None]] = []

    def take(self, ev: object) -> None:
        """Keep what ``ev`` (one element of ``traceEvents``) says about operators and launches.

        NOTE: hot (once per event): the category is looked at first, as most events are neither,
        and the common shapes (finite times, integer ``pid``/``tid``) are read inline.
        """
        if type(ev) is not dict:
            return
        cat = ev.get("cat")
        if type(cat) is not str:
            return
        if cat not in _ROLE or ev.get("ph") != "X":
            return
        ts: Any = ev.get("ts")
        dur: Any = ev.get("dur")
        t_ts, t_dur = type(ts), type(dur)
        if (
            (t_ts is float or t_ts is int)
            and (t_dur is float or t_dur is int)
            and -1e18 < ts < 1e18
            and -1e18 < dur < 1e18
        ):
            self._keep(_ROLE[cat], ev.get("pid"), ev.get("tid"), ev.get("name"), ts, dur,
                       ev.get("args"))  # fmt: skip

    def timed(
        self, ev: TraceEvent, cat: str, name: str, ts: float, dur: float, args: object
    ) -> None:
        """:meth:`take` for an ``X`` event the trace reader's fast path has read.

        ``cat``, ``name`` (cleaned), ``ts`` and ``dur`` (finite, us) are read already, and for a
        runtime launch its ``args`` too (with ``correlation`` and ``ext``, its External id); an
        operator's ``args`` are read here, its payload kept as raw text (:class:`_OpArgs`).
        """
        role = _ROLE.get(cat)
        if role is None:
            return
        pid, tid = ev.pid, ev.tid
        # NOTE: hot (once per operator and launch): the thread seen before is looked up inline
        thread = self._threads.get((pid, tid)) if type(pid) is int and type(tid) is int else None
        if thread is None:
            thread = self._thread_of(pid, tid)
        if role is _RUNTIME:
            self._launch(thread, ts, args.correlation, args.ext)  # type: ignore[attr-defined]
            return
        if (role is _ANNOTATION and not _is_collective(name)) or ev.args is _UNSET:
            return
        try:
            op = _OP_ARGS.decode(ev.args)
        except msgspec.MsgspecError:  # NOTE: args that are no object, or a number past a double
            self._keep(role, ev.pid, ev.tid, name, ts, dur, decode_value(ev.args))
            return
        key = _ENCODE((name, op.dims, op.types, op.module, op.coll, op.inn, op.outn, op.dtype,
                       op.gsize, op.concrete))  # fmt: skip
        found = self._raw_payloads.get(key)
        if found is None:
            found = self._raw_payloads[key] = len(self._payload_values)
            self._payload_values.append(key)
        self._op(thread, ts, dur, op.ext, found)

    def _keep(
        self, role: str, pid: object, tid: object, name: object, ts: float, dur: float,
        args: object,
    ) -> None:  # fmt: skip
        """Keep an ``X`` event of ``role`` with finite times (us) and plain ``args``."""
        if type(args) is not dict:
            return
        thread = self._thread_of(pid, tid)
        if role is _RUNTIME:
            self._launch(thread, ts, args.get("correlation"), args.get("External id"))
            return
        if role is _ANNOTATION and not _is_collective(name):
            return
        self._op(thread, ts, dur, args.get("External id"), self._payload_of(name, args))

    def _launch(self, thread: int, ts: float, corr: object, ext: object) -> None:
        if type(corr) is int and _INT_LO < corr < _INT_HI:
            self.launches.append((float(ts), thread, corr, _int(ext)))

    def _op(self, thread: int, ts: float, dur: float, ext: object, payload: int) -> None:
        self._ts.append(ts)
        self._dur.append(dur)
        self._thread.append(thread)
        self._ext.append(ext if type(ext) is int and _INT_LO < ext < _INT_HI else None)
        self._payload.append(payload)

    def _thread_of(self, pid: object, tid: object) -> int:
        """The index of thread ``(pid, tid)`` (a non-integer id reads as 0), remembered."""
        if type(pid) is int and type(tid) is int:
            found = self._threads.get((pid, tid))
            if found is not None:
                return found
        thread = (_int(pid) or 0, _int(tid) or 0)
        found = self._threads.get(thread)
        if found is None:
            found = self._threads[thread] = len(self._threads)
        return found

    def _payload_of(self, name: object, args: Mapping[str, Any]) -> int:
        """The index of ``(name, dims, types, module, *kept args)``, one per distinct value."""
        values = (name, *map(args.get, _PAYLOAD_KEYS))
        try:
            key: object = _ENCODE(values)
        except (TypeError, OverflowError, ValueError):  # NOTE: an integer past 64 bits
            key = object()
        found = self._payloads.get(key)
        if found is None:
            found = self._payloads[key] = len(self._payload_values)
            self._payload_values.append(values)
        return found

    def link(self) -> RecordedOps:
        """The operators kept, each kernel's correlation id linked to the one that launched it."""
        ts, dur, ext = self._ts, self._dur, self._ext
        by_ext = {e: i for i, e in enumerate(ext) if e is not None}
        per_thread: dict[int, list[int]] = {}
        for i in sorted(
            range(len(ts)), key=list(zip(ts, map(float.__neg__, dur), strict=True)).__getitem__
        ):
            per_thread.setdefault(self._thread[i], []).append(i)
        starts = {t: [ts[i] for i in idx] for t, idx in per_thread.items()}
        threads = {index: thread for thread, index in self._threads.items()}
        chosen: dict[int, int] = {}
        for when, thread, corr, e in self.launches:
            found = by_ext.get(e) if e is not None and e != corr else None
            if found is None:
                order = per_thread.get(thread, [])
                found = _innermost(when, order, starts.get(thread, []), ts, dur)
            if found is not None:
                chosen[corr] = found
        kept = sorted(set(chosen.values()))
        remap = {old: new for new, old in enumerate(kept)}
        made: dict[tuple[int, int], RecordedOp] = {}  # NOTE: equal ops share one (steps repeat)
        ops = []
        for i in kept:
            key = (self._payload[i], self._thread[i])
            op = made.get(key)
            if op is None:
                values = self._payload_values[key[0]]
                if isinstance(values, bytes):
                    values = tuple(decode_value(values))
                op = made[key] = _recorded(values, threads[key[1]])
            ops.append(op)
        shapes = any(op.input_dims is not None for op in ops)
        return RecordedOps(
            ops=tuple(ops),
            by_correlation={c: remap[i] for c, i in chosen.items()},
            shapes_recorded=shapes,
        )


def _is_collective(name: object) -> bool:
    """Whether a ``user_annotation`` is ProcessGroupNCCL's ``nccl:<collective>`` range."""
    return isinstance(name, str) and name.startswith("nccl:")


def _innermost(
    ts: float,
    order: Sequence[int],
    starts: Sequence[float],
    op_ts: Sequence[float],
    op_dur: Sequence[float],
) -> int | None:
    """The latest-starting op of the thread (sorted by start) that still holds ``ts``."""
    j = bisect.bisect_right(starts, ts) - 1
    # NOTE: ops nest, so the innermost holder is the latest-starting one that ends after ts; a
    # bounded look-back keeps this linear-ish on traces with long sibling lists.
    for k in range(j, max(j - 256, -1), -1):
        start = op_ts[order[k]]
        if start <= ts <= start + op_dur[order[k]]:
            return order[k]
    return None


def _recorded(values: Sequence[Any], thread: tuple[int, int]) -> RecordedOp:
    """The operator of a payload ``(name, dims, types, module, *kept args)``."""
    name, dims_raw, types_raw, module, *extra = values
    name = name[:_MAX_NAME] if isinstance(name, str) else "?"
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
    kept = tuple(
        (key, str(v)[:_MAX_NAME]) for key, v in zip(_KEPT_ARGS, extra, strict=True) if v is not None
    )
    return RecordedOp(
        name=name,
        input_dims=dims,
        input_types=types,
        module=module[:_MAX_NAME] if isinstance(module, str) else "",
        thread=thread,
        args=kept,
    )


def _float(v: object) -> float | None:
    """``v`` as a finite time in microseconds, or None (a bad number is skipped, not read)."""
    t = type(v)  # NOTE: JSON numbers are exactly int or float (bool is neither), never subclasses
    if (t is float or t is int) and -1e18 < v < 1e18:  # type: ignore[operator]
        return float(v)  # type: ignore[arg-type]
    return None


def _int(v: object) -> int | None:
    return v if type(v) is int and _INT_LO < v < _INT_HI else None
