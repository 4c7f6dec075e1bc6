"""Timeloop v0.4 architecture files (``architecture: nodes: [...]``) as storage levels and fan-outs.

A flat list of ``!Container`` and ``!Component`` nodes (``!Parallel`` groups components side by
side), outermost first. A component is storage (DRAM, SRAM, regfile, smartbuffer_*), compute
(intmac, fpmac, mac) or a network (ignored: the tutorial networks carry no energy). A container's
``spatial: {meshX, meshY}`` stamps out copies of everything below it.

Where the fan-out sits: Timeloop's v0.4 front end inserts a container's fan-out level
(``inter_NAME_spatial``) right after the first storage component that follows the previous
container (the reference ``parsed-processed-input.yaml`` of ISPASS exercise 04 lists
``MainMemory[1..1]``, ``inter_PE_spatial``, ``GlobalBuffer[1..16]`` for an arch file that names
the PE container after the GlobalBuffer; exercise 06's Eyeriss fan-outs land below its global
buffer). This reader places it the same way so that its counts are Timeloop's.

Sizes: a storage level's block is ``width / datawidth`` words (or ``block_size``), its capacity
``depth x block`` words (none for DRAM); bandwidths are words per cycle per instance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.scheduling.timeloop._fields import as_int, as_list, as_map, as_name, as_number, fail
from workbench.scheduling.timeloop._yaml import Value, load_spec
from workbench.scheduling.timeloop.constraints import Constraint, node_constraints

__all__ = ["Arch", "Fanout", "Storage", "read_arch"]

COMPUTE_CLASSES = ("intmac", "fpmac", "mac", "compute")
NETWORK_CLASSES = ("XY_NoC", "Legacy", "ReductionTree", "SimpleMulticast")
_NODE_KEYS = frozenset({"!", "name", "class", "attributes", "spatial", "constraints", "nodes"})
_NODE_KEYS |= frozenset({"subclass", "required_actions", "enabled", "networks"})
_NODE_KEYS |= frozenset({"area_scale", "energy_scale", "sparse_optimizations"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Storage:
    """One storage level (per instance).

    Attributes:
        name: The component's name.
        cls: Its class (``DRAM``, ``SRAM``, ``regfile``, ``smartbuffer_RF``, ...).
        block_words: Words per access.
        capacity_words: Words held per instance; None for DRAM (unbounded).
        read_bandwidth_words / write_bandwidth_words: Words per cycle per instance, or None.
        instances: Copies of this level.
    """

    name: str
    cls: str
    block_words: int
    capacity_words: int | None
    read_bandwidth_words: float | None
    write_bandwidth_words: float | None
    instances: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Fanout:
    """A container's spatial fan-out: ``mesh_x x mesh_y`` copies below storage level ``above``."""

    name: str
    container: str
    above: str
    mesh_x: int
    mesh_y: int

    @property
    def size(self) -> int:
        """Copies below this fan-out per copy above it."""
        return self.mesh_x * self.mesh_y


@dataclass(frozen=True, slots=True, kw_only=True)
class Arch:
    """An architecture: storage levels outermost first, fan-outs, the compute unit.

    Attributes:
        storages: Outermost (DRAM) first.
        fanouts: In order, each below the storage level it names.
        compute: The compute component's name; ``compute_instances`` its copies.
        cycle_s: ``global_cycle_seconds`` (1 ns if unset, Timeloop's default).
        constraints: Constraints written on the arch's nodes (architecture constraints).
        branch_keeps: ``(storage, tensors)`` for each storage that is a branch of a
            ``!Parallel`` node: it keeps only the tensors its ``dataspace`` constraint keeps and
            bypasses the rest (timeloopfe's ``Dataspace2BranchProcessor``, which Timeloop's
            v0.4 front end runs on every spec: each data space lives in one branch).
    """

    storages: tuple[Storage, ...]
    fanouts: tuple[Fanout, ...]
    compute: str
    compute_instances: int
    cycle_s: float
    constraints: tuple[Constraint, ...]
    branch_keeps: tuple[tuple[str, frozenset[str]], ...] = ()

    def storage(self, name: str) -> Storage:
        """The storage level called ``name``."""
        return next(s for s in self.storages if s.name == name)

    def fanout(self, target: str) -> Fanout | None:
        """The fan-out a mapping target names (container name or ``inter_NAME_spatial``)."""
        return next((f for f in self.fanouts if target in (f.name, f.container)), None)

    def fanouts_below(self, storage: str) -> tuple[Fanout, ...]:
        """Fan-outs directly below storage level ``storage``."""
        return tuple(f for f in self.fanouts if f.above == storage)


def _flatten(
    nodes: list[Any], where: str, parallel: bool = False
) -> list[tuple[dict[str, Any], str, bool]]:
    """Nodes in order, each with whether it is a branch of a ``!Parallel`` node."""
    out: list[tuple[dict[str, Any], str, bool]] = []
    for i, raw in enumerate(nodes):
        at = f"{where}[{i}]"
        node = as_map(raw, at, _NODE_KEYS)
        tag = node.get("!")
        if tag in ("Parallel", "Hierarchical", "Pipelined"):
            inner = as_list(node.get("nodes"), f"{at}.nodes")
            out += _flatten(inner, f"{at}.nodes", tag == "Parallel")
        elif tag in ("Container", "Component"):
            out.append((node, at, parallel))
        elif tag != "Nothing":
            raise fail(at, "expected a !Container, !Component or !Parallel node")
    return out


