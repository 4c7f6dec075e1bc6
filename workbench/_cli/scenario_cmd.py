"""``workbench scenario``: list practice regressions or write one as two run records."""

from __future__ import annotations

import argparse
import json

from workbench._cli.commands import add_command
from workbench.errors import WorkbenchError
from workbench.review.scenarios.build import SCENARIOS, write_scenario

__all__ = ["register", "run"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``scenario`` subcommand."""
    p = add_command(subs, "scenario", run)
    p.add_argument("name", metavar="NAME|list", help="scenario name, or 'list'")
    p.add_argument("--out", metavar="DIR", help="folder to write the scenario into")
    p.add_argument("--format", choices=("table", "json"), default="table", help="for list")


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench scenario``."""
    if args.name == "list":
        rows = [
            {
                "name": s.name,
                "title": s.title,
                "model": s.model,
                "phase": s.phase,
                "hardware": s.hardware,
                "changed": s.changed,
            }
            for s in SCENARIOS.values()
        ]
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            width = max(len(r["name"]) for r in rows)
            for r in rows:
                print(f"{r['name']:<{width}}  {r['changed']:<8}  {r['title']}")
        return 0
    if not args.out:
        raise WorkbenchError(f"scenario {args.name}: --out DIR is required")
    paths = write_scenario(args.name, args.out)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
