"""The mechanism table: every execution mechanism triage can name, one record each.

A record holds everything the review reads about a mechanism: its name (the JSON key), its label,
the role that owns it by default, whether it is only a consequence of a cause above it, the
declared changes (options, tag groups, profile figures) that work through it, and its detector.
The table's order is the priority: groups are checked from the top, and the consequences
(``consequence=True``) only when no cause above applies to the group. Run-level mechanisms
(``detector=None``) are named when no kernel group carries a material class.

The records are data, in ``mechanisms.yaml`` beside this module. Adding a mechanism: one
record there (with a detector in
:mod:`workbench.review.diagnosis.detectors`), its role in ``decision/data/roles.yaml`` if new,
and one golden case in ``tests/golden/triage_cases.yaml`` (see ``.github/CONTRIBUTING.md``).

Example:
    >>> [m.name for m in TABLE][:3]
    ['fusion_broken', 'layout_transform_inserted', 'precision_fallback']
    >>> by_name("launch_sync_overhead").owner
    'runtime systems engineer'
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from workbench.errors import HardwareError, WorkbenchError, first_invalid
from workbench.hw._yaml import load_strict
from workbench.review.diagnosis import detectors as d
from workbench.review.diagnosis.detectors import Detected, GroupView
from workbench.review.records.store import KernelResult

__all__ = [
    "MECHANISMS",
    "PRIORITY",
    "TABLE",
    "Mechanism",
    "by_name",
    "classify_all",
    "load_table",
    "mechanism_of_change",
    "mechanism_of_group",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Mechanism:
    """One execution mechanism of triage.

    Attributes:
        name: The mechanism class, as the JSON output and the ownership table spell it.
        label: One line a reader understands.
        owner: The role that owns it in the built-in ownership table.
        consequence: Only a consequence of a cause above it: checked on a group only when no
            cause above applies.
        causes: Declared changes that work through it, as ``fnmatch`` patterns over the change's
            name (``fusion rule off:*``) or ``group:<tag group>``; a leading ``?`` means "only
            when the group shows this mechanism".
        detector: ``GroupView -> (level, evidence) | None``; None for a run-level mechanism.
        anchor: Where a run-level mechanism shows when its cost is no kernel's (``per-step
            overhead``); ``""`` for mechanisms anchored on a kernel family.
    """

    name: str
    label: str
    owner: str
    consequence: bool = False
    causes: tuple[str, ...] = ()
    detector: Callable[[GroupView], Detected | None] | None = None
    anchor: str = ""


#: The table's file, beside this module (data: a record per mechanism, in priority order).
TABLE_FILE = Path(__file__).resolve().parent / "mechanisms.yaml"


class _Record(BaseModel):
    """One record of ``mechanisms.yaml`` (see its header for the fields)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: StrictStr = Field(pattern=r"^[a-z][a-z_]*$", description="Mechanism class (JSON key).")
    label: StrictStr = Field(min_length=1, description="One line a reader understands.")
    owner: StrictStr = Field(min_length=1, description="Owning role (decision/data/roles.yaml).")
    consequence: StrictBool = Field(False, description="Only a consequence of a cause above it.")
    causes: tuple[StrictStr, ...] = Field((), description="Declared changes working through it.")
    detector: StrictStr | None = Field(None, description="Function of diagnosis/detectors.py.")
    anchor: StrictStr = Field("", description="Where a run-level mechanism shows (no kernel).")


class _TableFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = Field(description="File format version (1).")
    mechanisms: tuple[_Record, ...] = Field(min_length=1, description="In priority order.")


