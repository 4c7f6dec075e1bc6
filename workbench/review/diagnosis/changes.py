"""The declared change between two runs, option by option and profile figure by figure.

Full values, never truncated hashes: a fusion rule switched off, a format override added, a tile
forced, a launch mode, and for the hardware every profile figure that differs (from the records'
embedded profiles), by dotted path such as ``memory[hbm].bandwidth_bytes_per_s``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from workbench._format import fmt_time
from workbench.hw.schema import Hardware
from workbench.review.records.reproduce import hardware_for
from workbench.review.records.store import RunRecord, embedded_hardware
from workbench.review.records.tags import TAG_GROUPS, normalised_group

__all__ = [
    "SET_LABELS",
    "Change",
    "change_label",
    "changed_hardware_parts",
    "declared_changes",
    "profile_diff",
]

#: How a set-valued option's items are named in a change line.
SET_LABELS = {
    "disabled_fusion": "fusion rule off:",
    "dtype_overrides": "format override",
    "tiles": "tile",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One declared change, reversible on the candidate's mapping inputs.

    Attributes:
        group: Tag group (compiler, runtime, hardware, workload).
        name: What changed, e.g. ``fusion rule gemm_epilogue`` or ``hbm bandwidth``.
        before: The baseline's value, in full.
        after: The candidate's value, in full.
    """

    group: str
    name: str
    before: str
    after: str

    def line(self) -> str:
        """``group: name: before -> after``."""
        return f"{self.group}: {self.name}: {self.before} -> {self.after}"

    @property
    def fusion_rule(self) -> str | None:
        """The rule a ``fusion rule off: <rule>`` change names, else None.

        >>> Change(group="compiler", name="fusion rule off: gemm_epilogue", before="",
        ...        after="present").fusion_rule
        'gemm_epilogue'
        """
        if self.name.startswith("fusion rule off:"):
            return self.name.split(":", 1)[1].strip()
        return None

    @property
    def kernel_glob(self) -> str | None:
        """The kernels a ``format override <glob>=<format>`` or ``tile <glob>=<tile>`` names.

        >>> Change(group="compiler", name="tile *up_proj=128x128x32", before="",
        ...        after="present").kernel_glob
        '*up_proj'
        """
        if self.name.startswith(("format override", "tile ")):
            return self.name.split(" ", 2)[-1].rsplit("=", 1)[0]
        return None


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to leaves; lists of named objects are keyed by name."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(data, list) and data and all(isinstance(v, dict) and "name" in v for v in data):
        out = {}
        for v in data:
            out.update(_flatten(v, f"{prefix}[{v['name']}]"))
        return out
    return {prefix: data}


def profile_diff(base: Hardware | None, cand: Hardware | None) -> tuple[Change, ...]:
    """Every hardware-profile figure that differs, by dotted path (full values)."""
    if base is None or cand is None:
        return ()
    a = _flatten(base.model_dump(mode="json"))
    b = _flatten(cand.model_dump(mode="json"))
    missing = "(absent)"
    return tuple(
        Change(
            group="hardware", name=p, before=str(a.get(p, missing)), after=str(b.get(p, missing))
        )
        for p in sorted(set(a) | set(b))
        if a.get(p, missing) != b.get(p, missing)
    )


def _as_set_changes(group: str, label: str, a: tuple, b: tuple) -> list[Change]:
    out = []
    for item in sorted(set(a) ^ set(b), key=str):
        on = item in b
        text = item if isinstance(item, str) else "=".join(str(x) for x in item)
        out.append(
            Change(
                group=group,
                name=f"{label} {text}",
                before="present" if not on else "absent",
                after="present" if on else "absent",
            )
        )
    return out