def _storage(node: dict[str, Any], at: str, instances: int) -> Storage:
    attrs = as_map(node.get("attributes") or {}, f"{at}.attributes")
    width = attrs.get("width")
    word = attrs.get("datawidth", attrs.get("word_bits"))
    if "block_size" in attrs:
        block = as_int(attrs["block_size"], f"{at}.attributes.block_size")
    elif width is None or word is None:
        block = 1
    else:
        w = as_int(width, f"{at}.attributes.width")
        d = as_int(word, f"{at}.attributes.datawidth")
        if w % d:
            raise fail(f"{at}.attributes", f"width {w} is not a multiple of datawidth {d}")
        block = w // d
    depth = attrs.get("depth")
    cls = str(node.get("class"))
    cap = (
        None if depth is None or cls == "DRAM" else as_int(depth, f"{at}.attributes.depth") * block
    )

    def bw(key: str) -> float | None:
        v = attrs.get(key, attrs.get("shared_bandwidth"))
        return None if v is None else as_number(v, f"{at}.attributes.{key}") or None

    return Storage(
        name=as_name(node.get("name"), f"{at}.name"),
        cls=cls,
        block_words=block,
        capacity_words=cap,
        read_bandwidth_words=bw("read_bandwidth"),
        write_bandwidth_words=bw("write_bandwidth"),
        instances=instances,
    )


def _spatial(node: dict[str, Any], at: str) -> tuple[int, int]:
    sp = as_map(node.get("spatial") or {}, f"{at}.spatial", frozenset({"meshX", "meshY"}))
    return (
        as_int(sp.get("meshX", 1), f"{at}.spatial.meshX"),
        as_int(sp.get("meshY", 1), f"{at}.spatial.meshY"),
    )


def read_arch(path: str | Path, values: Mapping[str, Value] | None = None) -> Arch:
    """Read a Timeloop v0.4 architecture file.

    Args:
        path: The file.
        values: Values of its ``{{ name }}`` placeholders (the newer exercises' Jinja data),
            if it has any; its ``variables`` block is read either way.

    Raises:
        TimeloopSpecError: A malformed file (one line naming the file and the field).
    """
    p = str(path)
    raw, variables = load_spec(path, "architecture", values)
    body = as_map(raw, f"{p}: architecture")
    nodes = _flatten(as_list(body.get("nodes"), f"{p}: nodes"), f"{p}: nodes")
    storages: list[Storage] = []
    fanouts: list[Fanout] = []
    constraints: list[Constraint] = []
    branch_keeps: list[tuple[str, frozenset[str]]] = []
    compute: str | None = None
    cycle_s = 1e-9
    if "global_cycle_seconds" in variables:
        cycle_s = as_number(variables["global_cycle_seconds"], f"{p}: variables") or cycle_s
    at_prev_container = 0
    for node, at, in_parallel in nodes:
        name = as_name(node.get("name"), f"{at}.name")
        own = node_constraints(node.get("constraints"), name, f"{at}.constraints")
        constraints += own
        if in_parallel and node["!"] == "Component":
            kept = (k for c in own if c.kind == "dataspace" for k in c.keep or ())
            branch_keeps.append((name, frozenset(kept)))
        if node["!"] == "Container":
            attrs = as_map(node.get("attributes") or {}, f"{at}.attributes")
            if "global_cycle_seconds" in attrs:
                cycle_s = as_number(attrs["global_cycle_seconds"], f"{at}.attributes") or cycle_s
            mx, my = _spatial(node, at)
            if mx * my > 1 or node.get("spatial"):
                if not storages:
                    raise fail(at, f"container {name!r} fans out above every storage level")
                above = storages[min(at_prev_container + 1, len(storages)) - 1].name
                fanouts.append(
                    Fanout(
                        name=f"inter_{name}_spatial",
                        container=name,
                        above=above,
                        mesh_x=mx,
                        mesh_y=my,
                    )
                )
            at_prev_container = len(storages)
            continue
        cls = node.get("class")
        if not isinstance(cls, str):
            raise fail(f"{at}.class", f"expected a component class, got {cls!r}")
        if cls in NETWORK_CLASSES:
            continue
        if any(cls == c or cls.endswith(c) for c in COMPUTE_CLASSES):
            if compute is not None:
                raise fail(at, f"a second compute component {name!r} (one is modelled)")
            compute = name
            continue
        storages.append(_storage(node, at, 1))
    if not storages or compute is None:
        raise fail(p, "an architecture needs at least one storage component and a compute one")
    names = [s.name for s in storages]
    if len(set(names)) != len(names):
        raise fail(p, "two storage components share a name")
    arch = _with_instances(storages, fanouts, compute, cycle_s, tuple(constraints))
    keeps = tuple((n, k) for n, k in branch_keeps if n in names)
    return replace(arch, branch_keeps=keeps)


def _with_instances(
    storages: list[Storage],
    fanouts: list[Fanout],
    compute: str,
    cycle_s: float,
    constraints: tuple[Constraint, ...],
) -> Arch:
    out, scale = [], 1
    for s in storages:
        out.append(Storage(**{**{f: getattr(s, f) for f in s.__slots__}, "instances": scale}))
        scale *= math.prod(f.size for f in fanouts if f.above == s.name)
    return Arch(
        storages=tuple(out),
        fanouts=tuple(fanouts),
        compute=compute,
        compute_instances=scale,
        cycle_s=cycle_s,
        constraints=constraints,
    )
