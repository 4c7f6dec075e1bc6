"""``workbench triage``: compare two run records down to the first failing mechanism.

Exit status: 0 when the runs are comparable and the decision is ``ship`` or ``ship behind a
flag``; 1 when triage refuses (tags differ outside ``--changed``, or the models differ) or the
decision is ``roll back`` or ``cannot sign off`` (evidence missing); 2 for bad input
(unreadable, corrupt, foreign, newer, tampered or impossible records, or a malformed
owners/guardrails file).
"""

from __future__ import annotations

import argparse
import json

from workbench._cli.commands import add_command
from workbench.report.triage_render import triage_document, triage_text
from workbench.review.decision.verdict import triage_files
from workbench.review.records.tags import TAG_GROUPS

__all__ = ["exit_status", "register", "run"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``triage`` subcommand."""
    p = add_command(subs, "triage", run)
    p.add_argument("baseline", metavar="BASELINE", help="baseline run record (JSON)")
    p.add_argument("candidate", metavar="CANDIDATE", help="candidate run record (JSON)")
    p.add_argument(
        "--changed",
        type=_groups,
        action="append",
        default=None,
        metavar="GROUP[,GROUP]",
        help=f"tag group(s) deliberately changed between the runs: {', '.join(TAG_GROUPS)} "
        "(a comma list, or repeat the flag)",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--owners", metavar="FILE.yaml", help="ownership table (default built in)")
    p.add_argument("--guardrails", metavar="FILE.yaml", help="rollback guardrails YAML")


def _groups(text: str) -> tuple[str, ...]:
    """``compiler,runtime`` -> ("compiler", "runtime"); an unknown group is a usage error."""
    groups = tuple(g.strip() for g in text.split(",") if g.strip())
    bad = [g for g in groups if g not in TAG_GROUPS]
    if bad or not groups:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected tag groups from {', '.join(TAG_GROUPS)}, comma-separated"
        )
    return groups


def exit_status(decision: str) -> int:
    """0 for ship / ship behind a flag, 1 for refused / cannot sign off / roll back."""
    return 1 if decision in ("refused", "roll back", "cannot sign off") else 0


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench triage``."""
    report = triage_files(
        args.baseline,
        args.candidate,
        changed=[g for item in args.changed or () for g in item] or None,
        owners=args.owners,
        guardrails=args.guardrails,
    )
    if args.format == "json":
        print(json.dumps(triage_document(report), indent=2, allow_nan=False))
    else:
        print(triage_text(report), end="")
    return exit_status(report.decision)
