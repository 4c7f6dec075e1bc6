"""``workbench compare``: the workload fit matrix (models x platforms) and a shortlist."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench._cli.argtypes import count, number
from workbench._cli.commands import add_command
from workbench._cli.common import (
    add_options_args,
    check_figures,
    options_from_args,
    write_output,
)
from workbench.errors import WorkbenchError
from workbench.hw.loader import load_hardware
from workbench.models import list_models
from workbench.models.config import MAX_SYSTEM_CHIPS
from workbench.models.presets import PRESETS
from workbench.platform.compare import PlatformRow, compare_platforms, shortlist
from workbench.platform.multichip import INTERCONNECT_BOUND_SHARE, ParallelPlan

__all__ = ["plan_from_args", "register"]

RANK_RULE = (
    "shortlist: fits and meets the SLA at some swept load; ranked by throughput at the SLA per "
    "chip x (1 - risk), ties to lower energy per item; risk = (1 - maturity) + 0.15 [no fused "
    "attention] + 0.10 [no graph capture] + 0.02 x assumptions, clipped to 0..1"
)


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``compare`` subcommand."""
    p = add_command(subs, "compare", run)
    p.add_argument("--model", action="append", default=[], help="preset name (repeatable)")
    p.add_argument("--hardware", nargs="+", default=["h100-sxm"], help="profiles to compare")
    p.add_argument("--hardware-path", action="append", default=[], metavar="DIR")
    p.add_argument(
        "--chips",
        type=count(1, MAX_SYSTEM_CHIPS),
        default=None,
        help="chips per platform (decoders: tensor parallel; others: data parallel)",
    )
    p.add_argument(
        "--tensor-parallel", type=count(1, MAX_SYSTEM_CHIPS), default=None, help="chips per replica"
    )
    p.add_argument(
        "--data-parallel", type=count(1, MAX_SYSTEM_CHIPS), default=None, help="replicas"
    )
    p.add_argument(
        "--sla-ms",
        type=number(0, 1e9, open_lo=True),
        default=20000.0,
        help="p99 SLA, ms (default 20000)",
    )
    p.add_argument("--sla-metric", choices=("e2e", "ttft", "tpot"), default="e2e")
    p.add_argument(
        "--trace",
        default="production-chat",
        choices=("production-chat", "synthetic-fixed", "poisson"),
    )
    p.add_argument("--max-batch", type=count(1, 65_536), default=16)
    p.add_argument(
        "--requests", type=count(1, 10_000_000), default=1500, help="requests per load level"
    )
    p.add_argument("--seed", type=count(0, 2**32 - 1), default=0)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--chart", metavar="FILE", help="platform trade curve (.html/.png/.svg)")
    p.add_argument("--dashboard", metavar="FILE", help="perf-per-watt dashboard (.html/.png/.svg)")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")
    add_options_args(p)


