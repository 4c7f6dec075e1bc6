"""Read Kineto trace events one by one: check each against its bounds and keep what a run needs.

:class:`EventReader` keeps the GPU activities, the runtime launches and the step ranges of a
trace's events, each event first checked by :class:`~workbench.evidence._bounds.TraceBounds`.
Two paths give the same result:

- :meth:`EventReader.take_checked` checks an event (plain values, as ``json`` reads it) with
  :meth:`TraceBounds.event` and then reads it field by field, each field checked on its own:
  every message a bad event gets comes from here;
- :meth:`EventReader.take_batch` reads the :class:`~workbench.evidence._jsonstream.TraceEvent`
  structs of the stream's typed decode, in the shapes nearly every event of a real trace has (a
  name seen before, finite ``ts`` and ``dur`` within their bounds, integer ids, ``args`` with
  the keys Kineto writes: a runtime call's and a GPU activity's are read by typed msgspec
  structs, which refuse an unknown key, an integer past 64 bits or a malformed launch shape),
  and hands anything else, unchanged and as plain values, to :meth:`EventReader.take_checked`.
  It changes nothing before it has decided to take an event, so the hand-over gives the same
  result and the same message (a test runs both on the same events).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar

import msgspec

from workbench.evidence._assemble import (
    LAUNCH_CALLS,
    UNNUMBERED,
    Activity,
    is_measure_range,
    step_index,
)
from workbench.evidence._bounds import MAX_CLOCK_US, MAX_INT, MAX_SPAN_US, TraceBounds
from workbench.evidence._jsonstream import TraceEvent, decode_value
from workbench.evidence.operators import OperatorCollector
from workbench.evidence.run import TraceError

__all__ = ["EventReader"]

_KIND_BY_CAT = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
}
_RUNTIME_CATS = {"cuda_runtime", "Runtime", "cuda_driver", "Driver"}
_CPU_STEP_CATS = {"user_annotation", "cpu_op", "Operator"}
_GPU_STEP_CATS = {"gpu_user_annotation"}
#: What the fast path does with an event of each category (absent: checks its times only).
_LAUNCH, _CPU_STEP, _GPU_STEP, _SPAN = "launch", "cpu step", "gpu step", "span"
_ROLE = {
    **_KIND_BY_CAT,
    **dict.fromkeys(_RUNTIME_CATS, _LAUNCH),
    **dict.fromkeys(_CPU_STEP_CATS, _CPU_STEP),
    **dict.fromkeys(_GPU_STEP_CATS, _GPU_STEP),
    "Trace": _SPAN,
}
_EPOCH_LIKE_US = 1e12
#: Distinct range names whose step index is remembered (bounded; names past it are matched anew).
_STEP_MEMO = 1 << 16
#: Distinct launch shapes shared between activities (bounded).
_SHAPE_MEMO = 1 << 16
_UNSEEN = object()
_T = TypeVar("_T")
#: Integer bounds, exclusive (a constant, not ``-MAX_INT`` negated at each comparison).
_INT_LO, _INT_HI = -MAX_INT, MAX_INT


class EventReader:
    """Keeps only what the run needs from each event (GPU activities, launches, steps).

    Args:
        where: The file, for messages.
    """

    def __init__(self, where: str, operators: OperatorCollector | None = None) -> None:
        self.where = where
        #: Also fed every event read (the one-pass read of a run and its operators).
        self.operators = operators
        self._timed_op = None if operators is None else operators.timed
        self.bounds = TraceBounds(where)
        self._names = self.bounds.names
        self.activities: list[Activity] = []
        self.launch_s: dict[int, float] = {}
        #: Duration of each launch call (:data:`LAUNCH_CALLS`) by correlation id, s.
        self.launch_dur_s: dict[int, float] = {}
        self.cpu_steps: list[tuple[str, int, float, float]] = []
        self.gpu_steps: list[tuple[str, int, float, float]] = []
        self.base_us: float | None = None
        self._steps: dict[str, int | None] = {}
        self._shapes: dict[tuple[int, int, int], tuple[int, int, int]] = {}

    def take(self, index: int, ev: TraceEvent) -> None:
        """Read event ``index`` (:meth:`take_batch` of one event)."""
        self.take_batch(index, (ev,))

    def take_batch(self, start: int, events: Sequence[TraceEvent]) -> None:
        """Read ``events`` (the first is event ``start``): common shapes here, the rest checked.

        An event of a shape this does not read is handed, unchanged, to :meth:`take_any`.

        NOTE: hot (once per event, millions of times): lookups are local and calls few, and an
        event is handed over before anything is changed (an extend that fails fails either way).
        """
        names, steps, role_of, bounds = self._names, self._steps, _ROLE.get, self.bounds
        timed = self._timed_op
        for index, ev in enumerate(events, start):
            raw = ev.name
            name = names.get(raw) if type(raw) is str else None
            if name is not None:
                ph = ev.ph
                if ph == "X":
                    ts: Any = ev.ts
                    dur: Any = ev.dur
                    cat = ev.cat
                    t_ts, t_dur = type(ts), type(dur)
                    # NOTE: within these bounds a time is finite, fits 64 bits and needs no
                    # check of TraceBounds.event or of _times; anything else is read the
                    # checked way.
                    if (
                        (t_ts is float or t_ts is int)
                        and (t_dur is float or t_dur is int)
                        and -MAX_CLOCK_US < ts < MAX_CLOCK_US
                        and 0 <= dur <= MAX_SPAN_US
                        and type(cat) is str
                    ):
                        if t_ts is int or t_dur is int:
                            ts, dur = float(ts), float(dur)
                        role = role_of(cat)
                        if role is _CPU_STEP or role is None:
                            if ts < bounds.lo_us or ts + dur > bounds.hi_us:
                                bounds.extend(index, name, ts, ts + dur)
                            if role is not None:
                                step = steps.get(name, _UNSEEN)
                                if step is not None:
                                    self._step(name, step, ts, dur, self.cpu_steps)
                                if timed is not None:
                                    timed(ev, cat, name, ts, dur, None)
                            continue
                        if role is _LAUNCH:
                            args = self._launch(index, ev, name, ts, dur)
                            if args is not None:
                                if timed is not None:
                                    timed(ev, cat, name, ts, dur, args)
                                continue
                        elif role is _GPU_STEP or role is _SPAN:
                            self._extend(index, name, ts, dur)
                            if role is _SPAN:
                                bounds.window += [ts, ts + dur]
                            else:
                                step = steps.get(name, _UNSEEN)
                                self._step(name, step, ts, dur, self.gpu_steps)
                            continue
                        elif self._gpu(index, ev, name, role, ts, dur):
                            continue
                elif ph != "i":
                    continue  # NOTE: only an instant event can be the window's end marker
            self.take_any(index, as_dict(ev))

    def take_any(self, index: int, ev: Any) -> None:
        """Read event ``index`` as plain values (a ``traceEvents`` element as ``json`` reads it).

        Every check on its own (:meth:`take_checked`); the operators get it too.
        """
        self.take_checked(index, ev)
        if self.operators is not None:
            self.operators.take(ev)

    def _step(self, name: str, step: object, ts: float, dur: float,
              windows: list[tuple[str, int, float, float]]) -> None:  # fmt: skip
        if step is _UNSEEN:
            step = self._step_of(name)
        if step is not None:
            start = (ts - self._base(ts)) * 1e-6
            windows.append((name, step, start, start + dur * 1e-6))  # type: ignore[arg-type]

    def _launch(
        self, index: int, ev: TraceEvent, name: str, ts: float, dur: float
    ) -> _LaunchArgs | None:
        """Keep a runtime call whose ids and ``args`` have the usual shapes (``_LaunchArgs``)."""
        args = _typed_args(ev, _LAUNCH_ARGS)
        if args is None:
            return None
        self._extend(index, name, ts, dur)
        corr = args.correlation
        if corr is not None:
            self.launch_s[corr] = (ts - self._base(ts)) * 1e-6
            if name in LAUNCH_CALLS:
                self.launch_dur_s[corr] = dur * 1e-6
        return args

    def _gpu(self, index: int, ev: TraceEvent, name: str, kind: str,
             ts: float, dur: float) -> bool:  # fmt: skip
        """Keep a GPU activity whose ids and ``args`` have the usual shapes (:class:`_GpuArgs`)."""
        args = _typed_args(ev, _GPU_ARGS)
        if args is None:
            return False
        device, stream = args.device, args.stream
        self._extend(index, name, ts, dur)
        bounds = self.bounds
        if dur > bounds.longest_gpu[0]:
            bounds.longest_gpu = (dur, index, name)
        # NOTE: positional (twice as fast as keywords); the test of the two paths compares them
        self.activities.append(
            Activity(
                name, kind, (ts - self._base(ts)) * 1e-6, dur * 1e-6,
                ev.pid if device is _UNSET else device, ev.tid if stream is _UNSET else stream,
                args.correlation, self._shape(args.grid), self._shape(args.block), args.regs,
                args.smem, args.nbytes,
            )
        )  # fmt: skip
        return True

    def _shape(self, v: Sequence[int] | None) -> tuple[int, int, int] | None:
        """A launch shape (three non-negative integers, checked) as one shared tuple.

        Kernels repeat their shapes: a million kernels of a hundred shapes hold a hundred tuples.
        """
        if v is None:
            return None
        t: tuple[int, int, int] = tuple(v)  # type: ignore[assignment]
        kept = self._shapes.get(t)
        if kept is None:
            kept = t
            if len(self._shapes) < _SHAPE_MEMO:
                self._shapes[t] = t
        return kept

    def _extend(self, index: int, name: str, ts: float, dur: float) -> None:
        bounds = self.bounds
        end = ts + dur
        if ts < bounds.lo_us or end > bounds.hi_us:
            bounds.extend(index, name, ts, end)

    def _base(self, ts: float) -> float:
        """The clock's origin, us: set by the first timed event the reader keeps."""
        base = self.base_us
        if base is None:
            # NOTE: epoch-based microsecond clocks (~1.7e15) leave a double ~0.25 us of precision
            # in seconds; times are kept relative to the first event's when the clock is that big.
            base = self.base_us = float(ts) if abs(ts) > _EPOCH_LIKE_US else 0.0
        return base

    def take_checked(self, index: int, ev: Any) -> None:
        """Read event ``index`` with every check on its own (the messages of bad events)."""
        self.bounds.event(index, ev)
        if not isinstance(ev, dict):
            raise TraceError(f"{self.where}: traceEvents[{index}] is not an object")
        if ev.get("ph") != "X":
            return
        cat = ev.get("cat")
        if type(cat) is not str:
            return  # NOTE: no category this reads (a list or an object is not even hashable)
        kind = _KIND_BY_CAT.get(cat)
        if kind is not None:
            self._activity(index, ev, kind)
        elif cat in _RUNTIME_CATS:
            args = ev.get("args")
            corr = (args if type(args) is dict else _args(self.where, index, ev)).get("correlation")
            if type(corr) is int:
                start, dur = self._times(index, ev)
                self.launch_s[corr] = start
                name = ev.get("name")
                if type(name) is str and name in LAUNCH_CALLS:
                    self.launch_dur_s[corr] = dur
        elif cat in _CPU_STEP_CATS or cat in _GPU_STEP_CATS:
            name = ev.get("name")
            step = self._step_of(name)
            if step is not None:
                start, dur = self._times(index, ev)
                windows = self.gpu_steps if cat in _GPU_STEP_CATS else self.cpu_steps
                windows.append((str(name), step, start, start + dur))

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
        return (ts - self._base(ts)) * 1e-6, dur * 1e-6

    def _activity(self, index: int, ev: Mapping[str, Any], kind: str) -> None:
        start, dur = self._times(index, ev)
        args = _args(self.where, index, ev)
        name = ev.get("name")
        if type(name) is not str:
            raise TraceError(f"{self.where}: traceEvents[{index}] ({kind}) has no string 'name'")
        pid, tid = ev.get("pid"), ev.get("tid")
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
                grid=self._shape(grid),
                block=self._shape(block),
                registers_per_thread=regs,
                shared_memory_bytes=smem,
                bytes=nbytes,
            )
        )


