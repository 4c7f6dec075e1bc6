"""Plan cache: the autotuned tiling of a kernel, on disk as JSON, read defensively.

Key = sha256 of (kernel signature as sorted JSON, hardware profile hash, backend name and its
library versions, workbench version). A file that is corrupt, truncated, foreign (another
``kind``), or written by a newer schema is ignored with one warning line, never trusted; so is
an entry whose fields are not plain positive integers and names. :meth:`PlanCache.lookup`
also checks the entry against the kernel's mapspace (:mod:`workbench.tuning._plan_check`): a
tiling the search could not have chosen (``split_k: 10**6``, a tile that does not fit) is
ignored with one warning line and the kernel is tuned again.

Writes never lose another process's entries: :meth:`PlanCache.put` takes an exclusive
``fcntl.flock`` on a sidecar lock file (``.<name>.lock`` next to the cache), re-reads the file,
merges its own new entries into what is there, and writes a temp file in the same folder that
``os.replace`` renames over the cache (atomic). Where ``fcntl`` does not exist (Windows) the
write is still atomic but not merged under a lock.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench._files import write_text_safely
from workbench._warn import warn
from workbench.execution.backend import Backend
from workbench.hw import hardware_hash
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling
from workbench.tuning._plan_check import mapspace_problem

__all__ = ["CACHE_KIND", "CACHE_SCHEMA_VERSION", "PlanCache", "plan_key"]

CACHE_SCHEMA_VERSION = 1
CACHE_KIND = "workbench-plan-cache"
_TILING_FIELDS = ("tile_m", "tile_n", "tile_k", "stages", "split_k", "raster", "dataflow")


def plan_key(kernel: Kernel, hw: Hardware, backend: Backend) -> str:
    """Stable hex key of a kernel's plan on ``hw`` with ``backend`` (see module docstring)."""
    sig = json.dumps(dataclasses.asdict(kernel.signature()), sort_keys=True, default=str)
    parts = {
        "kernel": sig,
        "hardware": hardware_hash(hw),
        "backend": backend.name,
        "versions": [list(v) for v in backend.versions],
        "workbench": __version__,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _warn(path: Path, why: str) -> None:
    warn(f"plan cache {path}: {why}; ignoring it", stacklevel=3)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``'s sidecar lock file (module docstring)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: atomic rename only
        yield
        return
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # NOTE: closing the descriptor releases the lock


class PlanCache:
    """Tuned tilings by :func:`plan_key`, persisted as one JSON file.

    Attributes:
        path: The JSON file.
    """

    def __init__(self, path: Path | str) -> None:
        """Open (or start) the cache at ``path``; a bad file is ignored with a warning."""
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = self._load()
        self._mine: dict[str, dict[str, Any]] = {}  # entries put by this object, not yet merged

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        if not self.path.is_file():
            _warn(self.path, "not a regular file")
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            _warn(self.path, f"unreadable or corrupt ({type(exc).__name__})")
            return {}
        if not isinstance(data, dict) or data.get("kind") != CACHE_KIND:
            _warn(self.path, "not a workbench plan cache")
            return {}
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            _warn(self.path, f"schema_version {version!r} is not an integer")
            return {}
        if version > CACHE_SCHEMA_VERSION:
            _warn(self.path, f"schema_version {version!r} is newer than {CACHE_SCHEMA_VERSION}")
            return {}
        entries = data.get("entries")
        if not isinstance(entries, dict):
            _warn(self.path, "no entries object")
            return {}
        good = {k: v for k, v in entries.items() if isinstance(k, str) and _valid_entry(v)}
        if len(good) < len(entries):
            bad = len(entries) - len(good)
            warn(f"plan cache {self.path}: {bad} malformed entries ignored", stacklevel=3)
        return good

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> tuple[Tiling, float] | None:
        """The cached tiling and its measured median seconds, or None (not checked: see lookup)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        fields = {f: entry["tiling"][f] for f in _TILING_FIELDS}
        return Tiling(**fields, source="override"), float(entry["measured_s"])

    def lookup(self, key: str, kernel: Kernel, hw: Hardware) -> tuple[Tiling, float] | None:
        """The cached entry when it is a fitting point of ``kernel``'s mapspace on ``hw``.

        An entry that is not (module docstring) is ignored with one warning line and None is
        returned, so the caller tunes the kernel again (and :meth:`put` replaces the entry).
        """
        hit = self.get(key)
        if hit is None:
            return None
        why = mapspace_problem(kernel, hw, hit[0])
        if why:
            _warn(self.path, f"entry for {kernel.name} on {hw.name}: {why}")
            return None
        return hit

    def put(self, key: str, tiling: Tiling, measured_s: float, *, label: str = "") -> None:
        """Record a tuned tiling and merge it into the file under the lock (module docstring)."""
        if not (math.isfinite(measured_s) and measured_s > 0):
            raise ValueError(f"plan cache: measured_s must be finite and > 0, got {measured_s}")
        entry = {
            "tiling": {f: getattr(tiling, f) for f in _TILING_FIELDS},
            "measured_s": float(measured_s),
            "label": label,
        }
        self._entries[key] = entry
        self._mine[key] = entry
        self.save()

    def save(self) -> None:
        """Merge this object's new entries into the file on disk and write it atomically.

        Under the sidecar lock: read the file as it is now (another process may have added
        entries since this one was opened), add this object's entries (they win for their own
        keys), write a temp file in the same folder and ``os.replace`` it over the cache.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path):
            merged = self._load()
            merged.update(self._mine)
            body = json.dumps(
                {"kind": CACHE_KIND, "schema_version": CACHE_SCHEMA_VERSION, "entries": merged},
                indent=1,
                sort_keys=True,
            )
            write_text_safely(self.path, body, what="plan cache")
        self._entries = merged
        self._mine = {}


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _valid_entry(entry: object) -> bool:
    """Plain-data check of one entry (types and signs); the mapspace check is in lookup."""
    if not isinstance(entry, dict) or not isinstance(entry.get("tiling"), dict):
        return False
    t = entry["tiling"]
    ints = all(_positive_int(t.get(f)) for f in _TILING_FIELDS[:5])
    strs = isinstance(t.get("raster"), str) and isinstance(t.get("dataflow"), str)
    seconds = entry.get("measured_s")
    finite = (
        isinstance(seconds, (int, float))
        and not isinstance(seconds, bool)
        and 0 < seconds < 1e9  # NOTE: NaN, inf and a 10**400 integer all fail this
    )
    return ints and strs and finite
