"""``workbench dataflow model|search``: Timeloop's own spec files, modelled and searched.

``model`` reads an arch, a problem and a mapping (and Accelergy's ERT / ART for energy and area)
as Timeloop writes them and prints cycles, utilisation, the reads / fills / updates of every
tensor at every level, and energy per level; ``search`` finds the best mapping for an objective
and prints it in Timeloop's ``map.txt`` form with the same figures (``--write-map`` writes the
mapping file ``model`` reads back). Energy in pJ and fJ per MAC, area in um^2, as Timeloop.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from workbench._cli.commands import add_command
from workbench._cli.common import write_output
from workbench.errors import WorkbenchError
from workbench.scheduling.timeloop import (
    ModelResult,
    model,
    read_arch,
    read_art,
    read_constraints,
    read_ert,
    read_mapping,
    read_problem,
)
from workbench.scheduling.timeloop.mapfmt import map_text, map_yaml
from workbench.scheduling.timeloop.model import check_finite
from workbench.scheduling.timeloop.search import BUDGET, OBJECTIVES, search

__all__ = ["register", "result_text"]


def register(subparsers: Any) -> None:
    """Add the ``dataflow`` command and its ``model`` / ``search`` actions."""
    parser = add_command(subparsers, "dataflow")
    subs = parser.add_subparsers(dest="dataflow_command", metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--arch", required=True, metavar="FILE", help="Timeloop v0.4 arch YAML")
    common.add_argument("--problem", required=True, metavar="FILE", help="Timeloop problem YAML")
    common.add_argument(
        "--var",
        action="append",
        type=_var,
        default=[],
        metavar="NAME=VALUE",
        help="value of a {{ NAME }} in the arch file (the newer exercises' Jinja data); repeat",
    )
    common.add_argument("--ert", metavar="FILE", help="Accelergy's ERT (energy per action)")
    common.add_argument("--art", metavar="FILE", help="Accelergy's ART (area per component)")
    common.add_argument("--format", choices=("table", "json"), default="table")
    common.add_argument("--output", metavar="FILE", help="write the report here instead")
    p_model = subs.add_parser("model", parents=[common], help="cycles, accesses and energy")
    p_model.add_argument("--mapping", required=True, metavar="FILE", help="Timeloop mapping YAML")
    p_model.set_defaults(func=_model)
    p_search = subs.add_parser("search", parents=[common], help="the best mapping found")
    p_search.add_argument("--constraints", metavar="FILE", help="mapspace constraints YAML")
    p_search.add_argument("--objective", choices=OBJECTIVES, default="edp")
    p_search.add_argument(
        "--budget", type=int, default=BUDGET, metavar="N", help=f"mappings to evaluate ({BUDGET})"
    )
    p_search.add_argument("--seed", type=int, default=0, help="seed of the perturbations")
    p_search.add_argument("--write-map", metavar="FILE", help="write the mapping YAML here")
    p_search.set_defaults(func=_search)
    parser.set_defaults(func=lambda args: _usage())


def _var(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (NAME an identifier); the value is text, as Jinja substitutes it."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier() or not value.strip():
        raise argparse.ArgumentTypeError(
            f"expected NAME=VALUE with NAME an identifier, got {text!r}"
        )
    return name, value


def _arch(args: argparse.Namespace) -> Any:
    return read_arch(args.arch, dict(args.var) if args.var else None)


def _usage() -> int:
    raise WorkbenchError("workbench dataflow: choose an action: model or search (see --help)")


def _tables(args: argparse.Namespace) -> tuple[Any, Any]:
    ert = read_ert(args.ert) if args.ert else None
    art = read_art(args.art) if args.art else None
    return ert, art


def result_text(r: ModelResult) -> str:
    """The figures of a model run as a table (pJ, fJ per MAC, um^2)."""
    lines = [f"cycles       {r.cycles}", f"utilization  {100 * r.utilization:.2f} %"]
    if r.energy_pj is not None:
        lines.append(f"energy       {r.energy_pj:.6g} pJ ({r.energy_pj * 1e-6:.4g} uJ)")
        lines.append(f"EDP          {r.edp_j_cycles:.4g} J*cycles")
    if r.area_um2 is not None:
        lines.append(f"area         {r.area_um2:.6g} um^2")
    fj = r.fj_per_compute()
    header = f"{'level':<24} {'inst':>5} {'tensor':<10} {'reads':>12} {'fills':>12} {'updates':>12}"
    lines += ["", header + ("   energy pJ   fJ/MAC" if fj else ""), "-" * (len(header) + 21)]
    for lv in r.levels:
        for n, (t, rd, fl, up) in enumerate(lv.accesses or (("-", 0, 0, 0),)):
            name = lv.name if n == 0 else ""
            inst = str(lv.instances) if n == 0 else ""
            row = f"{name:<24} {inst:>5} {t:<10} {rd:>12} {fl:>12} {up:>12}"
            if fj and n == 0:
                row += f"   {lv.energy_pj:>9.6g}   {fj[lv.name]:>6.2f}"
            lines.append(row)
    if fj:
        lines.append(
            f"{r.compute:<24} {r.compute_instances:>5} {'(MACs)':<10} {r.macs:>12}"
            f"{'':>26}   {r.compute_energy_pj:>9.6g}   {fj[r.compute]:>6.2f}"
        )
    return "\n".join(lines)


def _model(args: argparse.Namespace) -> int:
    arch, prob = _arch(args), read_problem(args.problem)
    mapping = read_mapping(args.mapping, arch, prob)
    ert, art = _tables(args)
    try:
        r = model(arch, prob, mapping, ert, art)
    except WorkbenchError as exc:
        raise WorkbenchError(f"{args.mapping}: {exc}") from None
    check_finite(r)
    text = json.dumps(r.as_dict(), indent=2) if args.format == "json" else result_text(r)
    write_output(text, args.output)
    return 0


def _search(args: argparse.Namespace) -> int:
    arch, prob = _arch(args), read_problem(args.problem)
    cons = read_constraints(args.constraints) if args.constraints else ()
    ert, art = _tables(args)
    found = search(arch, prob, cons, args.objective, ert, budget=args.budget, seed=args.seed)
    r = model(arch, prob, found.mapping, ert, art)
    check_finite(r)
    nest, spec = map_text(arch, prob, found.mapping), map_yaml(arch, prob, found.mapping)
    if args.write_map:
        write_output(spec, args.write_map)
    if args.format == "json":
        out = r.as_dict() | {
            "objective": found.objective,
            "evaluated": found.evaluated,
            "refused": found.refused,
            "map_txt": nest,
            "mapping_yaml": spec,
        }
        text = json.dumps(out, indent=2)
    else:
        head = f"best of {found.evaluated} mappings evaluated by {found.objective}"
        text = f"{head}\n\n{nest}\n\n{result_text(r)}"
    write_output(text, args.output)
    return 0