_FIELDS = TraceEvent.__struct_fields__
_UNSET = msgspec.UNSET
#: An integer within 64 bits (as :class:`TraceBounds` holds every id and count to be).
_Int = Annotated[int, msgspec.Meta(ge=_INT_LO + 1, le=_INT_HI - 1)]
_Dim = Annotated[int, msgspec.Meta(ge=0, le=_INT_HI - 1)]
#: A value read by no reader: anything but a list or an object (or an integer past 64 bits).
_Other = _Int | float | str | bool | None


class _LaunchArgs(
    msgspec.Struct, forbid_unknown_fields=True, gc=False, rename={"ext": "External id"}
):
    """A runtime call's ``args`` as Kineto writes them; any other key: read the checked way."""

    correlation: _Int | None = None
    ext: _Other = None
    cbid: _Other = None


class _GpuArgs(
    msgspec.Struct,
    forbid_unknown_fields=True,
    gc=False,
    rename={"regs": "registers per thread", "smem": "shared memory", "nbytes": "bytes",
            "ext": "External id", "blocks": "blocks per SM", "warps": "warps per SM",
            "occupancy": "est. achieved occupancy %", "bandwidth": "memory bandwidth (GB/s)"},
):  # fmt: skip
    """A GPU activity's ``args`` as Kineto writes them; any other key: read the checked way.

    ``device`` and ``stream`` are UNSET when absent (the event's ``pid`` and ``tid`` stand in).
    """

    device: _Int | msgspec.UnsetType | None = _UNSET
    stream: _Int | msgspec.UnsetType | None = _UNSET
    correlation: _Int | None = None
    regs: _Int | None = None
    smem: _Int | None = None
    nbytes: _Int | None = None
    grid: tuple[_Dim, _Dim, _Dim] | None = None
    block: tuple[_Dim, _Dim, _Dim] | None = None
    ext: _Other = None
    queued: _Other = None
    context: _Other = None
    blocks: _Other = None
    warps: _Other = None
    occupancy: _Other = None
    bandwidth: _Other = None


