"""``workbench review``: write the review pack (offline HTML + Markdown twin).

Two forms:

* ``workbench review [model flags | --record FILE] --out pack.html``: the pack of one mapping;
* ``workbench review BASELINE CANDIDATE [--changed GROUP ...] --out pack.html``: the pack built
  around a regression. BASELINE and CANDIDATE are run records or profiler traces (Kineto JSON or
  ``.json.gz``, Nsight Systems SQLite); a trace is matched to the mapping of ``--model`` (same
  flags for both sides; for different options per side, write records with ``workbench run
  --from-trace`` first).

``--out`` names the format by its suffix (``.md`` Markdown, else HTML); the twin is written
beside it with the other suffix. Exit status as ``workbench triage``: 0 ship (or behind a flag),
1 refused / cannot sign off / roll back, 2 bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench._cli.common import (
    add_mapping_command,
    map_from_args,
)
from workbench.errors import WorkbenchError
from workbench.review.records.tags import TAG_GROUPS

__all__ = ["register", "run"]

_TRACE_MAGIC = (b"SQLite format 3", b"\x1f\x8b")


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``review`` subcommand."""
    p = add_mapping_command(subs, "review", run)
    p.add_argument("runs", nargs="*", metavar="RUN", help="BASELINE CANDIDATE (records/traces)")
    p.add_argument("--record", metavar="FILE.json", help="one-run pack: re-map this run record")
    p.add_argument(
        "--changed",
        choices=TAG_GROUPS,
        action="append",
        default=None,
        help="a tag group deliberately changed between BASELINE and CANDIDATE (repeatable)",
    )
    p.add_argument(
        "--no-simulate", action="store_true", help="skip the serving (p95/p99) simulation"
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="pack.html",
        help="file to write: .md for Markdown, else HTML; the twin gets the other suffix",
    )


def _is_record(path: str) -> bool:
    """A run record names its kind first (``{"kind": "workbench.run_record", ...``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return True  # let load_record say what is wrong, in one line
    return not head.startswith(_TRACE_MAGIC) and b'"workbench.run_record"' in head


def _load_run(path: str, args: argparse.Namespace):
    """``(record, measured run or None)`` of a record or trace file."""
    from workbench.review.records.store import load_record

    if Path(path).is_dir():  # NOTE: a job's folder of rank traces
        from workbench._cli.trace_job import job_record

        given = args.model or args.hf_config or args.onnx
        _, record, measured = job_record(
            path, args, map_from_args(args) if given else None, operators=False
        )
        return record, measured
    if _is_record(path):
        return load_record(path), None
    from workbench.evidence import read_trace
    from workbench.review.join.from_trace import record_from_trace

    try:
        measured = read_trace(path)
    except WorkbenchError as exc:
        raise WorkbenchError(f"{exc}; nor is it a workbench run record") from None
    given = args.model or args.hf_config or args.onnx
    return record_from_trace(measured, map_from_args(args) if given else None), measured


def _compare(args: argparse.Namespace) -> int:
    from workbench._cli.triage_cmd import exit_status
    from workbench.report.review_pack import write_comparison
    from workbench.review.pack.content import comparison_pack

    if len(args.runs) != 2:
        raise WorkbenchError(
            f"review: expected BASELINE CANDIDATE (two runs), got {len(args.runs)}"
        )
    from workbench._cli.trace_paths import check_input_path, check_output_not_input

    for path in args.runs:
        check_input_path(path, "review: RUN")
    out = Path(args.out)
    twin = out.with_suffix(".html" if out.suffix.lower() == ".md" else ".md")
    for written in (str(out), str(twin)):
        check_output_not_input(written, args.runs, "--out")
    (base, run_b), (cand, run_c) = (_load_run(p, args) for p in args.runs)
    pack = comparison_pack(
        base,
        cand,
        changed=args.changed,
        simulate=not args.no_simulate,
        traces=(run_b, run_c),
        inputs=(args.runs[0], args.runs[1]),
        out=args.out,
    )
    first, twin = write_comparison(pack, args.out)
    print(f"wrote {first} and {twin}: decision {pack.report.decision}")
    return exit_status(pack.report.decision)


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench review``."""
    from workbench.report.review_pack import write_review
    from workbench.review.records.reproduce import remap
    from workbench.review.records.store import load_record

    if args.runs:
        return _compare(args)
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
    first, twin = write_review(mapping, args.out, record)
    print(f"wrote {first} and {twin}")
    return 0