def declared_changes(
    base: RunRecord, cand: RunRecord, groups: tuple[str, ...] = TAG_GROUPS
) -> tuple[Change, ...]:
    """The changes between the runs in ``groups``, option by option, figure by figure.

    Fusion rules, format overrides and forced tiles are one change each; the hardware profile is
    diffed figure by figure (from the embedded profiles) after its name. Host facts and tool
    versions are left out (they are not changes a release declares).
    """
    out: list[Change] = []
    skip = {"backend_versions", "host", "workbench_version", "git_commit", "fusion_enabled"}
    sets = {
        "fusion_disabled": SET_LABELS["disabled_fusion"],
        "dtype_overrides": SET_LABELS["dtype_overrides"],
        "tiles": SET_LABELS["tiles"],
    }
    for group in groups:
        a, b = normalised_group(base.tags, group), normalised_group(cand.tags, group)
        for f in dataclasses.fields(a):
            va, vb = getattr(a, f.name), getattr(b, f.name)
            if va == vb or f.name in skip:
                continue
            if f.name in sets:
                out += _as_set_changes(group, sets[f.name], va, vb)
            elif f.name == "launch_host_s":
                out += _host_launch_change(a, b)
            elif f.name == "hardware_hash":
                out += profile_diff(hardware_for(base), hardware_for(cand))
            else:
                out.append(Change(group=group, name=f.name, before=str(va), after=str(vb)))
    return tuple(out)


def _host_launch_change(a: Any, b: Any) -> list[Change]:
    """The host time per eager launch, when it changed on its own (it rides with the launch mode).

    A graph run records none (graph replay never pays it), so a launch-mode change carries it.
    """
    if a.launch != b.launch:
        return []

    def shown(v: float | None) -> str:
        return "the profile's kernel launch" if v is None else fmt_time(v)

    name = "host time per eager launch"
    return [
        Change(
            group="runtime", name=name, before=shown(a.launch_host_s), after=shown(b.launch_host_s)
        )
    ]


def changed_hardware_parts(base: RunRecord, cand: RunRecord) -> tuple[str, ...]:
    """Parts of the hardware profile that differ: memory level names, ``compute``, ``other``.

    Read from the records' embedded profiles (empty when either record has none).
    """
    hb, hc = embedded_hardware(base), embedded_hardware(cand)
    if hb is None or hc is None:
        return ()
    out = []
    mb = {m.name: m for m in hb.memory}
    for m in hc.memory:
        if mb.get(m.name) != m:
            out.append(m.name)
    if (hb.matrix_engine, hb.vector_unit) != (hc.matrix_engine, hc.vector_unit):
        out.append("compute")
    rest = {"memory", "matrix_engine", "vector_unit", "name", "description", "sources"}
    if hb.model_dump(exclude=rest) != hc.model_dump(exclude=rest):
        out.append("other")
    return tuple(out)


def _glob_words(glob: str) -> str:
    return glob.strip("*.").replace("*", "...") or glob


def change_label(change: Any) -> str:
    """A declared change (:class:`~workbench.review.diagnosis.changes.Change`) in a few words.

    >>> from workbench.review.diagnosis.changes import Change
    >>> change_label(Change(group="compiler", name="format override *down_proj*=fp32",
    ...                     before="absent", after="present"))
    'fp32 down_proj'
    """
    name, on = change.name, change.after == "present"
    rule = change.fusion_rule
    if rule is not None:
        return f"{rule} fusion {'off' if on else 'on'}"
    if name.startswith("format override"):
        glob, _, dt = name.split(" ", 2)[-1].rpartition("=")
        return f"{dt} {_glob_words(glob)}" if on else f"no {dt} override on {_glob_words(glob)}"
    if name.startswith("tile "):
        glob, _, tile = name.split(" ", 1)[-1].rpartition("=")
        return f"tile {tile} on {_glob_words(glob)}" if on else f"no forced tile on {glob}"
    if change.group == "hardware" and name in ("profile", "name", "hardware profile"):
        return f"{change.before} -> {change.after.split(' (')[0]}"
    return f"{name} {_none(change.before)} -> {_none(change.after)}"


def _none(text: str) -> str:
    """``-`` for an absent value; unset fields dropped from a slice (``b1 s256 cNone``)."""
    text = re.sub(r"\s*\b[bsc]None\b", "", text)
    return "-" if text in ("None", "") else text
