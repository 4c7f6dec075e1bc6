"""Stream a Chrome-trace JSON document: small top-level values whole, ``traceEvents`` one by one.

A Kineto trace is ``{"schemaVersion": 1, "deviceProperties": [...], ..., "traceEvents": [...]}``
(or, in the Chrome trace format's array form, just the event array). Loading it whole with
``json.load`` holds every event as a dict at once; this decodes one event at a time with
``json.JSONDecoder.raw_decode`` over a sliding text buffer, so memory stays at one buffer chunk
plus whatever the caller keeps from each event.

:meth:`ChromeTraceStream.batches` with ``typed=True`` decodes each batch into
:class:`TraceEvent` structs where it can: msgspec reads only the fields a reader looks at
(``ph``, ``cat``, ``name``, ``pid``, ``tid``, ``ts``, ``dur``) and keeps ``args`` as its raw
JSON text, skipping every other key at C speed (a real trace's call stacks, module paths and
per-kernel occupancy figures are most of its text). A batch that cannot be read so (an element
that is no object, ``NaN``, a number past a double's range, malformed text) is decoded as
before, into plain values.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from workbench.evidence._bounds import shown
from workbench.evidence.run import TraceError

__all__ = ["ChromeTraceStream", "TraceEvent", "decode_value"]

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")
_DECODER = json.JSONDecoder()
_MSGSPEC = msgspec.json.Decoder()


class TraceEvent(msgspec.Struct, gc=False):
    """One ``traceEvents`` element as the typed batch decode reads it (see the module doc).

    A key the element lacks reads ``msgspec.UNSET`` (so an absent key and ``null``, None, differ
    as they do in a dict); the values are as ``json`` decodes them. ``args`` is the raw text of
    the element's ``args`` (any JSON value), for :func:`decode_value` or a typed decoder.
    """

    ph: Any = msgspec.UNSET
    cat: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    pid: Any = msgspec.UNSET
    tid: Any = msgspec.UNSET
    ts: Any = msgspec.UNSET
    dur: Any = msgspec.UNSET
    args: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_TYPED = msgspec.json.Decoder(list[TraceEvent])
_CHUNK = 1 << 19
#: Consecutive digits the sample of :func:`_may_hold_huge_int` holds where a huge integer is.
_SAMPLES = 6
_SAMPLED_RUN = re.compile(f"[0-9]{{{_SAMPLES}}}")
_DIGITS = re.compile(r"[0-9]+")
#: Between an object element's closing ``}`` and the next one's ``{``.
_NEXT_OBJECT = re.compile(r"[ \t\n\r]*,[ \t\n\r]*\{")
#: Batch decodes tried per buffer before reading its elements one by one.
_CUT_TRIES = 4
#: ``}`` looked at, from the buffer's end back, for a cut (an event holds a handful).
_CUT_LOOK_BACK = 4096


class ChromeTraceStream:
    """Parse the top level of a Chrome trace from a chunk iterator.

    Args:
        chunks: Text chunks of the document, in order.
        where: The file name, for error messages.
        on_meta: Called with ``(key, value)`` for every top-level key other than ``traceEvents``.
    """

    def __init__(
        self, chunks: Iterator[str], where: str, on_meta: Callable[[str, Any], None]
    ) -> None:
        self._chunks = chunks
        self._where = where
        self._on_meta = on_meta
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._slow = False  # True: elements are read one by one until the buffer grows
        self._comma_taken = False
        self._typed = False

    def events(self) -> Iterator[Any]:
        """Yield every element of the ``traceEvents`` array, reading the metadata around it."""
        for batch in self.batches():
            yield from batch

    def batches(self, *, typed: bool = False) -> Iterator[list[Any]]:
        """:meth:`events` in lists, in order (a caller's loop over each runs at C speed).

        ``typed``: a list holds :class:`TraceEvent` structs where its text reads as such (see
        the module doc), else the plain values :meth:`events` yields.
        """
        self._typed = typed
        first = self._peek()
        if first == "[":
            yield from self._array("traceEvents")
            self._expect_end()
            return
        if first != "{":
            raise TraceError(f"{self._where}: not a Chrome trace (expected a JSON object)")
        self._pos += 1
        seen = False
        while True:
            c = self._peek()
            if c == "}":
                self._pos += 1
                break
            key = self._value("a top-level key")
            if not isinstance(key, str):
                raise TraceError(f"{self._where}: malformed JSON (a top-level key is not a string)")
            self._punct(":", f"after key {key!r}")
            if key == "traceEvents":
                c = self._peek()
                if c == "":
                    raise TraceError(f"{self._where}: truncated JSON at 'traceEvents'")
                if c != "[":
                    raise TraceError(f"{self._where}: 'traceEvents' is not an array")
                seen = True
                yield from self._array("traceEvents")
            else:
                self._on_meta(key, self._value(f"the value of {key!r}"))
            c = self._peek()
            if c == ",":
                self._pos += 1
            elif c != "}":
                self._fail_at(f"after the value of {key!r}")
        if not seen:
            raise TraceError(f"{self._where}: no 'traceEvents' array (not a Kineto/Chrome trace)")
        self._expect_end()

    def _array(self, name: str) -> Iterator[list[Any]]:
        self._pos += 1  # the '['
        if self._peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            items = self._lines()
            if items:
                yield items
                index += len(items) - 1  # the index of the last element yielded
                if self._comma_taken:
                    index += 1
                    continue
            else:
                yield [self._value(f"{name}[{index}]")]
            c = self._peek()
            if c == ",":
                self._pos += 1
            elif c == "]":
                self._pos += 1
                return
            else:
                self._fail_at(f"after {name}[{index}]")
            index += 1

    def _lines(self) -> list[Any] | None:
        r"""Every element from ``_pos`` to the buffer's last ``}`` before ``,`` ``{``, in one call.

        Trace writers end every event with ``}`` and put ``,`` (and any whitespace: a newline,
        ``\r\n``, a space, nothing) before the next one's ``{``: one event per line, one spread
        over several lines (PyTorch's), or the whole array on one line (``json.dump``). So the
        elements up to the last such cut decode in one call (:func:`_decode_batch`) instead of
        one Python step each (~3x faster). A cut that is no element's end (inside a string, or
        between two objects of a list inside an event) leaves a string or a bracket open, so the
        call fails; when it succeeds, the elements are exactly the array's (JSON reads left to
        right with one token of look-ahead, and the cut ends on a ``}`` token). A failed call is
        retried at the last cut before where it failed, a few times; then the elements are read
        one by one, with their exact error messages, until the buffer is next refilled. Less
        than a chunk left in the buffer is topped up first, so the event the last chunk cut
        joins the next batch instead of failing a decode at the buffer's end.
        """
        if self._slow:
            return None
        if not self._eof and len(self._buf) - self._pos < _CHUNK:
            self._grow()  # NOTE: the event cut by the buffer's end is then decoded in the batch
        buf, start = self._buf, self._pos
        limit = len(buf)
        for _ in range(_CUT_TRIES):
            cut = _last_cut(buf, start, limit)
            if cut is None:
                break
            close, after_comma = cut
            try:
                items = _decode_batch(f"[{buf[start : close + 1]}]", self._typed)
            except json.JSONDecodeError as exc:
                limit = min(close, start + exc.pos - 1)  # NOTE: the text before it was valid
                continue
            except (ValueError, RecursionError):
                break
            self._pos, self._comma_taken = after_comma, True
            return items
        self._slow = True
        return None

    def _fill(self) -> bool:
        if self._eof:
            return False
        if self._pos > _CHUNK:
            self._buf = self._buf[self._pos :]
            self._pos = 0
        chunk = next(self._chunks, "")
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        self._slow = False
        return True

    def _grow(self) -> bool:
        """Read until the text from ``_pos`` on is twice as long (or the input ends).

        A value cut by the buffer's end is decoded again from its start; doubling what follows
        ``_pos`` each time (instead of adding one chunk) keeps a value of ``n`` characters at
        ``O(n)`` decoding and copying in all, not ``O(n**2 / chunk)``.
        """
        if self._eof:
            return False
        parts = [self._buf[self._pos :]]
        size, target = len(parts[0]), max(2 * len(parts[0]), _CHUNK)
        while size < target:
            chunk = next(self._chunks, "")
            if not chunk:
                self._eof = True
                break
            parts.append(chunk)
            size += len(chunk)
        self._buf, self._pos = "".join(parts), 0
        self._slow = False
        return len(parts) > 1

    def _peek(self) -> str:
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def _value(self, what: str) -> Any:
        self._peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self._buf, self._pos)
            except ValueError as exc:
                if not isinstance(exc, json.JSONDecodeError):  # an integer past 4,300 digits
                    raise TraceError(
                        f"{self._where}: {what}{_named(self._buf, self._pos)} holds an integer "
                        "of thousands of digits (no time, id or count is that big)"
                    ) from None
                # NOTE: a value cut by the chunk boundary fails near the buffer's end (a partial
                # literal such as ``-Infinit`` fails up to 9 characters before it) or, for a
                # string, anywhere; read more before calling it malformed.
                at_end = exc.pos >= len(self._buf) - 10 or exc.msg.startswith("Unterminated")
                if at_end and self._grow():
                    continue
                if at_end:
                    raise TraceError(f"{self._where}: truncated JSON inside {what}") from None
                raise TraceError(f"{self._where}: malformed JSON in {what} ({exc.msg})") from None
            # NOTE: a number cut by the chunk boundary decodes as its prefix ("1.5e" as 1.5): when
            # only number characters follow it up to the buffer's end, read more and decode again.
            if _NUMBER_TAIL.fullmatch(self._buf, end):
                if self._fill():
                    continue
                if end < len(self._buf):
                    raise TraceError(f"{self._where}: truncated JSON inside {what}")
            self._pos = end
            return value

    def _punct(self, ch: str, where: str) -> None:
        if self._peek() != ch:
            self._fail_at(where)
        self._pos += 1

    def _fail_at(self, where: str) -> None:
        if self._peek() == "":
            raise TraceError(f"{self._where}: truncated JSON {where}")
        raise TraceError(f"{self._where}: malformed JSON {where}")

    def _expect_end(self) -> None:
        if self._peek() != "":
            raise TraceError(f"{self._where}: extra data after the trace document")


def _decode_batch(text: str, typed: bool) -> Any:
    """:func:`decode_value` of ``text``, or, ``typed``, :class:`TraceEvent` structs where it can."""
    if typed and not _may_hold_huge_int(text):
        try:
            return _TYPED.decode(text)
        except (msgspec.MsgspecError, RecursionError):
            pass
    return decode_value(text)


def _may_hold_huge_int(text: str) -> bool:
    """Whether ``text`` holds a run of digits longer than Python reads as an integer.

    ``json`` (and msgspec) refuse an integer of more than ``sys.get_int_max_str_digits()``
    digits (4,300) wherever it stands, so such a batch is read the plain way, which names it;
    the typed decode would skip one in a key it does not read. A run of ``n`` digits holds
    ``n // stride`` or more positions a multiple of ``stride`` apart, so the sample of every
    ``stride``-th character finds every candidate in about ``len(text) / stride`` steps.
    """
    limit = sys.get_int_max_str_digits()
    if limit <= 0:
        return False
    stride = limit // _SAMPLES
    for m in _SAMPLED_RUN.finditer(text[::stride]):
        start = m.start() * stride
        for run in _DIGITS.finditer(text, max(start - stride, 0), start + limit + 1):
            if run.end() - run.start() > limit:
                return True
    return False


def decode_value(text: str | bytes | msgspec.Raw) -> Any:
    """``json.loads(text)``'s answer (or exception), from msgspec's decoder where it has one.

    msgspec decodes a real trace's events ~1.6x faster than ``json``, and to the same values:
    floats correctly rounded, integers of any size, the last of duplicate keys. What it refuses
    and ``json`` reads (``NaN``, ``Infinity``, ``1e400``, a lone surrogate escape) or refuses with
    its own message (malformed text, the position a retry needs) is decoded by ``json`` again.
    """
    try:
        return _MSGSPEC.decode(text)
    except (msgspec.MsgspecError, RecursionError):
        return json.loads(text if isinstance(text, str | bytes) else bytes(text))


def _last_cut(buf: str, start: int, end: int) -> tuple[int, int] | None:
    """The last ``}`` in ``buf[start:end]`` before ``,`` and ``{``, and the index past the comma.

    None when there is none among the last :data:`_CUT_LOOK_BACK` closing braces.
    """
    close = buf.rfind("}", start, end)
    for _ in range(_CUT_LOOK_BACK):
        if close < start:
            return None
        m = _NEXT_OBJECT.match(buf, close + 1)
        if m is not None:
            return close, buf.index(",", close + 1) + 1
        close = buf.rfind("}", start, close)
    return None


_NAME = re.compile(r'"name"\s*:\s*("(?:[^"\\]|\\.){0,200}")')


def _named(buf: str, pos: int) -> str:
    """`` 'name'`` of the event starting at ``pos`` when its name can be seen, else ``""``."""
    m = _NAME.search(buf, pos, pos + 4096)
    try:
        name = json.loads(m.group(1)) if m else None
    except ValueError:
        name = None
    return f" {shown(name)}" if isinstance(name, str) else ""
