"""Run records: one run's locked tags and its per-kernel and per-model results, as JSON.

File layout (``schema_version`` 3; version 1 records, without the embedded profile, the
reproducer command and HFU, and version 2 records, without MBU, the kernel count and the step
overhead, still load)::

    {"kind": "workbench.run_record", "schema_version": 2,
     "tags": {"compiler": {...}, "runtime": {...}, "hardware": {...}, "workload": {...}},
     "kernels": [{...mechanism fields, predicted_s, measured_s...}, ...],
     "model": {...MFU, time, tokens/s, stall fraction by layer type...},
     "measurement": null | {...how the kernels were measured...},
     "hardware_profile": "...canonical JSON of the hardware profile the run was mapped on...",
     "command": "workbench run --model ... --record run.json",
     "lock": {"compiler": sha256, "runtime": ..., "hardware": ..., "workload": ...,
              "record": sha256 over everything but the lock}}

Writes are atomic (temp file + rename). Reads verify the kind, the schema version, every field and
every lock hash; anything else is a :class:`RecordError` naming the file, never a half-read record.

What the hash proves: the SHA-256 locks are **unkeyed**, so they prove integrity (nothing was
edited after writing without re-locking), not authenticity (whoever edits a record can recompute
them). A record is therefore also checked for physical plausibility on read
(:func:`workbench.review.records._sanity.physical_problems`: negative/zero/NaN/inf times, MFU > 1,
HFU < MFU ...) and for internal consistency
(:func:`workbench.review.records._consistency.consistency_problems`: duplicated or missing kernels,
per-kernel sums that disagree with the totals, implausible chip counts), and refused whatever its
hashes say. The embedded hardware profile must hash to the recorded ``hardware_hash``, so a
record re-maps alone (:func:`embedded_hardware`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench._files import read_text_bounded, write_text_safely
from workbench.errors import WorkbenchError
from workbench.hw.loader import hardware_hash
from workbench.hw.schema import Hardware
from workbench.review.records import _types
from workbench.review.records._consistency import consistency_problems
from workbench.review.records._sanity import physical_problems, tag_problems
from workbench.review.records._types import (
    RECORD_KIND,
    SCHEMA_VERSION,
    KernelResult,
    Measurement,
    ModelResult,
    RecordError,
    RunRecord,
    record_from_mapping,  # noqa: F401 (re-exported: __all__ adds _types.__all__)
)
from workbench.review.records.tags import (
    TAG_GROUPS,
    CompilerTags,
    HardwareTags,
    RunTags,
    RuntimeTags,
    WorkloadTags,
    digest,
)

__all__ = [
    "check_embedded_profile",
    "embedded_hardware",
    "load_record",
    "record_from_dict",
    "record_to_dict",
    "save_record",
]
__all__ += _types.__all__  # NOTE: the record types are re-exported from here

#: Largest run record read, bytes (a Llama-2-70B record is ~1 MiB).
MAX_RECORD_BYTES = 64 * 2**20


# --- JSON -------------------------------------------------------------------------------------
def _lock(body: dict[str, Any]) -> dict[str, str]:
    lock = {g: digest(body["tags"][g]) for g in TAG_GROUPS}
    lock["record"] = digest(body)
    return lock


def record_to_dict(record: RunRecord) -> dict[str, Any]:
    """The record as plain JSON data, lock hashes included."""
    body = {
        "kind": RECORD_KIND,
        "schema_version": record.schema_version,
        **json.loads(json.dumps(dataclasses.asdict(record))),
    }
    body["kind"] = RECORD_KIND
    return {**body, "lock": _lock(body)}


def save_record(record: RunRecord, path: str | Path) -> Path:
    """Write ``record`` to ``path`` atomically (``workbench._files``); returns the path."""
    path = Path(path)
    if not path.parent.is_dir():
        raise RecordError(f"{path}: folder {path.parent} does not exist")
    text = json.dumps(record_to_dict(record), indent=1, allow_nan=False) + "\n"
    if len(text) > MAX_RECORD_BYTES:  # NOTE: ASCII JSON, one byte a character
        raise RecordError(
            f"{path}: the record would be {len(text) / 2**20:.1f} MiB, over the "
            f"{MAX_RECORD_BYTES // 2**20} MiB that load_record reads; nothing written"
        )
    write_text_safely(path, text, what="record")
    return path


_NESTED = (RunTags, CompilerTags, RuntimeTags, HardwareTags, WorkloadTags, ModelResult, Measurement)


def _nested(hint: Any) -> type | None:
    """The record dataclass a field holds (``X`` or ``X | None``), or None."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return next((o for o in options if o in _NESTED), None)


