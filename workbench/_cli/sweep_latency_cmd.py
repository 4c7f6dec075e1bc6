"""``workbench sweep-latency``: serving latency against load for a model on a platform."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from workbench._cli.argtypes import count, number
from workbench._cli.commands import add_command
from workbench._cli.common import (
    add_options_args,
    check_figures,
    hardware_from_args,
    options_from_args,
    write_output,
)
from workbench.errors import WorkbenchError
from workbench.models import list_models
from workbench.models.config import MAX_SYSTEM_CHIPS
from workbench.models.presets import PRESETS
from workbench.serving import (
    LATENCY_FIELDS,
    UNSTABLE_NOTE,
    Knee,
    LoadPoint,
    Workload,
    batcher_grid,
    find_knee,
    load_builtin_trace,
    load_trace,
    mapper_batch_time,
    mapper_step_time,
    poisson_arrivals,
    saturation_rate,
    sweep_image_load,
    sweep_load,
)

__all__ = ["parse_rates", "register"]

_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.2)


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``sweep-latency`` subcommand."""
    p = add_command(subs, "sweep-latency", run)
    p.add_argument("--model", default="llama2-7b", help="preset name (default llama2-7b)")
    p.add_argument("--hardware", default="h100-sxm", help="hardware profile or YAML file")
    p.add_argument("--hardware-path", action="append", default=[], metavar="DIR")
    p.add_argument(
        "--trace",
        default="production-chat",
        help="production-chat, synthetic-fixed, poisson or a trace FILE",
    )
    p.add_argument("--rates", help="offered rates, requests/s, comma-separated (default: auto)")
    p.add_argument("--batching", choices=("continuous", "static"), default="continuous")
    p.add_argument(
        "--max-batch", type=count(1, 65_536), default=32, help="largest batch (default 32)"
    )
    p.add_argument(
        "--sla-ms", type=number(0, 1e9, open_lo=True), default=None,
        help="p99 SLA, ms (default 20000 for LLM end-to-end, 100 for image models)",
    )  # fmt: skip
    p.add_argument("--sla-metric", choices=("e2e", "ttft", "tpot"), default="e2e")
    p.add_argument("--seed", type=count(0, 2**32 - 1), default=0)
    p.add_argument(
        "--requests", type=count(1, 10_000_000), default=None,
        help="requests per load level (default 2000 for LLMs, 20000 images)",
    )  # fmt: skip
    p.add_argument(
        "--tensor-parallel", type=count(1, MAX_SYSTEM_CHIPS), default=1, help="chips per replica"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--chart", metavar="FILE", help="write the chart (.html, .png, .svg)")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")
    add_options_args(p)


def parse_rates(text: str) -> list[float]:
    """Parse ``"1,2.5,8"`` into positive rates, or raise a one-line WorkbenchError."""
    try:
        rates = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise WorkbenchError(f"--rates {text!r}: expected comma-separated numbers") from None
    if not rates or any(not r > 0 for r in rates):
        raise WorkbenchError(f"--rates {text!r}: rates must be positive requests/s")
    return rates


def _workload(trace: str, n: int, seed: int) -> Workload:
    if trace == "poisson":
        return poisson_arrivals(1.0, n, seed=seed)
    if trace in ("production-chat", "synthetic-fixed"):
        return load_builtin_trace(trace).head(n)
    if not Path(trace).is_file():
        raise WorkbenchError(f"--trace {trace}: not a built-in trace or an existing file")
    return load_trace(trace).head(n)


def _check(args: argparse.Namespace) -> None:
    if args.model not in list_models():
        raise WorkbenchError(f"--model {args.model!r}: unknown (known: {', '.join(list_models())})")
    llm = args.model in PRESETS and PRESETS[args.model].causal
    if args.sla_ms is None:
        args.sla_ms = 20000.0 if llm else 100.0
    if args.requests is None:
        args.requests = 2000 if llm else 20000
    for name in ("max_batch", "requests", "tensor_parallel"):
        if getattr(args, name) < 1:
            raise WorkbenchError(f"--{name.replace('_', '-')} must be >= 1")
    if not args.sla_ms > 0:
        raise WorkbenchError(f"--sla-ms must be positive, got {args.sla_ms}")
    if args.chart and Path(args.chart).suffix not in (".html", ".png", ".svg"):
        raise WorkbenchError(f"--chart {args.chart}: use .html, .png or .svg")


