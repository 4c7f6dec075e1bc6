"""``workbench sweep``: a resumable design-space sweep on a process pool or a Dask cluster."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from workbench._cli.argtypes import add_connect_timeout, count, parse_count
from workbench._cli.commands import add_command
from workbench._cli.common import MAX_ARG, note
from workbench.errors import WorkbenchError
from workbench.ir.dtypes import dtype_info
from workbench.models import list_models
from workbench.models.presets import PRESETS
from workbench.platform.sweep import MAX_ATTEMPTS, SweepInterrupted, SweepPoint, grid, run_sweep

__all__ = ["register"]


def _ints(text: str, name: str) -> list[int]:
    """Comma-separated plain decimals in 1..MAX_ARG (``+5``, ``1_000``, ``٣`` refused)."""
    try:
        values = [parse_count(t.strip(), 1, MAX_ARG) for t in text.split(",") if t.strip()]
    except ValueError as exc:
        raise WorkbenchError(f"--{name} {text!r}: {exc}") from None
    if not values:
        raise WorkbenchError(f"--{name} {text!r}: expected comma-separated positive integers")
    return values


def _dtypes(text: str) -> list[str]:
    """The --dtype list, each a format the graph knows (aliases such as fp8 included)."""
    words = _words(text, "dtype")
    for w in words:
        try:
            dtype_info(w)
        except WorkbenchError as exc:
            raise WorkbenchError(f"--dtype {w!r}: {exc}") from None
    return words


def _words(text: str, name: str, known: tuple[str, ...] | None = None) -> list[str]:
    """Comma-separated names, none empty, each one of ``known`` when given."""
    words = [t.strip() for t in text.split(",")]
    if not words or any(not w for w in words):
        raise WorkbenchError(f"--{name} {text!r}: an empty value in the list")
    for w in words:
        if known is not None and w not in known:
            raise WorkbenchError(f"--{name} {w!r}: unknown (known: {', '.join(known)})")
    return words


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``sweep`` subcommand."""
    p = add_command(subs, "sweep", run)
    p.add_argument("--hardware", nargs="+", required=True, help="hardware profiles")
    p.add_argument("--model", nargs="+", required=True, help="preset names")
    p.add_argument("--batch", default="1", help="batch sizes, comma-separated (default 1)")
    p.add_argument(
        "--seq",
        default=None,
        help="sequence lengths, comma-separated (default 2048, clamped to each model's context)",
    )
    p.add_argument("--dtype", default="bf16", help="dtypes, comma-separated (default bf16)")
    p.add_argument("--phase", default="prefill", help="prefill,decode (default prefill)")
    p.add_argument("--out", required=True, metavar="FILE", help="results file (JSON lines)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    add_connect_timeout(p)
    p.add_argument(
        "--workers", type=count(1, 4096), default=None, help="local processes (1: in-process)"
    )
    p.add_argument(
        "--limit", type=count(1, 10_000_000), default=None, help="stop after this many new points"
    )


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench sweep``."""
    from workbench.hw.loader import load_hardware

    for m in args.model:
        if m not in list_models():
            raise WorkbenchError(f"--model {m!r}: unknown (known: {', '.join(list_models())})")
    for h in args.hardware:
        load_hardware(h)
    if args.workers is not None and args.workers < 1:
        raise WorkbenchError(f"--workers must be >= 1, got {args.workers}")
    if not Path(args.out).parent.exists():
        raise WorkbenchError(f"--out {args.out}: folder does not exist")
    points = grid(
        args.hardware,
        args.model,
        batches=_ints(args.batch, "batch"),
        seqs=_ints(args.seq or "2048", "seq"),
        dtypes=_dtypes(args.dtype),
        phases=_words(args.phase, "phase", ("prefill", "decode")),
    )
    if args.seq is None:
        points = _clamp_default_seq(points)
    try:
        s = run_sweep(
            points,
            args.out,
            workers=args.workers,
            scheduler=args.scheduler,
            limit=args.limit,
            connect_timeout_s=args.connect_timeout,
        )
    except SweepInterrupted as exc:
        print(
            f"workbench: sweep interrupted by {exc}; the points finished so far are in "
            f"{args.out}; rerun the same command to resume",
            file=sys.stderr,
        )
        return 128 + exc.signum
    failed = f", {s.failed} failed (reasons in the file; a rerun retries them)" if s.failed else ""
    gave_up = f", {s.gave_up} given up after {MAX_ATTEMPTS} failed attempts" if s.gave_up else ""
    print(
        f"{s.done} points written{failed}, {s.skipped} already done{gave_up}, "
        f"{s.total} in the sweep ({s.backend}) -> {args.out}"
    )
    return 0


def _clamp_default_seq(points: tuple[SweepPoint, ...]) -> tuple[SweepPoint, ...]:
    """The default 2048 clamped to each preset's context (decode needs one more position)."""
    out: list[SweepPoint] = []
    for p in points:
        cfg = PRESETS.get(p.model)
        if cfg is not None:
            room = cfg.max_seq - 1 if cfg.causal and p.phase == "decode" else cfg.max_seq
            if p.seq > room:
                note(
                    f"--seq defaults to {room} for {p.model} {p.phase} "
                    f"(its context is {cfg.max_seq} tokens)"
                )
                p = dataclasses.replace(p, seq=room)
        if p not in out:
            out.append(p)
    return tuple(out)
