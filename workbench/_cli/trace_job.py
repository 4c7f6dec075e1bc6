"""``workbench trace DIR`` (and ``--against DIR2``): a job's folder of per-rank traces.

Each rank is read and reduced on its own (in this process, on ``--workers N`` local processes, or
on a Dask cluster with ``--scheduler ADDRESS``, as ``workbench sweep`` runs), and the summaries
are combined: the job's step time, per-rank figures, collective waits and stragglers. A rank file
that cannot be read is one line on stderr naming it, and the other ranks are still reported; a
folder that is not one job is refused in one line (exit 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from workbench.errors import WorkbenchError, printable
from workbench.evidence import MeasuredRun, read_trace, read_trace_and_operators
from workbench.evidence.stragglers import JobSummary
from workbench.mapper import ModelMapping
from workbench.platform.job_run import read_job
from workbench.report.job_text import job_pair_text, job_text
from workbench.review.join.from_trace import record_from_trace
from workbench.review.join.job_summary import (
    job_document,
    job_measurement,
    job_pair_document,
    setting_rank,
)
from workbench.review.records.store import RunRecord

__all__ = ["add_job_args", "job_record", "read_job_args", "run_job"]


def add_job_args(p: argparse.ArgumentParser) -> None:
    """Add ``--workers``, ``--scheduler`` and ``--connect-timeout`` (for a folder of ranks)."""
    from workbench._cli.argtypes import add_connect_timeout, count

    p.add_argument(
        "--workers",
        type=count(1, 4096),
        default=1,
        help="a job folder: local processes reducing ranks (default 1: this process)",
    )
    p.add_argument(
        "--scheduler", metavar="ADDRESS", help="a job folder: Dask scheduler, tcp://host:8786"
    )
    add_connect_timeout(p)


def read_job_args(folder: str, args: argparse.Namespace) -> JobSummary:
    """Read a job folder with the backend the arguments name; skipped ranks go to stderr."""
    job = read_job(
        folder,
        workers=getattr(args, "workers", 1),
        scheduler=getattr(args, "scheduler", None),
        connect_timeout_s=getattr(args, "connect_timeout", 5.0),
        progress=sys.stderr.isatty(),
    )
    for _, why in job.skipped:
        print(f"workbench: skipped rank file: {printable(why)}", file=sys.stderr)
    return job


def job_record(
    folder: str, args: argparse.Namespace, mapping: ModelMapping | None, *, operators: bool
) -> tuple[JobSummary, RunRecord, MeasuredRun]:
    """A job folder as one run record, with its per-rank view in the measurement.

    The kernels are those of the rank standing for the job
    (:func:`~workbench.review.join.job_summary.setting_rank`), and the rank tag is ``job``, so
    two job folders of one setup compare.

    Args:
        folder: The job's folder.
        args: The command's arguments (``--workers``, ``--scheduler``...).
        mapping: The model's mapping sheet to match kernels against, or None.
        operators: Read the rank's operators too (rows then name them; Kineto only).
    """
    job = read_job_args(folder, args)
    source = setting_rank(job).source
    ops = None
    if operators:
        measured, ops = read_trace_and_operators(source)
        ops = ops if measured.format == "kineto" else None
    else:
        measured = read_trace(source)
    tags = tuple((k, "job" if k == "rank" else v) for k, v in measured.tags)
    measured = dataclasses.replace(measured, tags=tags)
    record = record_from_trace(measured, mapping, operators=ops)
    assert record.measurement is not None
    record = dataclasses.replace(record, measurement=job_measurement(job, record.measurement))
    return job, record, measured


def run_job(args: argparse.Namespace) -> int:
    """Handle ``workbench trace DIR`` (``--against DIR2`` too)."""
    if args.hardware or args.on or args.step_range:
        raise WorkbenchError("trace DIR: --hardware, --on and --step-range read one trace file")
    job = read_job_args(args.file, args)
    if args.against is not None:
        if not args.against:
            raise WorkbenchError("trace: --against is an empty path")
        doc = job_pair_document(job, read_job_args(args.against, args))
        text = job_pair_text(doc)
    else:
        doc = job_document(job)
        text = job_text(doc)
    print(json.dumps(doc, indent=2, allow_nan=False) if args.json else text, end="")
    if args.json:
        print()
    return 0
