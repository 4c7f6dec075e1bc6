"""Accelergy's energy and area tables (``ERT.yaml``, ``ART.yaml``) by component name.

An ERT lists, per component (``system_top_level.NAME[1..N]``), the energy of each action in pJ
(``read``, ``write``, ``update``, ``leak`` per cycle, ``compute``); an ART the area of one
instance in um^2. Component names are matched without the path prefix and the instance range.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from workbench.scheduling.timeloop._fields import as_list, as_map, as_number, fail
from workbench.scheduling.timeloop._yaml import TimeloopSpecError, load_file

__all__ = ["component_name", "read_art", "read_ert"]


def component_name(full: Any, where: str) -> str:
    """``system_top_level.DRAM[1..1]`` -> ``DRAM``."""
    if not isinstance(full, str):
        raise fail(where, f"expected a component name, got {full!r}")
    m = re.fullmatch(r"(?:.*\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\[\d+\.\.\d+\])?", full)
    if m is None:
        raise fail(where, f"cannot read component name {full!r}")
    return m.group(1)


def _load_either(path: str | Path, tops: tuple[str, ...]) -> tuple[str, Any]:
    for top in tops:
        try:
            return top, load_file(path, top)
        except TimeloopSpecError as exc:
            if "expected a top-level" not in str(exc) or top == tops[-1]:
                raise
    raise AssertionError("unreachable")


def read_ert(path: str | Path) -> dict[str, dict[str, float]]:
    """Read an ERT (or ERT_summary): ``{component: {action: pJ}}``.

    Raises:
        TimeloopSpecError: A malformed file (one line naming the file and the field).
    """
    p = str(path)
    top, body = _load_either(path, ("ERT", "ERT_summary"))
    body = as_map(body, f"{p}: {top}")
    key = "tables" if top == "ERT" else "table_summary"
    out: dict[str, dict[str, float]] = {}
    for i, t in enumerate(as_list(body.get(key), f"{p}: {top}.{key}")):
        at = f"{p}: {top}.{key}[{i}]"
        t = as_map(t, at)
        name = component_name(t.get("name"), f"{at}.name")
        actions: dict[str, float] = {}
        for j, a in enumerate(as_list(t.get("actions"), f"{at}.actions")):
            a = as_map(a, f"{at}.actions[{j}]")
            act = a.get("name")
            if not isinstance(act, str):
                raise fail(f"{at}.actions[{j}].name", f"expected an action name, got {act!r}")
            actions[act] = as_number(a.get("energy"), f"{at}.actions[{j}].energy")
        out[name] = actions
    if not out:
        raise fail(p, "the ERT lists no component")
    return out


def read_art(path: str | Path) -> dict[str, float]:
    """Read an ART (or ART_summary): ``{component: um^2 per instance}``.

    Raises:
        TimeloopSpecError: A malformed file (one line naming the file and the field).
    """
    p = str(path)
    top, body = _load_either(path, ("ART", "ART_summary"))
    body = as_map(body, f"{p}: {top}")
    key = "tables" if top == "ART" else "table_summary"
    out: dict[str, float] = {}
    for i, t in enumerate(as_list(body.get(key), f"{p}: {top}.{key}")):
        at = f"{p}: {top}.{key}[{i}]"
        t = as_map(t, at)
        out[component_name(t.get("name"), f"{at}.name")] = as_number(t.get("area"), f"{at}.area")
    return out
