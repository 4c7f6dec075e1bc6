"""The mechanism table: every execution mechanism triage can name, one record each.

A record holds everything the review reads about a mechanism: its name (the JSON key), its label,
the role that owns it by default, whether it is only a consequence of a cause above it, the
declared changes (options, tag groups, profile figures) that work through it, and its detector.
The table's order is the priority: groups are checked from the top, and the consequences
(``consequence=True``) only when no cause above applies to the group. Run-level mechanisms
(``detector=None``) are named when no kernel group carries a material class.

Adding a mechanism: one :class:`Mechanism` record here (with a detector in
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
    "mechanism_of_change",
    "mechanism_of_group",
]

_COMPILER = "ML compiler engineer"
_RUNTIME = "runtime systems engineer"


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


TABLE: tuple[Mechanism, ...] = (
    Mechanism(
        name="fusion_broken",
        label="fusion broken: a fused pattern now runs as separate kernels",
        owner=_COMPILER,
        causes=("fusion rule off:*",),
        detector=d.fusion_broken,
    ),
    Mechanism(
        name="layout_transform_inserted",
        label="layout transform inserted before a kernel",
        owner=_COMPILER,
        causes=("layout", "layout_propagation"),
        detector=d.layout_transform_inserted,
    ),
    Mechanism(
        name="precision_fallback",
        label="precision fallback to a wider format",
        owner=_COMPILER,
        causes=("format override*", "dtype", "weight_dtype"),
        detector=d.precision_fallback,
    ),
    Mechanism(
        name="off_matrix_engine",
        label="kernel moved off the matrix engine",
        owner=_COMPILER,
        causes=("?format override*", "?dtype", "?weight_dtype"),
        detector=d.off_matrix_engine,
    ),
    Mechanism(
        name="tile_spills_sram",
        label="tile spills SRAM (capacity-bound)",
        owner=_COMPILER,
        causes=("?tile *", "?search"),
        detector=d.tile_spills_sram,
    ),
    Mechanism(
        name="hardware_rate",
        label="hardware rate changed: the platform's bandwidth or compute rate is slower",
        owner="platform owner",
        consequence=True,
        causes=("hardware profile", "group:hardware"),
        detector=d.hardware_rate,
    ),
    Mechanism(
        name="launch_sync_overhead",
        label="launch or sync overhead",
        owner=_RUNTIME,
        consequence=True,
        causes=("launch", "barrier_per_layer", "group:runtime"),
        detector=d.launch_sync_overhead,
    ),
    Mechanism(
        name="bandwidth_saturation",
        label="bandwidth saturation at a memory level",
        owner=_COMPILER,
        consequence=True,
        detector=d.bandwidth_saturation,
    ),
    Mechanism(
        name="tile_wave_quantization",
        label="tile or wave quantization: padded tiles or a partial last wave",
        owner=_COMPILER,
        consequence=True,
        causes=("tile *", "search"),
        detector=d.tile_wave_quantization,
    ),
    Mechanism(
        name="graph_changed",
        label="kernels added or removed by the graph (op coverage, model variant)",
        owner="framework integration lead",
        consequence=True,
        detector=d.graph_changed,
    ),
    Mechanism(
        name="stack_overhead",
        label=(
            "the software stack's host time per serving step outside its kernels grew "
            "(scheduling, sampling, KV-block bookkeeping)"
        ),
        owner=_RUNTIME,
        causes=("step_overhead_s", "stack"),
        anchor="per-step overhead",
    ),
    Mechanism(
        name="measured_slowdown",
        label=(
            "measured kernels slowed while their mapping stayed the same: the cause is outside "
            "the mapping sheet (runtime: barriers, launch gaps, clocks, contention)"
        ),
        owner=_RUNTIME,
    ),
    Mechanism(
        name="prediction_gap",
        label="no mechanism changed: the time moved (prediction vs measurement)",
        owner="performance modeling owner",
    ),
    Mechanism(
        name="unmapped_measurement",
        label="measured time moved on kernels no mapping sheet describes",
        owner=_RUNTIME,
    ),
)

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
