"""Physical bounds on what a trace says, checked event by event before the readers keep anything.

A profiler trace is a window of a few steps of a real run, so its numbers have physical limits:

- a duration is finite, not negative and at most a day (:data:`MAX_SPAN_S`); a time or an id is
  an integer within 64 bits, or a finite float;
- the whole trace (first start to last end over every timed event) spans at most a day, so a
  timestamp that jumps by years names itself;
- no GPU activity lasts longer than the window the profiler says it recorded (Kineto's ``Trace``
  span events and its ``Record Window End`` marker), when the trace says so.

A violation is a :class:`~workbench.evidence.run.TraceError`: one line naming the file, the event
(index and name, escaped) and the bound. Text is bounded and made safe on the way in: names are
shown through :func:`workbench.errors.printable` (control characters and ANSI escapes escaped),
cut at :data:`MAX_NAME_CHARS` (with one warning per trace), and interned, so a million events of
a hundred kernels hold a hundred strings; the distinct names of one trace may total at most
:data:`MAX_NAME_TEXT_CHARS` characters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from workbench._warn import warn
from workbench.errors import printable
from workbench.evidence.run import TraceError

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_NAME_TEXT_CHARS",
    "MAX_SPAN_S",
    "TraceBounds",
    "check_interval",
    "check_span",
    "clean_name",
    "shown",
]

#: Longest name kept from a trace, characters (a long demangled C++ name is ~2,000).
MAX_NAME_CHARS = 64 * 1024
#: Total characters of distinct names one trace may hold (a bound on memory and on records).
MAX_NAME_TEXT_CHARS = 256 * 1024**2
#: Longest duration, and longest span of a whole trace, s (a profiler window is seconds long).
MAX_SPAN_S = 86_400.0
#: Largest magnitude of an integer a trace may hold (times, ids and counts fit in 64 bits).
MAX_INT = 2**63
#: Largest magnitude of a Kineto time, us (~3,000 years after the Unix epoch).
MAX_CLOCK_US = 1e17
MAX_SPAN_US = MAX_SPAN_S * 1e6
_GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
_RUNTIME_CATS = {"cuda_runtime", "Runtime", "cuda_driver", "Driver"}
_WINDOW_END = "Record Window End"


def shown(value: object, limit: int = 120) -> str:
    r"""A name as an error line shows it: escaped, quoted and cut to ``limit`` characters.

    >>> shown("k\x1b[2J")
    "'k\\x1b[2J'"
    """
    text = printable(value) if isinstance(value, str) else printable(repr(value))
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return "'" + text.replace("'", "\\'") + "'"


def _days(seconds: float) -> str:
    if seconds < MAX_SPAN_S * 365:
        return f"{seconds / MAX_SPAN_S:.3g} days"
    return f"{seconds / (MAX_SPAN_S * 365.25):.3g} years"


def clean_name(text: str) -> str:
    """A name from a trace, escaped and cut to :data:`MAX_NAME_CHARS` (no interning, no warning).

    Escaped by :func:`workbench.errors.printable`; for readers without a :class:`TraceBounds`
    (Nsight Systems exports, whose names come from a string table).
    """
    return printable(text[: MAX_NAME_CHARS + 1])[:MAX_NAME_CHARS]


def check_span(where: str, spans: Sequence[tuple[str, float, float]]) -> None:
    """Refuse a trace whose ``(event, start s, end s)`` spans reach more than a day apart."""
    if not spans:
        return
    first = min(spans, key=lambda x: x[1])
    last = max(spans, key=lambda x: x[2])
    if last[2] - first[1] > MAX_SPAN_S:
        raise TraceError(
            f"{where}: {last[0]} lies {_days(last[2] - first[1])} from {first[0]}: a trace "
            "spans seconds, never more than a day (a timestamp that jumps?)"
        )


def check_interval(where: str, event: str, start_s: float, duration_s: float) -> None:
    """Refuse an activity whose duration is negative, not finite or longer than a day.

    Args:
        where: The file, for the message.
        event: The event as the message names it (``traceEvents[3] 'name'``).
        start_s: Start, s.
        duration_s: Duration, s.

    Raises:
        TraceError: One line naming ``event`` and the bound it breaks.
    """
    if not (math.isfinite(start_s) and math.isfinite(duration_s)):
        raise TraceError(f"{where}: {event} has a time that is not a finite number")
    if duration_s < 0:
        raise TraceError(f"{where}: {event} has a negative duration ({duration_s:.6g} s)")
    if duration_s > MAX_SPAN_S:
        raise TraceError(
            f"{where}: {event} lasts {duration_s:.3g} s ({_days(duration_s)}), longer than a day: "
            "no profiled GPU activity or step runs that long (a corrupt 'dur'?)"
        )


class TraceBounds:
    """Checks and cleans Kineto events one by one (see the module doc); ``finish`` at the end.

    Args:
        where: The file, for messages.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        #: Each name seen (as read) -> its cleaned, interned text (a reader's fast path looks here).
        self.names: dict[str, str] = {}
        self._name_chars = 0
        self._cut: tuple[str, int] | None = None
        # NOTE: (time in us, event index, event name); names are formatted only for a message
        self._first: tuple[float, int, object] | None = None
        self._last: tuple[float, int, object] | None = None
        #: The span so far, us (``lo_us`` > ``hi_us`` before the first timed event): an event
        #: inside it cannot widen it, so a reader's fast path calls :meth:`extend` only outside it.
        self.lo_us, self.hi_us = math.inf, -math.inf
        #: The longest GPU activity so far: (duration us, event index, name).
        self.longest_gpu: tuple[float, int, object] = (-1.0, -1, None)
        #: The bounds of the window the profiler says it recorded, us (Trace spans, window end).
        self.window: list[float] = []

    def meta(self, sink: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
        """Wrap a top-level metadata sink so its text (device names, versions) is made safe."""

        def take(key: str, value: Any) -> None:
            sink(key, self._clean(value, 0))

        return take

    def _clean(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.name(value, -1)
        if depth < 3 and isinstance(value, list):
            return [self._clean(v, depth + 1) for v in value]
        if depth < 3 and isinstance(value, dict):
            return {k: self._clean(v, depth + 1) for k, v in value.items()}
        return value

    def name(self, text: str, index: int) -> str:
        """``text`` escaped, cut to :data:`MAX_NAME_CHARS` and interned (``index`` -1: metadata)."""
        kept = self.names.get(text)
        if kept is not None:
            return kept
        safe = printable(text[: MAX_NAME_CHARS + 1])
        if len(safe) > MAX_NAME_CHARS:
            safe = safe[:MAX_NAME_CHARS]
            if self._cut is None:
                at = f"traceEvents[{index}]" if index >= 0 else "the trace's metadata"
                self._cut = (at, len(text))
        kept = self.names.setdefault(safe, safe)
        if kept is safe:
            self._name_chars += len(safe)
            if self._name_chars > MAX_NAME_TEXT_CHARS:
                raise TraceError(
                    f"{self.where}: traceEvents[{index}]: the trace's distinct names pass "
                    f"{MAX_NAME_TEXT_CHARS // 1024**2} Mi characters, more than any profile "
                    "holds (a generated or corrupt trace?)"
                )
        if len(text) <= MAX_NAME_CHARS:
            self.names[text] = kept  # NOTE: never keyed by a long original (it would stay held)
        return kept

    def event(self, index: int, ev: Any) -> None:
        """Check one event's numbers and clean its name in place (a non-object is left alone)."""
        if type(ev) is not dict:
            return
        name = ev.get("name")
        if type(name) is str:
            kept = self.names.get(name)
            ev["name"] = name = kept if kept is not None else self.name(name, index)
        ph = ev.get("ph")
        if ph != "X":
            if ph == "i" and name == _WINDOW_END:
                ts = self._number(index, ev, "ts")
                if ts is not None:
                    self.window.append(ts)
            return
        raw_ts, raw_dur = ev.get("ts"), ev.get("dur")
        if _plain(raw_ts) and _plain(raw_dur):
            ts, dur = float(raw_ts), float(raw_dur)
        else:
            checked = self._number(index, ev, "ts"), self._number(index, ev, "dur")
            if checked[0] is None or checked[1] is None:
                return  # NOTE: the reader says what is missing, if it needs the event
            ts, dur = checked[0], checked[1]
        if dur < 0:
            return  # NOTE: the reader names it as clock skew
        if dur > MAX_SPAN_US:
            check_interval(self.where, _label(index, name), ts * 1e-6, dur * 1e-6)
        self.extend(index, name, ts, ts + dur)
        cat = ev.get("cat")
        if type(cat) is not str:
            return  # NOTE: no category this knows (a list or an object is not even hashable)
        if cat in _GPU_CATS:
            self._ints(index, ev)
            if dur > self.longest_gpu[0]:
                self.longest_gpu = (dur, index, name)
        elif cat in _RUNTIME_CATS:
            self._ints(index, ev)
        elif cat == "Trace":
            self.window += [ts, ts + dur]

    def _number(self, index: int, ev: Mapping[str, Any], key: str) -> float | None:
        v = ev.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        if isinstance(v, int) and not -MAX_INT < v < MAX_INT:
            raise TraceError(
                f"{self.where}: {_label(index, ev.get('name'))}: {key!r} is an integer of "
                f"{_digits(v)} digits, beyond any clock (microseconds fit in 64 bits)"
            )
        if not math.isfinite(v):
            return None  # NOTE: the reader names the event (no finite numeric 'ts')
        if key == "ts" and abs(v) > MAX_CLOCK_US:
            raise TraceError(
                f"{self.where}: {_label(index, ev.get('name'))}: {key!r} is {float(v):.6g}, "
                "not a time in microseconds on any clock"
            )
        return float(v)

    def _ints(self, index: int, ev: Mapping[str, Any]) -> None:
        """Integers the readers keep (pid, tid and every ``args`` value) fit in 64 bits."""
        args = ev.get("args")
        if _small(ev.get("pid")) and _small(ev.get("tid")):
            if type(args) is not dict:
                return
            # NOTE: the common case in one pass over the values, without building (key, value)
            # pairs; the keyed loop below only runs to name an offending value.
            for v in args.values():
                t = type(v)
                if t is int:
                    if not -MAX_INT < v < MAX_INT:
                        break
                elif t is list and not _small(v):
                    break
            else:
                return
        values = [("pid", ev.get("pid")), ("tid", ev.get("tid"))]
        if type(args) is dict:
            values += [(k, v) for k, v in args.items()]
        for key, v in values:
            for x in v if type(v) is list else (v,):
                if type(x) is int and not -MAX_INT < x < MAX_INT:
                    where = key if key in ("pid", "tid") else f"args[{shown(key)}]"
                    raise TraceError(
                        f"{self.where}: {_label(index, ev.get('name'))}: {where} is an integer "
                        f"of {_digits(x)} digits (ids, sizes and counts fit in 64 bits)"
                    )

    def extend(self, index: int, name: object, start: float, end: float) -> None:
        """Widen the trace's span by event ``index`` (``start``, ``end`` us); refuse over a day."""
        first, last = self._first, self._last
        if first is None or last is None:
            self._first, self._last = (start, index, name), (end, index, name)
            self.lo_us, self.hi_us = start, end
            return
        if start >= first[0] and end <= last[0]:
            return
        if start < first[0]:
            self._first = first = (start, index, name)
            self.lo_us = start
        if end > last[0]:
            self._last = last = (end, index, name)
            self.hi_us = end
        span = last[0] - first[0]
        if span > MAX_SPAN_US:
            other = last if first[1] == index else first
            raise TraceError(
                f"{self.where}: {_label(index, name)} lies {_days(span * 1e-6)} from "
                f"{_label(other[1], other[2])}: a trace spans seconds, never more than a day "
                "(a timestamp that jumps?)"
            )

    def finish(self) -> None:
        """The checks that need the whole trace: the declared window, and the name warning."""
        if self._cut is not None:
            at, size = self._cut
            warn(
                f"{self.where}: names longer than {MAX_NAME_CHARS} characters are cut to that "
                f"length (first: {at}, {size} characters)"
            )
        if len(self.window) >= 2:
            window = max(self.window) - min(self.window)
            length, index, name = self.longest_gpu
            if length > window + 1e3:  # NOTE: 1 ms of slack, us
                raise TraceError(
                    f"{self.where}: {_label(index, name)} lasts {length * 1e-6:.6g} s, longer "
                    f"than the {window * 1e-6:.6g} s window the profiler recorded (a corrupt "
                    "'dur'?)"
                )


def _small(v: object) -> bool:
    """Whether ``v`` is no integer, or one within 64 bits (a list: all its integers are)."""
    if type(v) is int:
        return -MAX_INT < v < MAX_INT
    if type(v) is list:
        for x in v:
            if type(x) is int and not -MAX_INT < x < MAX_INT:
                return False
    return True


def _plain(v: object) -> TypeGuard[float]:
    """A float or int a clock can hold (the fast path; anything else is looked at closely)."""
    if type(v) is float:
        return -MAX_CLOCK_US < v < MAX_CLOCK_US
    return type(v) is int and -MAX_INT < v < MAX_INT and -MAX_CLOCK_US < v < MAX_CLOCK_US


def _label(index: int, name: object) -> str:
    return f"traceEvents[{index}] {shown(name)}"


def _digits(v: int) -> int:
    """Decimal digits of ``v`` without converting it to text (which fails past 4,300 digits)."""
    return max(1, math.floor(abs(v).bit_length() * math.log10(2)) + 1)
