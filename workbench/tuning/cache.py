"""Plan cache: the autotuned tiling of a kernel, on disk as JSON, read defensively.

Key = sha256 of (kernel signature as sorted JSON, hardware profile hash, backend name and its
library versions, workbench version). A file that is corrupt, truncated, foreign (another
``kind``), or written by a newer schema is ignored with one warning line, never trusted. Writes
are atomic: a temp file in the same folder, then ``os.replace``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.execution.backend import Backend
from workbench.hw import hardware_hash
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

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
    warnings.warn(f"plan cache {path}: {why}; ignoring it", RuntimeWarning, stacklevel=3)


class PlanCache:
    """Tuned tilings by :func:`plan_key`, persisted as one JSON file.

    Attributes:
        path: The JSON file.
    """

    def __init__(self, path: Path | str) -> None:
        """Open (or start) the cache at ``path``; a bad file is ignored with a warning."""
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = self._load()

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            _warn(self.path, f"unreadable or corrupt ({type(exc).__name__})")
            return {}
        if not isinstance(data, dict) or data.get("kind") != CACHE_KIND:
            _warn(self.path, "not a workbench plan cache")
            return {}
        version = data.get("schema_version")
        if not isinstance(version, int) or version > CACHE_SCHEMA_VERSION:
            _warn(self.path, f"schema_version {version!r} is newer than {CACHE_SCHEMA_VERSION}")
            return {}
        entries = data.get("entries")
        if not isinstance(entries, dict):
            _warn(self.path, "no entries object")
            return {}
        return {k: v for k, v in entries.items() if _valid_entry(v)}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> tuple[Tiling, float] | None:
        """The cached tiling and its measured median seconds, or None."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        fields = {f: entry["tiling"][f] for f in _TILING_FIELDS}
        return Tiling(**fields, source="override"), float(entry["measured_s"])

    def put(self, key: str, tiling: Tiling, measured_s: float, *, label: str = "") -> None:
        """Record a tuned tiling and write the whole file atomically."""
        self._entries[key] = {
            "tiling": {f: getattr(tiling, f) for f in _TILING_FIELDS},
            "measured_s": float(measured_s),
            "label": label,
        }
        self.save()

    def save(self) -> None:
        """Write the cache atomically (temp file in the same folder, then ``os.replace``)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {"kind": CACHE_KIND, "schema_version": CACHE_SCHEMA_VERSION, "entries": self._entries},
            indent=1,
            sort_keys=True,
        )
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(body)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _valid_entry(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("tiling"), dict):
        return False
    t = entry["tiling"]
    ints = all(isinstance(t.get(f), int) and t[f] > 0 for f in _TILING_FIELDS[:5])
    strs = isinstance(t.get("raster"), str) and isinstance(t.get("dataflow"), str)
    return ints and strs and isinstance(entry.get("measured_s"), (int, float))