def _tuplify(value: Any) -> Any:
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value


_SCALAR_OK: dict[Any, Any] = {
    # NOTE: within int64 (a 10**400 byte count is no measurement and breaks float maths)
    int: lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**63,
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300,
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    type(None): lambda v: v is None,
}


def _check_scalar(value: Any, hint: Any, where: str) -> None:
    """Reject values whose JSON type cannot be the field's type (e.g. a string for a float)."""
    if typing.get_origin(hint) is tuple:  # JSON lists: check every element's type too
        if not isinstance(value, list):
            raise RecordError(f"{where}: expected a list, got {type(value).__name__}")
        args = typing.get_args(hint)
        items = args[:1] * len(value) if len(args) == 2 and args[1] is Ellipsis else args
        if len(items) != len(value):
            raise RecordError(f"{where}: expected {len(items)} items, got {len(value)}")
        for i, (item, sub) in enumerate(zip(value, items, strict=True)):
            _check_scalar(item, sub, f"{where}[{i}]")
        return
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    checks = [_SCALAR_OK[a] for a in allowed if a in _SCALAR_OK]
    if checks and len(checks) == len(allowed) and not any(c(value) for c in checks):
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= 1e18:
            raise RecordError(f"{where}: number out of range for a run record")
        raise RecordError(f"{where}: expected {hint}, got {type(value).__name__}")


