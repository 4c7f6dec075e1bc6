"""``workbench run``: map a model (optionally measure a capped sample) and write a run record."""

from __future__ import annotations

import argparse

from workbench._cli.common import (
    add_model_args,
    add_options_args,
    map_from_args,
)
from workbench._format import fmt_time
from workbench.review.records import record_from_mapping, save_record
from workbench.review.tags import host_facts

__all__ = ["register", "run"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand."""
    p = subs.add_parser(
        "run",
        help="map a model and write a run record with locked tags (for triage)",
        description="Map a model (same flags as `workbench map`) and write a run record: locked "
        "compiler/runtime/hardware/workload tags and per-kernel and per-model results. "
        "--execute also measures the first layer's GEMM kernels, scaled down, on this machine.",
    )
    add_model_args(p)
    add_options_args(p)
    p.add_argument("--record", required=True, metavar="FILE.json", help="run record to write")
    p.add_argument(
        "--execute",
        action="store_true",
        help="measure a capped sample of kernels on this machine (about 30 s at most)",
    )
    p.add_argument("--backend", choices=("numpy", "cupy"), default=None, help="for --execute")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench run``."""
    mapping = map_from_args(args)
    if args.execute:
        from workbench.review.measure import measure_sample

        measurement, measured, versions = measure_sample(mapping, args.backend)
        record = record_from_mapping(
            mapping,
            measurement=measurement,
            measured=measured,
            backend_versions=versions,
            host=host_facts(),
        )
    else:
        record = record_from_mapping(mapping)
    path = save_record(record, args.record)
    line = f"wrote {path}: {record.label}, {fmt_time(record.model.time_s)} predicted, "
    line += f"MFU {record.model.mfu:.1%}, {len(record.kernels)} kernels"
    if record.measurement:
        line += f"; measured {len(record.measurement.kernels)} kernel(s) on "
        line += f"{record.measurement.backend} in {record.measurement.wall_s:.1f} s"
    print(line)
    return 0
