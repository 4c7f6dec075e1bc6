"""The ``workbench`` command line.

Each subcommand lives in its own module under :mod:`workbench._cli` and exposes
``register(subparsers)``; this module only assembles them and turns bad input into one clear line
on stderr with exit status 2 (never a traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from workbench import __version__
from workbench.errors import WorkbenchError

__all__ = ["build_parser", "main"]

#: Subcommand modules in the order ``workbench --help`` lists them. A module that is missing is
#: skipped, so the CLI keeps working while a command is being built.
_COMMANDS = (
    "map_cmd",
    "hardware_cmd",
    "calibrate_cmd",
    "validate_cmd",
    "run_cmd",
    "triage_cmd",
    "scenario_cmd",
    "review_cmd",
    "sweep_latency_cmd",
    "compare_cmd",
    "sweep_cmd",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """Print one line and exit 2, as argparse does, but without the usage block."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every available subcommand."""
    parser = _Parser(
        prog="workbench",
        description="Map neural-network graphs onto accelerator models, execute, and review.",
    )
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"workbench._cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"workbench._cli.{name}":
                raise
            continue
        module.register(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