def load_table(path: Path = TABLE_FILE) -> tuple[Mechanism, ...]:
    """The mechanism table in ``path``, validated, each detector bound to its function.

    Raises:
        WorkbenchError: One line naming the file and what is wrong (a field, an unknown
            detector, a name used twice).
    """
    try:
        data = _TableFile.model_validate(load_strict(path.read_text(encoding="utf-8")))
    except ValidationError as exc:
        raise WorkbenchError(f"{path}: {first_invalid(exc)}") from None
    except (OSError, HardwareError) as exc:
        raise WorkbenchError(f"{path}: {exc}") from None
    out: list[Mechanism] = []
    for r in data.mechanisms:
        fn = getattr(d, r.detector, None) if r.detector else None
        if r.detector and (fn is None or r.detector.startswith("_") or not callable(fn)):
            raise WorkbenchError(f"{path}: {r.name}: no detector {r.detector!r} in detectors.py")
        if any(m.name == r.name for m in out):
            raise WorkbenchError(f"{path}: {r.name}: named twice")
        out.append(Mechanism(**(r.model_dump() | {"detector": fn, "causes": tuple(r.causes)})))
    return tuple(out)


TABLE: tuple[Mechanism, ...] = load_table()

#: Mechanism names in priority order (the order groups are checked in).
PRIORITY: tuple[str, ...] = tuple(m.name for m in TABLE)
#: Mechanism classes and what each means (the keys appear in the JSON contract).
MECHANISMS: dict[str, str] = {m.name: m.label for m in TABLE}
_BY_NAME = {m.name: m for m in TABLE}


def by_name(name: str) -> Mechanism:
    """The table's record of mechanism ``name``.

    Raises:
        KeyError: No such mechanism.
    """
    return _BY_NAME[name]


def classify_all(
    b: tuple[KernelResult, ...],
    c: tuple[KernelResult, ...],
    *,
    hardware_changed: bool = False,
    field: str = "predicted_s",
    parts: tuple[str, ...] = (),
) -> list[tuple[str, str | None, str]]:
    """Every mechanism that applies to one group's change, as (mechanism, level, evidence).

    A group can carry several causes (fusion lost and a wider format on the same kernels): the
    causes are each checked, in the table's order; the consequences only when no cause
    applies, since they follow from it. Empty when the group did not change.
    """
    found: list[tuple[str, str | None, str]] = []
    for m in TABLE:
        if m.detector is None or (m.consequence and found):
            continue
        view = GroupView(
            b=b,
            c=c,
            field=field,
            hardware_changed=hardware_changed,
            parts=parts,
            found=tuple(f[0] for f in found),
        )
        hit = m.detector(view)
        if hit is not None:
            found.append((m.name, hit[0], hit[1]))
    return found


def _matches(pattern: str, name: str, group: str) -> bool:
    pattern = pattern.removeprefix("?")
    if pattern.startswith("group:"):
        return group == pattern.removeprefix("group:")
    return fnmatch.fnmatchcase(name, pattern)


def mechanism_of_change(
    name: str, shown: Iterable[str] = (), *, group: str = "", fallback: str | None = None
) -> str | None:
    """The mechanism a declared change works through, read from the table's ``causes``.

    Of the mechanisms whose causes match the change, the first (in priority order) that the
    touched kernel group shows; else the first whose cause is unconditional; else
    ``fallback`` (the group's own mechanism).

    Args:
        name: The change's name (``fusion rule off: gemm_epilogue``, ``launch``).
        shown: Mechanisms the touched group shows.
        group: The change's tag group (``compiler``, ``runtime``, ``hardware``).
        fallback: What to return when no record names the change.

    Example:
        >>> mechanism_of_change("format override *.attn.sdpa=fp32", ["off_matrix_engine"])
        'off_matrix_engine'
        >>> mechanism_of_change("tile *.attn.sdpa=64x64x64")
        'tile_wave_quantization'
    """
    shown = set(shown)
    candidates = [
        (m, p)
        for m in TABLE
        for p in m.causes
        if _matches(p, name, group) and not p.startswith("group:")
    ]
    for m, _ in candidates:
        if m.name in shown:
            return m.name
    return next((m.name for m, p in candidates if not p.startswith("?")), fallback)


def mechanism_of_group(group: str) -> str | None:
    """The mechanism a change of a whole tag group works through (``runtime``), else None."""
    return next((m.name for m in TABLE if f"group:{group}" in m.causes), None)
