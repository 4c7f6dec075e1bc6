"""The ``workbench`` command line.

Each subcommand lives in its own module under :mod:`workbench._cli` and exposes
``register(subparsers)``; this module only assembles them and turns bad input into one clear line
on stderr with exit status 2 (never a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from workbench import __version__
from workbench._format import fmt_cut
from workbench.errors import WorkbenchError, printable

__all__ = ["build_parser", "main"]

#: Subcommand modules in the order ``workbench --help`` lists them. A module that is missing is
#: skipped, so the CLI keeps working while a command is being built.
_COMMANDS = (
    "map_cmd",
    "hardware_cmd",
    "stacks_cmd",
    "calibrate_cmd",
    "validate_cmd",
    "run_cmd",
    "trace_cmd",
    "triage_cmd",
    "scenario_cmd",
    "review_cmd",
    "sweep_latency_cmd",
    "compare_cmd",
    "sweep_cmd",
    "dataflow_cmd",
    "train_cmd",
)


class _Parser(argparse.ArgumentParser):
    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """Refuse an empty value for any option or argument (``--on ''``), then convert it.

        An empty string names no file, profile or backend; taken as "not given" it would be
        silently ignored, so every command refuses it in one line (exit 2).
        """
        # NOTE: argparse converts every value a command line gives through this one method, so
        # the rule holds for every option of every command, present and future; a subcommand's
        # whole command line (PARSER) is checked by the subcommand's own parser.
        command_line = action.nargs in (argparse.PARSER, argparse.REMAINDER)
        if not command_line and isinstance(arg_string, str) and not arg_string.strip():
            where = "/".join(action.option_strings) or action.metavar or action.dest
            raise argparse.ArgumentError(None, f"{where}: an empty value is not allowed")
        return super()._get_value(action, arg_string)

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print one ``workbench: error:`` line and exit 2, without argparse's usage block."""
        command = self.prog.removeprefix("workbench").strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"workbench: error: {where}{message}\n")


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


#: Set to 1 to see the traceback of an internal error instead of its one line.
DEBUG_ENV = "WORKBENCH_DEBUG"
#: Exit status of an internal error (a bug), distinct from bad input (2) and triage's refusal (1).
INTERNAL_ERROR = 3


def _one_line(text: object, limit: int = 400) -> str:
    """``text`` folded onto one line and cut to ``limit`` characters."""
    line = printable(" ".join(str(text).split()))  # NOTE: no escape reaches the terminal raw
    return fmt_cut(line, limit)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Show any warning raised while a command runs as one ``workbench: warning:`` line."""
    stream = file if file is not None else sys.stderr
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            stream.write(f"workbench: warning: {_one_line(message)}\n")


def _run(args: argparse.Namespace) -> int:
    """Call the command; every failure becomes one line on stderr (never a traceback)."""
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file the command reads or writes, outside the checked paths
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"workbench: error: {where}{_one_line(exc.strerror or exc)}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as exc:
        kind = "nested too deeply" if isinstance(exc, RecursionError) else "out of memory"
        print(f"workbench: error: input {kind} to process", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        print(
            f"workbench: internal error: {type(exc).__name__}: {_one_line(exc, 200)} "
            f"(a bug: please report it; {DEBUG_ENV}=1 shows the traceback)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status.

    0: success (``triage``: 1 means a refused decision); 2: bad input (one line naming what and
    where); 3: an internal error (one line; ``WORKBENCH_DEBUG=1`` shows the traceback);
    130: interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad option (one line printed, 2), --help or --version (0)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from workbench._cli.common import flush_notes

    flush_notes(show=False)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        code = _run(args)
    flush_notes(show=code == 0)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
