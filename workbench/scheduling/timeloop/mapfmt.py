"""A :class:`Mapping` written as Timeloop writes it: the loop nest (``map.txt``) and the YAML.

:func:`map_text` is the nest ``timeloop-mapper.map.txt`` prints (each storage level with the
tile of every tensor it keeps, then its loops, outermost first; fan-outs with their
``(Spatial-X)`` / ``(Spatial-Y)`` loops); :func:`map_yaml` the mapping file
``timeloop-model`` (and :func:`workbench.scheduling.timeloop.read_mapping`) reads back.
"""

from __future__ import annotations

from workbench.scheduling.nest_eval import Problem, tile_words
from workbench.scheduling.timeloop.arch import Arch
from workbench.scheduling.timeloop.mapping import Loops, Mapping

__all__ = ["map_text", "map_yaml"]


def _blocks(arch: Arch, mapping: Mapping) -> list[tuple[str, str | None, Loops, Loops]]:
    """(name, storage or None for a fan-out, X/temporal loops, Y loops), outermost first."""
    out: list[tuple[str, str | None, Loops, Loops]] = []
    for s in arch.storages:
        out.append((s.name, s.name, mapping.loops_at(s.name), ()))
        for f in arch.fanouts_below(s.name):
            x, y = next((x, y) for n, x, y in mapping.spatial if n == f.name)
            out.append((f.name, None, x, y))
    return out


def map_text(arch: Arch, problem: Problem, mapping: Mapping) -> str:
    """The loop nest in Timeloop's ``map.txt`` form (loops with bound 1 left out)."""
    blocks = _blocks(arch, mapping)
    lines: list[str] = []
    depth = 0
    for i, (name, storage, xs, ys) in enumerate(blocks):
        below = [lp for _, _, x, y in blocks[i:] for lp in (*x, *y)]
        if storage is None:
            head = f"{name} [ ] "
        else:
            kept = mapping.kept(storage)
            sizes = [(t.name, tile_words(t, below)) for t in problem.tensors if t.name in kept]
            shown = "".join(f"{t}:{n} ({n}) " for t, n in sizes)
            head = f"{name} [ {shown}] "
        loops = [(d, b, "") for d, b in xs if b > 1]
        if storage is None:
            loops = [(d, b, " (Spatial-X)") for d, b in xs if b > 1]
            loops += [(d, b, " (Spatial-Y)") for d, b in ys if b > 1]
        lines.append(head)
        if loops or i == len(blocks) - 1:
            lines.append("-" * len(head.rstrip()))
        for d, b, tag in loops:
            lines.append(f"|{'  ' * depth} for {d} in [0:{b}){tag}")
            depth += 1
        if loops and i < len(blocks) - 1:
            lines.append("")
    lines.append(f"|{'  ' * depth} << Compute >>")
    return "\n".join(line for j, line in enumerate(lines) if line or lines[j - 1])


def _factor_line(loops: Loops, dims: list[str]) -> tuple[str, str]:
    """Factors of every dim and the permutation innermost first."""
    bound = dict(loops)
    factors = " ".join(f"{d}={bound.get(d, 1)}" for d in dims)
    inner_first = [d for d, _ in reversed(loops)]
    perm = [*inner_first, *[d for d in dims if d not in inner_first]]
    return factors, "".join(perm) if all(len(d) == 1 for d in dims) else str(perm)


def map_yaml(arch: Arch, problem: Problem, mapping: Mapping) -> str:
    """The mapping as a Timeloop v0.4 mapping file (``mapping:`` directives)."""
    dims = [d for d, _ in problem.bounds]
    names = [t.name for t in problem.tensors]
    out = ["mapping:"]
    for s in arch.storages:
        factors, perm = _factor_line(mapping.loops_at(s.name), dims)
        out += [f"  - target: {s.name}", "    type: temporal", f"    factors: {factors}"]
        out.append(f"    permutation: {perm}")
        kept = mapping.kept(s.name)
        out += [f"  - target: {s.name}", "    type: dataspace"]
        out.append(f"    keep: [{', '.join(t for t in names if t in kept)}]")
        out.append(f"    bypass: [{', '.join(t for t in names if t not in kept)}]")
    for name, xs, ys in mapping.spatial:
        factors, perm = _factor_line((*ys, *xs), dims)
        out += [f"  - target: {name}", "    type: spatial", f"    factors: {factors}"]
        out += [f"    permutation: {perm}", f"    split: {len(xs)}"]
    return "\n".join(out) + "\n"
