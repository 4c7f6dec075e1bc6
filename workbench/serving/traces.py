"""Trace files: request arrivals with prompt and output lengths, as versioned JSON.

A trace file is one JSON object, columns rather than one object per request (compact)::

    {"schema_version": 1, "kind": "workbench-serving-trace", "name": "...",
     "description": "...", "provenance": {...},
     "requests": {"arrival_s": [...], "prompt_tokens": [...], "output_tokens": [...]}}

Files are written atomically (temporary file, then rename) and read defensively: a missing,
corrupt, truncated, foreign or newer-schema file raises one :class:`ServingError` line naming the
file. The shipped traces live in ``workbench/serving/traces/`` and are made by
``scripts/make_traces.py``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

from workbench._files import read_text_bounded, write_text_safely
from workbench.errors import WorkbenchError
from workbench.serving._errors import ServingError
from workbench.serving.workload import Workload

__all__ = ["TRACE_KIND", "TRACE_SCHEMA_VERSION", "list_traces", "load_builtin_trace", "load_trace",
           "save_trace"]  # fmt: skip

TRACE_SCHEMA_VERSION = 1
TRACE_KIND = "workbench-serving-trace"
_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")


#: The largest trace file read, bytes (about 10 million requests).
MAX_TRACE_BYTES = 512 << 20


def _read_json(path: Path) -> object:
    """The parsed JSON of a trace file: a regular file of bounded size (never blocks on a pipe)."""
    try:
        text = read_text_bounded(path, MAX_TRACE_BYTES, "trace file")
    except WorkbenchError as exc:
        raise ServingError(str(exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ServingError(
            f"{path}: not valid JSON (corrupt or truncated) at line {exc.lineno}"
        ) from None
    except RecursionError:
        raise ServingError(f"{path}: JSON nested too deeply") from None


def _column(path: Path, requests: dict[str, object], name: str, integer: bool) -> np.ndarray:
    values = requests.get(name)
    if not isinstance(values, list):
        raise ServingError(f"{path}: requests.{name} is missing or not a list")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise ServingError(f"{path}: requests.{name} must hold only numbers")
    out = np.array(values, dtype=np.float64)
    if integer and not np.all(out == np.round(out)):
        raise ServingError(f"{path}: requests.{name} must hold whole numbers of tokens")
    return out.astype(np.int64) if integer else out


def load_trace(path: str | Path) -> Workload:
    """Read a trace file into a :class:`Workload`.

    Args:
        path: The JSON trace file.

    Returns:
        The workload, named after the trace.

    Raises:
        ServingError: One line naming the file, for a missing, corrupt, truncated, foreign or
            newer-schema file, or for invalid requests.
    """
    path = Path(path)
    doc = _read_json(path)
    if not isinstance(doc, dict) or doc.get("kind") != TRACE_KIND:
        raise ServingError(f"{path}: not a workbench serving trace (kind != {TRACE_KIND!r})")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ServingError(f"{path}: schema_version must be a positive integer, got {version!r}")
    if version > TRACE_SCHEMA_VERSION:
        raise ServingError(
            f"{path}: schema_version {version} is newer than this workbench reads "
            f"({TRACE_SCHEMA_VERSION}); upgrade workbench"
        )
    requests = doc.get("requests")
    if not isinstance(requests, dict):
        raise ServingError(f"{path}: 'requests' is missing or not an object")
    arrival = _column(path, requests, "arrival_s", integer=False)
    prompt = _column(path, requests, "prompt_tokens", integer=True)
    output = _column(path, requests, "output_tokens", integer=True)
    raw_name = doc.get("name")
    name = raw_name if isinstance(raw_name, str) else path.stem
    try:
        return Workload(arrival_s=arrival, prompt_tokens=prompt, output_tokens=output, name=name)
    except ServingError as exc:
        raise ServingError(f"{path}: {exc}") from None


def save_trace(
    workload: Workload,
    path: str | Path,
    *,
    description: str = "",
    provenance: dict[str, object] | None = None,
) -> Path:
    """Write a workload as a trace file, atomically (arrival times rounded to 1 us).

    Args:
        workload: The requests.
        path: Destination file.
        description: One paragraph on what the trace models.
        provenance: How it was made: generator, seed, sources, assumptions (plain JSON data).

    Returns:
        The path written.
    """
    path = Path(path)
    doc = {
        "schema_version": TRACE_SCHEMA_VERSION,
        "kind": TRACE_KIND,
        "name": workload.name,
        "description": description,
        "provenance": provenance or {},
        "requests": {
            "arrival_s": [round(float(x), 6) for x in workload.arrival_s],
            "prompt_tokens": workload.prompt_tokens.tolist(),
            "output_tokens": workload.output_tokens.tolist(),
        },
    }
    write_text_safely(path, json.dumps(doc, separators=(",", ":")) + "\n", what="trace")
    return path


def _builtin_dir() -> Path:
    return Path(str(resources.files("workbench.serving").joinpath("traces")))


def list_traces() -> tuple[str, ...]:
    """Names of the traces shipped with the workbench (sorted).

    Example:
        >>> "synthetic-fixed" in list_traces()
        True
    """
    return tuple(sorted(p.stem for p in _builtin_dir().glob("*.json")))


def load_builtin_trace(name: str) -> Workload:
    """Load a shipped trace by name (see :func:`list_traces`).

    Example:
        >>> w = load_builtin_trace("synthetic-fixed")
        >>> int(w.prompt_tokens[0]), int(w.output_tokens[0])
        (512, 128)
    """
    if name not in list_traces():
        raise ServingError(f"unknown trace {name!r}; shipped traces: {', '.join(list_traces())}")
    return load_trace(_builtin_dir() / f"{name}.json")
