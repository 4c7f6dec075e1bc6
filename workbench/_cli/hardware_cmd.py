"""``workbench hardware list`` and ``workbench hardware show NAME|FILE``.

Figures are SI base units everywhere else; this module converts them for display only.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from workbench._cli.commands import add_command
from workbench.errors import WorkbenchError
from workbench.hw.loader import hardware_dirs, list_hardware, load_hardware
from workbench.hw.schema import Hardware

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``hardware`` command and its ``list`` / ``show`` subcommands."""
    parser = add_command(subparsers, "hardware")
    subs = parser.add_subparsers(dest="hardware_command", metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--hardware-path",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="extra folder of profile YAML files (repeatable)",
    )
    common.add_argument("--format", choices=("table", "json"), default="table")
    p_list = subs.add_parser("list", parents=[common], help="one line per profile")
    p_list.set_defaults(func=_list)
    p_show = subs.add_parser("show", parents=[common], help="every figure of one profile")
    p_show.add_argument("name", metavar="NAME|FILE", help="profile name or path to a .yaml file")
    p_show.set_defaults(func=_show)
    parser.set_defaults(func=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    raise WorkbenchError(f"{parser.prog}: choose an action: list or show (see --help)")


# --- display units -------------------------------------------------------------------------
def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def _bytes(n: float) -> str:
    """Binary units when ``n`` is a whole number of them (SRAM sizes), else decimal (DRAM)."""
    for power, binary, decimal in ((4, "TiB", "TB"), (3, "GiB", "GB"), (2, "MiB", "MB")):
        if n >= 1000**power:
            if n % 1024**power == 0:
                return f"{n / 1024**power:.4g} {binary}"
            return f"{n / 1000**power:.4g} {decimal}"
    return f"{n / 1024:.4g} KiB" if n >= 1024 else f"{n:.0f} B"


def _seconds(s: float) -> str:
    if s == 0:
        return "0 s"
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if s >= factor:
            return f"{s / factor:.4g} {unit}"
    return f"{s:.3g} s"


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return out


# --- list ----------------------------------------------------------------------------------
def _summary(hw: Hardware) -> dict[str, Any]:
    return {
        "name": hw.name,
        "vendor": hw.vendor,
        "bf16_peak_flops_per_s": hw.peak_flops("bf16"),
        "offchip_bandwidth_bytes_per_s": hw.offchip.bandwidth_bytes_per_s,
        "ridge_point_bf16_flop_per_byte": hw.ridge_point("bf16"),
    }


def _list(args: argparse.Namespace) -> int:
    names = list_hardware(args.hardware_path)
    rows = [_summary(load_hardware(n, args.hardware_path)) for n in names]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    table = [
        (
            r["name"],
            r["vendor"],
            f"{r['bf16_peak_flops_per_s'] / 1e12:.1f}" if r["bf16_peak_flops_per_s"] else "-",
            f"{r['offchip_bandwidth_bytes_per_s'] / 1e9:.1f}",
            f"{r['ridge_point_bf16_flop_per_byte']:.1f}" if r["bf16_peak_flops_per_s"] else "-",
        )
        for r in rows
    ]
    header = ("name", "vendor", "bf16 TFLOP/s", "off-chip GB/s", "ridge FLOP/B")
    print("\n".join(_table(table, header)))
    print(f"\nsearched: {', '.join(str(d) for d in hardware_dirs(args.hardware_path))}")
    return 0


# --- show ----------------------------------------------------------------------------------
def _section(title: str, lines: Iterable[str]) -> list[str]:
    return ["", title, *(f"  {line}" for line in lines)]


def _loopnest_line(hw: Hardware) -> list[str]:
    """The loop-nest model's dataflows and scratchpads, for a profile it has a split for."""
    from workbench.scheduling.loopnest import DATAFLOWS, SPAD_WORDS

    spad = SPAD_WORDS.get(hw.name)
    if spad is None:
        return []
    return [
        f"loop-nest model (lesson 13): dataflows {', '.join(DATAFLOWS)}; scratchpads per PE "
        f"{spad['I']} ifmap / {spad['W']} filter / {spad['O']} psum words"
    ]


def _engines(hw: Hardware) -> list[str]:
    me = hw.matrix_engine
    lines = [
        f"matrix engine: {me.cores} cores, native tile "
        f"{me.native_tile_m}x{me.native_tile_n}x{me.native_tile_k} (m x n x k), "
        f"clock {_si(me.clock_hz, 'Hz')}, dataflows {', '.join(me.dataflows)}",
        f"sustained efficiency {me.efficiency:.0%} of peak, K-step overhead "
        f"{_seconds(me.kstep_overhead_s)}, cluster of {me.cluster_size} core(s) sharing loads, "
        f"conv layout {me.preferred_layout}",
    ]
    lines += _loopnest_line(hw)
    if me.call_rates:
        rates = ", ".join(f"{n}: {_si(r, 'FLOP/s')}" for n, r in me.call_rates)
        lines.append(f"library call rate by side: {rates}")
    rows = [
        (d, _si(p, "FLOP/s"), _si(p / me.cores, "FLOP/s"), f"{hw.ridge_point(d):.1f}")
        for d, p in me.peak_flops_per_s.items()
    ]
    lines += _table(rows, ("dtype", "peak", "per core", "ridge FLOP/B"))
    vec = ", ".join(f"{d} {_si(p, 'FLOP/s')}" for d, p in hw.vector_unit.peak_flops_per_s.items())
    sfu = hw.vector_unit.special_function_ops_per_s
    sfu_text = f", special functions {_si(sfu, 'op/s')}" if sfu else ""
    return [*lines, f"vector unit: {vec}{sfu_text}"]


def _memory(hw: Hardware) -> list[str]:
    rows = [
        (
            m.name,
            m.kind,
            m.scope,
            _bytes(m.capacity_bytes),
            _si(m.bandwidth_bytes_per_s, "B/s"),
            f"{m.energy_pj_per_byte:g}",
            _seconds(m.latency_s),
        )
        for m in hw.memory
    ]
    header = ("level", "kind", "scope", "capacity", "bandwidth", "pJ/B", "latency")
    return _table(rows, header)


def _rest(hw: Hardware) -> list[str]:
    ic, ov, pw, rv, sw = hw.interconnect, hw.overheads, hw.power, hw.runtime_variance, hw.software
    out = _section(
        "interconnect",
        [
            f"{ic.links} links x {_si(ic.link_bandwidth_bytes_per_s, 'B/s')} per direction "
            f"= {_si(ic.bandwidth_bytes_per_s, 'B/s')}, topology {ic.topology}, "
            f"latency {_seconds(ic.latency_s)}, {ic.energy_pj_per_byte:g} pJ/B"
        ],
    )
    out += _section(
        "overheads",
        [
            f"kernel launch {_seconds(ov.kernel_launch_s)}, graph launch "
            f"{_seconds(ov.graph_launch_s)}, barrier {_seconds(ov.barrier_s)}"
            + (f", tile issue {_seconds(ov.tile_issue_s)}" if ov.tile_issue_s else "")
        ],
    )
    flop_energy = ", ".join(f"{d} {e:g}" for d, e in pw.energy_pj_per_flop.items())
    out += _section(
        "power", [f"TDP {pw.tdp_w:g} W, idle {pw.idle_w:g} W", f"pJ/FLOP: {flop_energy}"]
    )
    out += _section(
        "runtime variance",
        [
            f"launch jitter {_seconds(rv.launch_jitter_s)}, slow step p="
            f"{rv.slow_step_probability:g} x{rv.slow_step_factor:g}"
        ],
    )
    out += _section(
        "software",
        [
            f"maturity {sw.maturity:g}, fused attention {sw.fused_attention}, "
            f"graph capture {sw.graph_capture}",
            *([sw.notes] if sw.notes else []),
        ],
    )
    out += _section("sources", [f"- {s}" for s in hw.sources])
    if hw.assumptions:
        out += _section("assumptions", [f"- {a}" for a in hw.assumptions])
    return out


def render(hw: Hardware) -> str:
    """The readable multi-section table ``workbench hardware show`` prints."""
    head = [f"{hw.name} ({hw.vendor})", *([hw.description] if hw.description else [])]
    lines = head + _section("compute", _engines(hw)) + _section("memory", _memory(hw))
    return "\n".join(lines + _rest(hw))


def _show(args: argparse.Namespace) -> int:
    hw = load_hardware(args.name, args.hardware_path)
    if args.format == "json":
        print(json.dumps(hw.model_dump(mode="json"), indent=2))
    else:
        print(render(hw))
    return 0