def plan_from_args(args: argparse.Namespace, model: str) -> ParallelPlan:
    """The parallel plan the flags describe for ``model`` (see ``--chips``)."""
    for name in ("chips", "tensor_parallel", "data_parallel", "max_batch", "requests"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise WorkbenchError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    tp, dp = args.tensor_parallel, args.data_parallel
    decoder = model in PRESETS and PRESETS[model].causal
    if tp is None and dp is None:
        chips = args.chips or 1
        return ParallelPlan(
            tensor_parallel=chips if decoder else 1, data_parallel=1 if decoder else chips
        )
    plan = ParallelPlan(tensor_parallel=tp or 1, data_parallel=dp or 1)
    if args.chips is not None and args.chips != plan.chips:
        raise WorkbenchError(
            f"--chips {args.chips} != --tensor-parallel x --data-parallel = {plan.chips}"
        )
    if plan.tensor_parallel > 1 and not decoder:
        raise WorkbenchError(f"--tensor-parallel: only decoder presets split, not {model!r}")
    return plan


def _table(rows: tuple[PlatformRow, ...], best: tuple[PlatformRow, ...]) -> str:
    head = (
        f"{'model':<11} {'hardware':<10} {'plan':<7} {'fits':<4} {'GB/chip':>11} {'largest':<11} "
        f"{'step ms':>8} {'MFU':>5} {'coll':>5} {'req/s@SLA':>9} {'items/s@SLA':>11} "
        f"{'J/item':>8} {'item/J':>8} {'risk':>5}"
    )
    lines = [head]
    for r in rows:
        items = r.tokens_per_s_at_sla if r.unit == "token" else r.throughput_at_sla
        mem = f"{r.memory_bytes / 1e9:.0f}/{r.capacity_bytes / 1e9:.0f}"
        lines.append(
            f"{r.model:<11} {r.hardware:<10} {r.plan:<7} {'yes' if r.fits else 'NO':<4} "
            f"{mem:>11} {r.dominant:<11} {r.step_s * 1e3:8.3f} {r.mfu:5.2f} "
            f"{r.collective_share:5.0%} {r.throughput_at_sla:9.2f} {items or 0:11.1f} "
            f"{r.energy_per_item_j:8.4f} {r.perf_per_watt:8.2f} {r.risk:5.2f}"
        )
    for r in rows:
        if r.collective_share > INTERCONNECT_BOUND_SHARE:
            lines.append(
                f"note: {r.model} on {r.hardware} ({r.plan}) is interconnect-bound "
                f"({r.collective_share:.0%} of the decode step in collectives)"
            )
    lines.append("")
    lines.append(
        "shortlist: "
        + (", ".join(f"{r.hardware} ({r.model}, {r.plan})" for r in best) or "none meets the SLA")
    )
    lines.append(RANK_RULE)
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench compare``."""
    models = args.model or ["llama2-7b"]
    for m in models:
        if m not in list_models():
            raise WorkbenchError(f"--model {m!r}: unknown (known: {', '.join(list_models())})")
    if not args.sla_ms > 0:
        raise WorkbenchError(f"--sla-ms must be positive, got {args.sla_ms}")
    for f in (args.chart, args.dashboard):
        if f and Path(f).suffix not in (".html", ".png", ".svg"):
            raise WorkbenchError(f"{f}: chart files must end in .html, .png or .svg")
    dirs = [Path(d) for d in args.hardware_path] or None
    hws = [load_hardware(h, search_path=dirs) for h in args.hardware]
    opts = options_from_args(argparse.Namespace(**{**vars(args), "chips": 1}))
    rows: list[PlatformRow] = []
    for m in models:
        chips = plan_from_args(args, m).chips
        for hw in hws:
            if chips > 1 and not hw.interconnect.bandwidth_bytes_per_s > 0:
                raise WorkbenchError(
                    f"--chips {chips}: {hw.name} has no chip-to-chip links "
                    f"(interconnect.links = {hw.interconnect.links}); it runs on one chip only"
                )
        rows += compare_platforms(
            [m],
            hws,
            plan=plan_from_args(args, m),
            options=opts,
            trace=args.trace,
            sla_s=args.sla_ms / 1e3,
            max_batch=args.max_batch,
            n_requests=args.requests,
            seed=args.seed,
            sla_metric=f"p99_{args.sla_metric}_s",
        )
    for r in rows:
        figures = {k: v for k, v in r.to_dict().items() if isinstance(v, int | float)}
        check_figures(figures, f"compare {r.model} on {r.hardware} ({r.plan})")
    best = shortlist(rows)
    if args.chart or args.dashboard:
        from workbench.report.export import save_chart
        from workbench.report.sla_charts import perf_per_watt_dashboard, platform_trade_chart

        if args.chart:
            save_chart(platform_trade_chart(rows), args.chart)
        if args.dashboard:
            save_chart(perf_per_watt_dashboard(rows), args.dashboard)
    if args.format == "json":
        doc = {
            "schema_version": 1,
            "sla_s": args.sla_ms / 1e3,
            "rank_rule": RANK_RULE,
            "rows": [r.to_dict() for r in rows],
            "shortlist": [{"model": r.model, "hardware": r.hardware, "plan": r.plan} for r in best],
        }
        write_output(json.dumps(doc, indent=2), args.output)
    else:
        write_output(_table(tuple(rows), best), args.output)
    return 0
