"""Strict loading of hardware profiles (``hardware/*.yaml``) into :class:`Hardware`.

Loading is strict: the YAML is read by :func:`workbench.hw._yaml.load_strict` (a duplicate key,
an alias or a base-60 number is an error; a lax loader silently keeps the last of two keys),
an unknown field is an error (``extra="forbid"``), and every failure is one
:class:`~workbench.errors.HardwareError` line naming the file and the field path, e.g.
``hardware/h100-sxm.yaml: memory[2].bandwidth_bytes_per_s: must be > 0``.

Profiles are found by name in, in order: the folders of ``WORKBENCH_HARDWARE_PATH``
(``os.pathsep``-separated), the caller's ``search_path``, then the built-in folder (``hardware/``
in a source checkout, ``workbench/_hardware`` in an installed wheel).

Regenerate the committed JSON Schema with ``python -m workbench.hw --write-schema`` (check it
with ``--check-schema``).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench._files import read_text_bounded, write_text_safely
from workbench.errors import HardwareError, WorkbenchError
from workbench.hw._yaml import StrictYamlError, load_strict
from workbench.hw.schema import SCHEMA_VERSION, Hardware

__all__ = [
    "ENV_VAR",
    "builtin_dir",
    "hardware_dirs",
    "hardware_hash",
    "json_schema",
    "list_hardware",
    "load_hardware",
    "load_hardware_file",
]

#: Environment variable with extra profile folders, separated by ``os.pathsep``.
ENV_VAR = "WORKBENCH_HARDWARE_PATH"
_SUFFIXES = (".yaml", ".yml")
#: Largest profile read, bytes (the built-in ones are ~5-10 KiB).
MAX_PROFILE_BYTES = 1 << 20


def _parse_yaml(text: str, where: str) -> dict[str, Any]:
    """``text`` read by the one strict loader (:mod:`workbench.hw._yaml`), a mapping at the top.

    Raises:
        HardwareError: One line naming ``where`` (and the line, for a YAML problem).
    """
    try:
        data = load_strict(text)
    except StrictYamlError as exc:
        raise HardwareError(f"{where}: {exc}") from None
    if data is None:
        raise HardwareError(f"{where}: empty file (expected a mapping of hardware fields)")
    if not isinstance(data, dict):
        raise HardwareError(
            f"{where}: top level must be a mapping of hardware fields, got {type(data).__name__}"
        )
    return data


# --- validation errors -> one line ----------------------------------------------------------
def _loc_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_SHORT = {
    "missing": "required field missing",
    "extra_forbidden": "unknown field",
    "int_parsing": "must be an integer",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "finite_number": "must be a finite number (not NaN or infinity)",
    "string_type": "must be a string",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
}


def _short_message(err: Any) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in _SHORT:
        return _SHORT[kind]
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}.get(kind, "<=")
        bound = next(iter(ctx.values()), "?")
        shown = f"{bound:g}" if isinstance(bound, int | float) else bound
        return f"must be {op} {shown}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length', '?')} item(s)"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])


def _format_validation(exc: ValidationError, where: str) -> str:
    errors = exc.errors()
    first = errors[0]
    path = _loc_path(first["loc"])
    message = _short_message(first)
    if not path and ": " in message and message.split(": ", 1)[0].isidentifier():
        path, message = message.split(": ", 1)
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    field = f"{path}: " if path else ""
    return f"{where}: {field}{message}{more}"


# --- finding and loading files --------------------------------------------------------------
def builtin_dir() -> Path:
    """The folder of profiles that ship with the package.

    Returns:
        ``workbench/_hardware`` in an installed wheel, ``<repo>/hardware`` in a source checkout.
    """
    package = Path(__file__).resolve().parent.parent
    installed = package / "_hardware"
    return installed if installed.is_dir() else package.parent / "hardware"


def hardware_dirs(search_path: Sequence[Path | str] | None = None) -> list[Path]:
    """Folders searched for profiles by name, highest priority first.

    Args:
        search_path: Extra folders (e.g. from ``--hardware-path``), searched after those of
            ``WORKBENCH_HARDWARE_PATH``.

    Returns:
        Existing or not, in order: env-var folders, ``search_path``, the built-in folder.
    """
    env = [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    extra = [Path(p) for p in (search_path or ())]
    out: list[Path] = []
    for d in (*env, *extra, builtin_dir()):
        if d not in out:
            out.append(d)
    return out


def _profiles(search_path: Sequence[Path | str] | None) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in hardware_dirs(search_path):
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.suffix in _SUFFIXES and f.is_file():
                found.setdefault(f.stem, f)
    return found


def list_hardware(search_path: Sequence[Path | str] | None = None) -> list[str]:
    """Names of every profile found (see :func:`hardware_dirs`), sorted.

    >>> "h100-sxm" in list_hardware()
    True
    """
    return sorted(_profiles(search_path))


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@functools.lru_cache(maxsize=128)
def _load_cached(resolved: str, mtime_ns: int, size: int) -> Hardware:
    path = Path(resolved)
    where = _display(path)
    try:
        text = read_text_bounded(path, MAX_PROFILE_BYTES, "hardware file")
    except WorkbenchError as exc:
        raise HardwareError(str(exc)) from None
    data = _parse_yaml(text, where)
    version = data.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise HardwareError(
            f"{where}: schema_version: this workbench reads {SCHEMA_VERSION}, file has {version!r}"
        )
    try:
        return Hardware.model_validate(data)
    except ValidationError as exc:
        raise HardwareError(_format_validation(exc, where)) from None


def load_hardware_file(path: Path | str) -> Hardware:
    """Load and validate one profile file (cached on path, modification time and size).

    Args:
        path: A ``.yaml`` file.

    Returns:
        The validated, frozen :class:`Hardware`.

    Raises:
        HardwareError: One line naming the file and what is wrong.
    """
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise HardwareError(f"{p}: no such hardware file") from None
    if not stat.S_ISREG(st.st_mode):
        try:
            read_text_bounded(p, MAX_PROFILE_BYTES, "hardware file")  # raises the reason
        except WorkbenchError as exc:
            raise HardwareError(str(exc)) from None
    return _load_cached(str(p.resolve()), st.st_mtime_ns, st.st_size)


def _looks_like_path(value: str | Path) -> bool:
    s = str(value)
    return isinstance(value, Path) or s.endswith(_SUFFIXES) or "/" in s or os.sep in s


def load_hardware(
    name_or_path: str | Path, search_path: Sequence[Path | str] | None = None
) -> Hardware:
    """Load a profile by name (``"h100-sxm"``) or by path (``"my/chip.yaml"``).

    Args:
        name_or_path: A profile name, looked up in :func:`hardware_dirs`, or a path to a file.
        search_path: Extra folders to search, after ``WORKBENCH_HARDWARE_PATH``.

    Returns:
        The validated, frozen :class:`Hardware`.

    Raises:
        HardwareError: Unknown name (the message lists the known ones) or a malformed file.

    >>> load_hardware("h100-sxm").peak_flops("bf16")
    989400000000000.0
    """
    if _looks_like_path(name_or_path):
        return load_hardware_file(name_or_path)
    profiles = _profiles(search_path)
    path = profiles.get(str(name_or_path))
    if path is None:
        known = ", ".join(sorted(profiles)) or "none"
        raise HardwareError(f"unknown hardware {str(name_or_path)!r} (known: {known})")
    return load_hardware_file(path)


def hardware_hash(hw: Hardware) -> str:
    """SHA-256 of the profile's canonical JSON (sorted keys), for run records and plan caches.

    ``scheduling`` counts only where it differs from what a file that leaves it out gets
    (:func:`~workbench.hw.schema.default_scheduling`; the dump leaves it out then): stating the
    default changes nothing the profile means, so it keeps the hash that profiles had before
    the field existed, and run records locked to them still match.

    Returns:
        64 hex digits; equal profiles give equal hashes whatever file they came from.
    """
    blob = json.dumps(hw.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


# --- JSON Schema ----------------------------------------------------------------------------
def json_schema() -> dict[str, Any]:
    """The JSON Schema of a hardware file, generated from :class:`Hardware`."""
    schema = Hardware.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"workbench/hardware/schema-v{SCHEMA_VERSION}.json"
    return schema


def schema_text() -> str:
    """The JSON Schema as the text committed in ``hardware/schema.json``."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print, write (``--write-schema``) or check (``--check-schema``) the JSON Schema file."""
    parser = argparse.ArgumentParser(prog="python -m workbench.hw")
    parser.add_argument("--write-schema", action="store_true", help="rewrite the schema file")
    parser.add_argument("--check-schema", action="store_true", help="exit 1 if it has drifted")
    parser.add_argument("--schema-file", type=Path, default=builtin_dir() / "schema.json")
    args = parser.parse_args(argv)
    if args.write_schema:
        write_text_safely(args.schema_file, schema_text(), what="--schema-file")
        print(f"wrote {args.schema_file}")
        return 0
    if args.check_schema:
        ok = args.schema_file.is_file() and args.schema_file.read_text() == schema_text()
        print(f"{args.schema_file}: {'up to date' if ok else 'out of date'}")
        return 0 if ok else 1
    sys.stdout.write(schema_text())
    return 0
