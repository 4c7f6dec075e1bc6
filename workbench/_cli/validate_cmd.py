"""``workbench validate``: predict and measure a suite of kernels on this machine."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from workbench._cli.argtypes import add_blas_threads, count
from workbench._cli.commands import add_command
from workbench.errors import WorkbenchError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``validate`` command."""
    p = add_command(subparsers, "validate", _validate)
    p.add_argument(
        "--hardware",
        default=None,
        metavar="FILE|NAME",
        help="host profile (default: calibrate this host quickly)",
    )
    p.add_argument(
        "--backend", default=None, help="numpy or cupy (default: WORKBENCH_BACKEND, then automatic)"
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "csv", "md"),
        default="table",
        help="csv: --published only; md: --published, the cross-validated headline as Markdown",
    )
    p.add_argument(
        "--published",
        action="store_true",
        help="predict the published-measurement corpus instead of timing this machine",
    )
    p.add_argument(
        "--split", default="all", help="with --published: calibration, heldout or all (default)"
    )
    p.add_argument(
        "--chart", default=None, metavar="FILE", help="with --published: write .html/.svg/.png"
    )
    p.add_argument(
        "--record-first-contact",
        default=None,
        metavar="PUBLICATION",
        help="with --published: record a new publication's rows' errors at this commit, before "
        "any change they motivate (workbench/fidelity/data/first_contact.json; once each)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the small smoke-test suite (about 9 s on 2 cores: one calibration, rates re-measured "
        "once per round; the table counts the kernels it ran)",
    )
    p.add_argument(
        "--repeats",
        type=count(1, 10_000),
        default=10,
        help="timed runs per kernel per round, the best kept (default 10)",
    )
    p.add_argument(
        "--rounds",
        type=count(1, 1_000),
        default=3,
        help="passes over the suite; each kernel's error is the median of its rounds (default 3)",
    )
    add_blas_threads(
        p, "BLAS threads for calibration and measurement (default 1; 0 = library default)"
    )


def _validate(args: argparse.Namespace) -> int:
    if args.published:
        from workbench._cli.published_cmd import validate_published

        if args.record_first_contact is not None:
            from workbench._cli.published_cmd import record_first_contact

            return record_first_contact(args.record_first_contact)
        return validate_published(args.split, args.format, args.chart)
    if args.format in ("csv", "md") or args.chart or args.split != "all":
        raise WorkbenchError("--format csv or md, --split and --chart need --published")
    if args.record_first_contact is not None:
        raise WorkbenchError("--record-first-contact needs --published")
    from workbench.execution.backend import get_backend
    from workbench.hw.loader import load_hardware
    from workbench.tuning.validate import validate

    if args.blas_threads < 0:
        raise WorkbenchError(f"--blas-threads must be >= 0, got {args.blas_threads}")
    if args.repeats < 1:
        raise WorkbenchError(f"--repeats must be >= 1, got {args.repeats}")
    if args.rounds < 1:
        raise WorkbenchError(f"--rounds must be >= 1, got {args.rounds}")
    backend = get_backend(args.backend)
    hw = None
    if args.hardware:
        looks_like_file = args.hardware.endswith((".yaml", ".yml")) or "/" in args.hardware
        if looks_like_file and not Path(args.hardware).is_file():
            raise WorkbenchError(f"--hardware {args.hardware}: no such file")
        hw = load_hardware(args.hardware)
    report = validate(
        hw,
        backend=backend,
        quick=args.quick,
        repeats=args.repeats,
        rounds=args.rounds,
        progress=args.format == "table",
        threads=args.blas_threads or None,
    )
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(report.table())
    return 0
