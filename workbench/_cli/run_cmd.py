"""``workbench run``: write a run record from a mapping, a capped measurement or a trace."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from workbench._cli.common import (
    add_mapping_command,
    map_from_args,
)
from workbench._format import fmt_time
from workbench.errors import WorkbenchError
from workbench.review.records.store import record_from_mapping, save_record
from workbench.review.records.tags import host_facts

__all__ = ["register", "run"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand."""
    p = add_mapping_command(subs, "run", run)
    p.add_argument("--record", required=True, metavar="FILE.json", help="run record to write")
    p.add_argument(
        "--execute",
        action="store_true",
        help="measure a capped sample of kernels on this machine (about 30 s at most)",
    )
    p.add_argument("--backend", choices=("numpy", "cupy"), default=None, help="for --execute")
    p.add_argument(
        "--quality-metric",
        type=_quality,
        default=None,
        metavar="quality_error=VALUE",
        help="quality evidence measured elsewhere, stored in the record: quality_error is the "
        "relative output error against a float64 reference (finite, >= 0); triage asks for it "
        "on both runs when a kernel's format changed",
    )
    p.add_argument(
        "--quality-file",
        metavar="FILE.json",
        default=None,
        help='the same quality evidence from a JSON file: {"quality_error": VALUE}',
    )
    p.add_argument(
        "--from-trace",
        metavar="TRACE",
        help="profiler trace of a real run (Kineto JSON/.gz or Nsight Systems SQLite), or a "
        "job's folder of one trace per rank",
    )
    from workbench._cli.trace_job import add_job_args

    add_job_args(p)


def _from_trace(args: argparse.Namespace) -> int:
    from workbench._cli.trace_paths import check_input_path, check_output_not_input
    from workbench.evidence import read_trace, read_trace_and_operators
    from workbench.review.join.from_trace import record_from_trace

    if args.execute:
        raise WorkbenchError("--from-trace and --execute: choose one (a trace is the measurement)")
    check_input_path(args.from_trace, "--from-trace")
    check_output_not_input(args.record, [args.from_trace], "--record")
    given = args.model or args.hf_config or args.onnx
    job = None
    if Path(args.from_trace).is_dir():  # NOTE: a job folder: one record for the whole job
        from workbench._cli.trace_job import job_record

        mapping = map_from_args(args) if given else None
        job, record, _ = job_record(args.from_trace, args, mapping, operators=not given)
    else:
        ops = None
        if given:
            measured = read_trace(args.from_trace)
        else:  # NOTE: rows then name their operators (one pass reads the run and them)
            measured, ops = read_trace_and_operators(args.from_trace)
            ops = ops if measured.format == "kineto" else None
        mapping = map_from_args(args) if given else None
        record = record_from_trace(measured, mapping, operators=ops)
    path = save_record(record, args.record)
    m = record.measurement
    assert m is not None
    matched = sum(1 for k in record.kernels if k.measured_s is not None and k.predicted_s > 0)
    unmatched = sum(1 for k in record.kernels if k.layer_type == "unmatched")
    line = f"wrote {path}: {record.label}, median iteration {fmt_time(record.model.time_s)}"
    if job is not None:
        from workbench.review.join.job_summary import setting_rank

        line += f" (rank {setting_rank(job).rank}; job step {fmt_time(job.step_s)})"
    if record.model.time_interval_s:
        lo, hi = record.model.time_interval_s
        line += f" (95% interval {fmt_time(lo)}..{fmt_time(hi)})"
    line += f" over {m.repeats} repeat(s)"
    if mapping is not None:
        line += f"; {matched} sheet kernel(s) matched, {unmatched} measured kernel(s) unmatched"
    print(line)
    return 0


def _stack_name(args: argparse.Namespace) -> str:
    """The software stack the run maps with: ``--stack``, else the default stack's name."""
    from workbench.hw.stack import DEFAULT_STACK

    return getattr(args, "stack", None) or DEFAULT_STACK


_QUALITY_NAMES = ("quality_error",)


def _quality(text: str) -> float:
    """``quality_error=0.002`` -> 0.002; anything else is a usage error (exit 2)."""
    name, sep, value = text.partition("=")
    if not sep or name.strip() not in _QUALITY_NAMES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=VALUE with NAME one of {', '.join(_QUALITY_NAMES)}"
        )
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not math.isfinite(number) or number < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: VALUE must be a finite number >= 0")
    return number


def _quality_from_file(path: str) -> float:
    """``quality_error`` from a JSON file ``{"quality_error": VALUE}`` (one-line errors)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkbenchError(f"--quality-file {path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict) or set(data) != {"quality_error"}:
        raise WorkbenchError(f'--quality-file {path}: expected {{"quality_error": VALUE}}')
    value = data["quality_error"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkbenchError(f"--quality-file {path}: quality_error must be a number")
    return _quality(f"quality_error={value}")


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench run``."""
    if args.quality_file is not None:
        if args.quality_metric is not None:
            raise WorkbenchError("--quality-metric and --quality-file: give the evidence once")
        try:
            args.quality_metric = _quality_from_file(args.quality_file)
        except argparse.ArgumentTypeError as exc:
            raise WorkbenchError(f"--quality-file {args.quality_file}: {exc}") from exc
    if args.from_trace is not None:  # NOTE: an empty path is an error, not "no trace"
        return _from_trace(args)
    mapping = map_from_args(args)
    if args.execute:
        from workbench.review.records.measure import measure_sample

        measurement, measured, versions = measure_sample(mapping, args.backend)
        record = record_from_mapping(
            mapping,
            measurement=measurement,
            measured=measured,
            backend_versions=versions,
            host=host_facts(),
            quality_error=args.quality_metric,
            stack=_stack_name(args),
        )
    else:
        record = record_from_mapping(
            mapping, quality_error=args.quality_metric, stack=_stack_name(args)
        )
    path = save_record(record, args.record)
    line = f"wrote {path}: {record.label}, {fmt_time(record.model.time_s)} predicted, "
    m = record.model
    util = f"MFU {m.mfu:.1%}, HFU {m.hfu or 0:.1%}"
    if m.mbu is not None:  # NOTE: MBU leads for decode (bandwidth is its KPI)
        mbu = f"MBU {m.mbu:.1%}"
        util = f"{mbu}, {util}" if record.tags.workload.phase == "decode" else f"{util}, {mbu}"
    line += f"{util}, {len(record.kernels)} kernels"
    if record.measurement:
        line += f"; measured {len(record.measurement.kernels)} kernel(s) on "
        line += f"{record.measurement.backend} in {record.measurement.wall_s:.1f} s"
    print(line)
    return 0