@functools.cache
def _schema(cls: type) -> tuple[dict[str, Any], frozenset[str], frozenset[str]]:
    """A record dataclass's field types, field names and required names (resolved once)."""
    # NOTE: typing.get_type_hints re-evaluates every annotation; once per kernel was most of
    # the time a record took to load.
    fields = dataclasses.fields(cls)
    required = frozenset(
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    return typing.get_type_hints(cls), frozenset(f.name for f in fields), required


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected an object, got {type(data).__name__}")
    hints, names, required = _schema(cls)
    extra, missing = set(data) - names, required - set(data)
    if extra or missing:
        what = f"unknown field {sorted(extra)[0]!r}" if extra else f"missing {sorted(missing)[0]!r}"
        raise RecordError(f"{where}: {what}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        at = f"{where}.{key}"
        nested = _nested(hints[key])
        if nested is not None and value is not None:
            kwargs[key] = _build(nested, value, at)
        elif cls is RunRecord and key == "kernels":
            if not isinstance(value, list):
                raise RecordError(f"{at}: expected a list")
            kwargs[key] = tuple(_build(KernelResult, v, f"{at}[{i}]") for i, v in enumerate(value))
        else:
            _check_scalar(value, hints[key], at)
            kwargs[key] = _tuplify(value)
    return cls(**kwargs)


def record_from_dict(data: Any, where: str = "run record") -> RunRecord:
    """Validate plain data (as read from JSON) and build the :class:`RunRecord`.

    Raises:
        RecordError: Foreign data, a newer schema, a malformed field or a lock-hash mismatch.
    """
    if not isinstance(data, dict) or data.get("kind") != RECORD_KIND:
        raise RecordError(f"{where}: not a workbench run record (no kind {RECORD_KIND!r})")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise RecordError(
            f"{where}: schema_version {version!r} is not supported (this workbench reads "
            f"<= {SCHEMA_VERSION}; upgrade workbench to read newer records)"
        )
    lock = data.get("lock")
    if not isinstance(lock, dict):
        raise RecordError(f"{where}: missing its lock hashes")
    body = {k: v for k, v in data.items() if k != "lock"}
    raw_tags = body.get("tags")
    tags: dict[str, Any] = raw_tags if isinstance(raw_tags, dict) else {}
    for group in TAG_GROUPS:
        if group not in tags or digest(tags[group]) != lock.get(group):
            raise RecordError(
                f"{where}: {group} tags were edited after the record was written "
                "(sha256 lock mismatch); re-run instead of editing"
            )
    if digest(body) != lock.get("record"):
        raise RecordError(
            f"{where}: results were edited after the record was written (sha256 lock mismatch)"
        )
    body.pop("kind")
    record = _build(RunRecord, body, where)
    _refuse(
        where,
        "physically impossible",
        physical_problems(record),
        "the lock hashes are unkeyed (integrity, not authenticity), so impossible records are "
        "refused whatever their hash",
    )
    _refuse(
        where,
        "malformed tags",
        tag_problems(record.tags),
        "the tool never writes such tags, so this record was edited (and re-locked) after writing",
    )
    _refuse(
        where,
        "inconsistent run record",
        consistency_problems(record),
        "a record the tool wrote agrees with itself, so this one was edited (and re-locked) "
        "after writing",
    )
    check_embedded_profile(record, where)
    return record


def _refuse(where: str, what: str, problems: Sequence[str], why: str) -> None:
    """Raise :class:`RecordError` naming the first of ``problems`` (none: return)."""
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise RecordError(f"{where}: {what}: {problems[0]}{more}; {why}")


def check_embedded_profile(record: RunRecord, where: str = "run record") -> None:
    """Verify the embedded profile's bytes hash to ``tags.hardware.hardware_hash``.

    The hash is taken over the embedded JSON itself (the same canonical form as
    :func:`workbench.hw.hardware_hash`), so the check holds even when today's hardware schema
    can no longer parse an older profile.

    Raises:
        RecordError: The embedded profile is not JSON or does not hash to the recorded hash.
    """
    if not record.hardware_profile:
        return
    try:
        data = json.loads(record.hardware_profile, parse_constant=_no_constant)
    except (ValueError, RecordError):
        raise RecordError(f"{where}: hardware_profile is not JSON") from None
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    if hashlib.sha256(blob.encode()).hexdigest() != record.tags.hardware.hardware_hash:
        raise RecordError(
            f"{where}: hardware_profile does not hash to tags.hardware.hardware_hash "
            "(edited after the record was written)"
        )


def embedded_hardware(record: RunRecord, where: str = "run record") -> Hardware | None:
    """The hardware profile embedded in ``record``, parsed (None if absent or unparseable).

    None for version-1 records, and for a profile the current hardware schema no longer accepts
    (schema drift); callers then fall back to the named profile (see
    :func:`workbench.review.records.reproduce.hardware_for`).

    Raises:
        RecordError: The embedded profile does not hash to the recorded hash.
    """
    if not record.hardware_profile:
        return None
    check_embedded_profile(record, where)
    try:
        hw = Hardware.model_validate(json.loads(record.hardware_profile))
    except (ValueError, TypeError):
        return None
    return hw if hardware_hash(hw) == record.tags.hardware.hardware_hash else None


def _no_constant(name: str) -> Any:
    raise RecordError(f"{name} is not a number a run record may hold")


def load_record(path: str | Path) -> RunRecord:
    """Read and verify a run record file.

    Raises:
        RecordError: Missing, unreadable, truncated, corrupt, foreign, newer or tampered file.
    """
    path = Path(path)
    if not path.exists():
        raise RecordError(f"{path}: no such run record")
    try:  # NOTE: only a regular file of bounded size: a pipe or /dev/zero would never end
        text = read_text_bounded(path, MAX_RECORD_BYTES, "run record")
    except WorkbenchError as exc:
        raise RecordError(str(exc)) from None
    if not text.strip():
        raise RecordError(f"{path}: empty file (truncated run record?)")
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecordError as exc:
        raise RecordError(f"{path}: {exc}") from None
    except RecursionError:
        raise RecordError(f"{path}: JSON nested too deep for a run record") from None
    except json.JSONDecodeError as exc:
        end = "truncated" if exc.pos >= len(text.rstrip()) - 1 else "corrupt"
        raise RecordError(
            f"{path}: {end} JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"
        ) from None
    return record_from_dict(data, where=str(path))