_LAUNCH_ARGS = msgspec.json.Decoder(_LaunchArgs)
_GPU_ARGS = msgspec.json.Decoder(_GpuArgs)


def _typed_args(ev: TraceEvent, decoder: msgspec.json.Decoder[_T]) -> _T | None:
    """``ev.args`` read by ``decoder``, or None: read the event the checked way.

    Read when they and the event's ``pid``, ``tid`` have the usual shapes (integers within 64
    bits, every key known to ``decoder``).
    """
    pid, tid, raw = ev.pid, ev.tid, ev.args
    if not (
        type(pid) is int
        and type(tid) is int
        and _INT_LO < pid < _INT_HI
        and _INT_LO < tid < _INT_HI
        and raw is not _UNSET
    ):
        return None
    try:
        return decoder.decode(raw)
    except msgspec.MsgspecError:
        return None


def as_dict(ev: TraceEvent) -> dict[str, Any]:
    """``ev`` as the plain values of its fields, ``args`` decoded.

    The checked path reads an event as ``json`` reads it; the keys a :class:`TraceEvent` skips
    are ones no reader looks at.
    """
    out = {}
    for key in _FIELDS:
        v = getattr(ev, key)
        if v is not _UNSET:
            out[key] = decode_value(v) if key == "args" else v
    return out


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

    def dim3(self, args: Mapping[str, Any], key: str) -> list[int] | None:
        """``args[key]`` when it is three non-negative integers (or absent: None)."""
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
        return v
