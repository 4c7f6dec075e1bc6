"""``workbench trace FILE``: what a reviewer reads first about a profiler trace.

Iterations (steady-state median, the warm-up step apart, warnings), HTA's temporal breakdown,
kernel time by category per iteration, the top kernels and, when the trace recorded shapes, an
expected time beside every modelled kernel on the trace's GPU (``--hardware`` to choose another
profile, ``--on`` for a what-if). ``--against B`` compares two traces by operator and category.
Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench._cli.argtypes import count, name
from workbench._cli.commands import add_command
from workbench.errors import WorkbenchError
from workbench.evidence import read_trace_and_operators
from workbench.hw.loader import load_hardware
from workbench.report.trace_text import pair_text, trace_text
from workbench.review.join.pairs import pair_document
from workbench.review.join.trace_summary import choose_hardware, trace_document

__all__ = ["register", "run"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``trace`` subcommand."""
    p = add_command(subs, "trace", run)
    p.add_argument(
        "file",
        metavar="FILE",
        help="the trace (.json, .json.gz, .sqlite), or a job's folder of one trace per rank",
    )
    p.add_argument(
        "--hardware", metavar="H", help="profile to expect on (default: the trace's GPU)"
    )
    p.add_argument(
        "--on", metavar="H2", help="what-if: the trace's graph re-mapped on this profile"
    )
    p.add_argument("--against", metavar="B", help="a second trace (or job folder) to compare with")
    p.add_argument(
        "--step-range",
        metavar="NAME",
        type=name,
        help="Nsight Systems: the NVTX range that marks one step (default: ProfilerStep#N-like)",
    )
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.add_argument("--format", choices=("table", "json"), default="table", help="--json's twin")
    p.add_argument(
        "--top",
        type=count(1, 1000),
        default=5,
        help="kernels in the leading tables (1-1000, default 5)",
    )
    from workbench._cli.trace_job import add_job_args

    add_job_args(p)


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench trace``."""
    if not args.file:
        raise WorkbenchError("trace: FILE is an empty path")
    args.json = args.json or args.format == "json"
    if Path(args.file).is_dir():
        from workbench._cli.trace_job import run_job

        return run_job(args)
    first, ops = read_trace_and_operators(args.file, step_range=args.step_range)
    if args.against is not None:
        if not args.against:
            raise WorkbenchError("trace: --against is an empty path")
        second, ops2 = read_trace_and_operators(args.against, step_range=args.step_range)
        doc = pair_document(first, ops, second, ops2, top=max(args.top, 15))
        print(json.dumps(doc, indent=2, allow_nan=False) if args.json else pair_text(doc), end="")
        if args.json:
            print()
        return 0
    hw = None
    if ops.shapes_recorded or args.hardware:
        hw = load_hardware(choose_hardware(first, args.hardware))
    on = load_hardware(args.on) if args.on else None
    doc = trace_document(first, ops, hardware=hw, on=on, top=max(args.top, 10))
    if hw is None:
        note = "the trace recorded no shapes (record_shapes=False)"
        if first.format == "nsys":
            note = "an Nsight Systems export records no operator shapes"
        doc["expected"] = {"note": note}
    if args.json:
        print(json.dumps(doc, indent=2, allow_nan=False))
    else:
        print(trace_text(doc, top=args.top), end="")
    return 0
