"""``workbench stacks``: one line per software stack (stacks/*.yaml), with its figures' origins.

Figures are SI base units everywhere else; this module converts them for display only.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from workbench._cli.commands import add_command
from workbench._format import fmt_time
from workbench.hw.stack import DEFAULT_STACK, Stack, list_stacks, load_stack

__all__ = ["register", "stacks_text"]


def register(subparsers: Any) -> None:
    """Add the ``stacks`` command."""
    p = add_command(subparsers, "stacks", run)
    p.add_argument("--format", choices=("table", "json"), default="table")


def _origin(fig: Any) -> str:
    return "f" if fig.fitted else ("s" if fig.source is not None else "a")


def _seconds(fig: Any) -> str:
    v = fig.value
    shown = "profile" if v is None else fmt_time(v)
    return f"{shown} ({_origin(fig)})"


def _row(s: Stack) -> str:
    name = f"{s.name} (default)" if s.name == DEFAULT_STACK else s.name
    return (
        f"{name:<28} {_seconds(s.step_overhead_s):<14} {_seconds(s.request_overhead_s):<14} "
        f"{(s.attention_kernel.value or 'profile') + f' ({_origin(s.attention_kernel)})':<14} "
        f"{f'{str(s.gqa_kv_sharing.value).lower()} ({_origin(s.gqa_kv_sharing)})':<11} "
        f"{f'{str(s.cuda_graphs.value).lower()} ({_origin(s.cuda_graphs)})':<11} "
        f"{_seconds(s.eager_launch_s) if s.eager_launch_s else 'profile'}"
    )


def stacks_text() -> str:
    """The table of every shipped stack."""
    header = (
        f"{'stack':<28} {'step':<14} {'request':<14} {'attention':<14} {'gqa kv':<11} "
        f"{'graphs':<11} eager launch"
    )
    lines = [header, "-" * len(header)]
    lines += [_row(load_stack(n)) for n in list_stacks()]
    lines.append("origin: s = source, f = fitted to calibration rows (fits.py), a = assumption")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench stacks``."""
    if args.format == "json":
        doc = {n: load_stack(n).model_dump(mode="json") for n in list_stacks()}
        print(json.dumps({"default": DEFAULT_STACK, "stacks": doc}, indent=2))
        return 0
    print(stacks_text(), end="")
    return 0
