"""``workbench review``: write the review pack (offline HTML + Markdown twin)."""

from __future__ import annotations

import argparse

from workbench._cli.common import (
    add_model_args,
    add_options_args,
    map_from_args,
)
from workbench.errors import WorkbenchError

__all__ = ["register", "run"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``review`` subcommand."""
    p = subs.add_parser(
        "review",
        help="write a design-review pack (offline HTML + Markdown)",
        description="Map a model (same flags as `workbench map`), or re-map a run record with "
        "--record, and write one standalone offline HTML page plus a Markdown twin.",
    )
    add_model_args(p)
    add_options_args(p)
    p.add_argument("--record", metavar="FILE.json", help="re-map this run record instead")
    p.add_argument("--out", required=True, metavar="review.html", help="HTML file to write")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench review``."""
    from workbench.report.review_pack import write_review
    from workbench.review.records import load_record
    from workbench.review.reproduce import remap

    record = None
    if args.record:
        record = load_record(args.record)
        mapping = remap(record)
        if mapping is None:
            raise WorkbenchError(
                f"--record {args.record}: cannot re-map (model is not a preset or the hardware "
                "profile changed since the run)"
            )
    else:
        mapping = map_from_args(args)
    html_path, md_path = write_review(mapping, args.out, record)
    print(f"wrote {html_path} and {md_path}")
    return 0