def _sweep(args: argparse.Namespace) -> tuple[tuple[LoadPoint, ...], str]:
    hw = hardware_from_args(args)
    opts = options_from_args(args)
    work = _workload(args.trace, args.requests, args.seed)
    llm = args.model in PRESETS and PRESETS[args.model].causal
    if llm:
        cap = PRESETS[args.model].max_seq
        table = mapper_step_time(
            args.model,
            hw,
            opts,
            **batcher_grid(args.max_batch, cap),
            tensor_parallel=args.tensor_parallel,
        )
        auto = saturation_rate(table, work, args.max_batch)
        rates = parse_rates(args.rates) if args.rates else [auto * f for f in _FRACTIONS]
        points = sweep_load(
            rates,
            work,
            table,
            batching=args.batching,
            max_batch=args.max_batch,
            variance=hw.runtime_variance,
            seed=args.seed,
        )
        return points, "token"
    if args.sla_metric != "e2e":
        raise WorkbenchError(f"--sla-metric {args.sla_metric}: image models have e2e only")
    bt = mapper_batch_time(
        args.model, hw, opts, sorted({1, max(1, args.max_batch // 4), args.max_batch})
    )
    auto = args.max_batch / bt(args.max_batch)
    rates = parse_rates(args.rates) if args.rates else [auto * f for f in _FRACTIONS]
    points = sweep_image_load(
        rates, work, bt, max_batch=args.max_batch, variance=hw.runtime_variance, seed=args.seed
    )
    return points, "image"


def _units(unit: str) -> tuple[str, str]:
    """``(request unit, throughput unit)`` as printed: req/s and tok/s, or img/s twice."""
    return ("req/s", "tok/s") if unit == "token" else ("img/s", "img/s")


def _point_dict(p: LoadPoint, unit: str, knee: Knee, requests: int) -> dict[str, object]:
    """One load level as JSON; an unstable level's latencies move under ``replay_latency_s``.

    NOTE: an unstable level (served below offered) has no steady latency, so its latency
    fields are null and what this replay of ``requests`` requests gave sits apart, with a note.
    """
    d = p.to_dict()
    if not p.stable:
        d["replay_latency_s"] = {f: d[f] for f in LATENCY_FIELDS}
        d["replay_requests"] = requests
        d["unstable_note"] = UNSTABLE_NOTE
        d.update(dict.fromkeys(LATENCY_FIELDS))
    d["throughput_per_s"] = p.output_tokens_per_s if unit == "token" else p.achieved_rate_per_s
    d["throughput_unit"] = f"{unit}s/s"
    d["status"] = knee.status(p)
    d["ok"] = d["status"] == "ok"
    return d


def _knee_dict(k: Knee) -> dict[str, object]:
    return {
        "metric": k.metric,
        "sla_s": k.sla_s,
        "throughput_tolerance": k.tolerance,
        "last_ok_rate_per_s": k.last_ok.offered_rate_per_s if k.last_ok else None,
        "throughput_at_sla_per_s": k.last_ok.sustained_rate_per_s if k.last_ok else None,
        "first_break_rate_per_s": k.first_break.offered_rate_per_s if k.first_break else None,
        "first_break_status": k.status(k.first_break) if k.first_break else None,
    }


def _metric_words(metric: str) -> str:
    """``"p99_e2e_s"`` -> ``"p99 e2e"``."""
    return metric.removesuffix("_s").replace("_", " ")


def _status_text(p: LoadPoint, knee: Knee, req: str) -> str:
    status = knee.status(p)
    if status == "ok":
        return "OK"
    if not p.stable:
        return (
            f"saturated (achieved {p.sustained_rate_per_s:.1f} {req} of offered "
            f"{p.window_arrival_rate_per_s:.1f} {req}): unstable, the queue grows"
        )
    value = getattr(p, knee.metric)
    return f"SLA broken ({_metric_words(knee.metric)} {value * 1e3:.1f} ms)"


def _table(points: tuple[LoadPoint, ...], knee: Knee, unit: str, header: str) -> str:
    req, thr_unit = _units(unit)
    tol = f"{(knee.tolerance or 0) * 100:g}%"
    lines = [
        header,
        f"OK: {_metric_words(knee.metric)} <= {knee.sla_s * 1e3:g} ms and the replica keeps up "
        f"(served within {tol} of arrived);",
        "arrived and served are counted between the 10th and 90th percentile arrival "
        "(the drain after the last arrival is left out)",
        f"{'load':>9} {'arrived':>9} {'served':>9} {'output':>10} {'TTFT p99':>9} "
        f"{'TPOT p99':>9} {'e2e p50':>9} {'e2e p95':>9} {'e2e p99':>9}  status",
        f"{req:>9} {req:>9} {req:>9} {thr_unit:>10} {'ms':>9} {'ms':>9} {'ms':>9} {'ms':>9} "
        f"{'ms':>9}",
    ]

    def ms(p: LoadPoint, field: str) -> str:
        if getattr(p, field) is None:
            return f"{'-':>9}"
        v = p.steady(field)  # NOTE: an unstable level has no steady latency to print
        return f"{v * 1e3:9.1f}" if v is not None else f"{'grows':>9}"

    for p in points:
        thr = p.output_tokens_per_s if unit == "token" else p.sustained_rate_per_s
        lat = " ".join(
            ms(p, f) for f in ("p99_ttft_s", "p99_tpot_s", "p50_e2e_s", "p95_e2e_s", "p99_e2e_s")
        )
        lines.append(
            f"{p.offered_rate_per_s:9.3f} {p.window_arrival_rate_per_s:9.3f} "
            f"{p.sustained_rate_per_s:9.3f} {thr or 0:10.1f} {lat}  {_status_text(p, knee, req)}"
        )
    if any(not p.stable for p in points):
        lines.append(f"grows: {UNSTABLE_NOTE}")
    if knee.last_ok is None:
        lines.append("knee: none; the lowest load is already not OK")
    else:
        ok = knee.last_ok
        thr = ok.output_tokens_per_s if unit == "token" else ok.sustained_rate_per_s
        lines.append(
            f"knee: {ok.offered_rate_per_s:.3f} {req} (served {ok.sustained_rate_per_s:.3f} "
            f"{req}, {thr or 0:.1f} {thr_unit}) is the highest load that is OK"
            + ("" if knee.first_break else "; every swept load is OK")
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench sweep-latency``."""
    _check(args)
    points, unit = _sweep(args)
    metric = f"p99_{args.sla_metric}_s"
    sla_s = args.sla_ms / 1e3
    knee = find_knee(points, sla_s, metric)
    hw_name = hardware_from_args(args).name
    for p in points:  # NOTE: the shared result check: nothing NaN, infinite or negative is shown
        figures = {k: v for k, v in dataclasses.asdict(p).items() if isinstance(v, int | float)}
        check_figures(figures, f"sweep-latency {args.model} at {p.offered_rate_per_s:g}/s")
    if args.chart:
        from workbench.report.export import save_chart
        from workbench.report.sla_charts import latency_throughput_chart

        title = f"{args.model} on {hw_name} ({args.trace})"
        save_chart(
            latency_throughput_chart(points, sla_s, metric=args.sla_metric, title=title), args.chart
        )
    if args.format == "json":
        doc = {
            "schema_version": 1,
            "model": args.model,
            "hardware": hw_name,
            "trace": args.trace,
            "batching": args.batching if unit == "token" else "dynamic",
            "knee": _knee_dict(knee),
            "points": [_point_dict(p, unit, knee, args.requests) for p in points],
        }
        write_output(json.dumps(doc, indent=2), args.output)
    else:
        header = (
            f"{args.model} on {hw_name}, trace {args.trace}, {args.requests} requests per load "
            f"level, {len(points)} levels"
        )
        write_output(_table(points, knee, unit, header), args.output)
    return 0
