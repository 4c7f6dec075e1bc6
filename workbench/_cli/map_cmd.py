"""``workbench map``: map a model onto a hardware profile and print the mapping sheet."""

from __future__ import annotations

import argparse
import json
from collections import OrderedDict

from workbench._cli.common import (
    add_mapping_command,
    footprint_of,
    fusion_rules_text,
    layer_pattern,
    map_from_args,
    stack_label,
    write_output,
)
from workbench._format import fmt_bytes, fmt_capacity, fmt_si, fmt_time
from workbench.cost.model import host_launch_s
from workbench.mapper import ModelMapping
from workbench.platform.fit import MemoryReserve, memory_reserve
from workbench.report import sheet

__all__ = ["register", "summary_text"]


def register(subs: argparse._SubParsersAction) -> None:
    """Add the ``map`` subcommand."""
    p = add_mapping_command(subs, "map", run)
    p.add_argument("--format", choices=("table", "json", "csv", "md", "html"), default="table")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--full", action="store_true", help="table: one row per kernel, not per layer")
    p.add_argument("--list-fusion-rules", action="store_true", help="list fusion rules and exit")


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench map``."""
    if args.list_fusion_rules:
        print(fusion_rules_text(), end="")
        return 0
    mapping = map_from_args(args)
    reserve = memory_reserve(getattr(args, "stack", None))
    render = {
        "json": lambda m: _json(m, reserve),
        "csv": sheet.to_csv,
        "md": sheet.to_markdown,
        "html": sheet.to_html,
        "table": lambda m: summary_text(
            m,
            full=args.full,
            stack=stack_label(args),
            reserve=reserve,
        ),
    }[args.format]
    write_output(render(mapping), args.output)
    return 0


def _json(m: ModelMapping, reserve: MemoryReserve) -> str:
    """The mapping document, its ``memory`` block with the stack's reserve and headroom."""
    doc = sheet.mapping_document(m)
    memory = doc["memory"]
    memory["reserve"] = reserve.as_dict(memory["capacity_bytes"], memory["memory_bytes"])
    return json.dumps(doc, indent=2)


def _launch_note(m: ModelMapping) -> str:
    """``; eager launches, 7.5 us of host time each`` when kernels are launched eagerly."""
    o = m.options
    if o.launch != "eager":
        return ""
    host = host_launch_s(m.hardware, o.launch_host_s)
    whose = "the profile's driver submission" if o.launch_host_s is None else "the stack's"
    return f"; eager launches, {fmt_time(host)} of host time each ({whose})"


def summary_text(
    m: ModelMapping,
    *,
    full: bool = False,
    stack: str | None = None,
    reserve: MemoryReserve | None = None,
) -> str:
    """A readable summary and sheet (identical layers grouped unless ``full``).

    ``stack``: the software stack's label (e.g. ``pytorch-compile (default)``), printed when given.
    ``reserve``: that stack's memory reserve, held back on the ``memory`` line (None: the
    default stack's).
    """
    hw = m.hardware
    unit = "tokens/s" if m.phase in ("prefill", "decode", "encode") else "items/s"
    lines = [
        f"model     {m.graph.name}",
        f"hardware  {hw.name} ({hw.vendor}); model format {m.dtype}, "
        f"{hw.offchip.name} {fmt_si(hw.offchip.bandwidth_bytes_per_s, 'B/s')} "
        f"({fmt_si(hw.offchip.sustained_bytes_per_s, 'B/s')} sustained)",
        *([f"stack     {stack}{_launch_note(m)}"] if stack else []),
        f"time      {fmt_time(m.time_s)} per step   {m.tokens_per_s:,.1f} {unit}",
        f"MFU       {m.mfu:.1%}   MBU {m.mbu:.1%}   HFU {m.hfu:.1%}   energy {m.energy_j:.3g} J   "
        f"power {fmt_si(m.power_w, 'W')}",
        f"MFU of    {m.mfu_peak_name}",
        "stall     "
        + "  ".join(f"{k} {v:.0%}" for k, v in m.stall_fraction_by_layer_type().items()),
        _memory_line(m, reserve or memory_reserve()),
        "",
    ]
    header = (
        f"{'kernel':<34} {'n':>3} {'engine':<6} {'dtype':<8} {'tile':<12} {'st':>2} "
        f"{'sram':>5} {'time':>9} {'share':>6}  bottleneck"
    )
    lines += [header, "-" * len(header)]
    groups: OrderedDict[str, list] = OrderedDict()
    for k in m.kernels:
        key = k.kernel.name if full else layer_pattern(k.kernel.name)
        groups.setdefault(key, []).append(k)
    for name, ks in groups.items():
        k = ks[0]
        t = k.tiling
        total = sum(x.cost.total_s for x in ks)
        sram = f"{t.sram_bytes / t.sram_capacity_bytes:.0%}" if t.sram_capacity_bytes else ""
        lines.append(
            f"{name[:34]:<34} {len(ks):>3} {k.kernel.engine[:6]:<6} {k.kernel.dtype:<8} "
            f"{t.shape if k.kernel.kind != 'collective' else '-':<12} {t.stages:>2} {sram:>5} "
            f"{fmt_time(k.cost.total_s):>9} {total / m.time_s:>6.1%}  {k.cost.bottleneck}"
        )
    lines.append("")
    lines.append(
        f"fusion saved {fmt_bytes(sum(k.kernel.saved_bytes for k in m.kernels))} "
        f"of off-chip traffic; {len(m.kernels)} kernels"
    )
    return "\n".join(lines) + "\n"


def _memory_line(m: ModelMapping, reserve: MemoryReserve) -> str:
    """``memory`` line: need per chip against capacity less the stack's reserve, and headroom.

    NOTE: a need over the bare capacity keeps the footprint's own reason (the widgets print
    the same); a need within it but over what the stack leaves says so, with the reserve.
    """
    fp = footprint_of(m)
    if not fp.fits:
        return f"memory    DOES NOT FIT: {fp.reason}"
    cap = fmt_capacity(fp.capacity_bytes, 4)
    need = f"{fmt_capacity(fp.memory_bytes, 4)} of {cap} {fp.memory_name} per chip"
    said = reserve.text(fp.capacity_bytes, fp.memory_name)
    left = fp.capacity_bytes - reserve.bytes_of(fp.capacity_bytes) - fp.memory_bytes
    if left < 0:
        return (
            f"memory    DOES NOT FIT after the stack's reserve: {need}; {said}; "
            f"{fmt_capacity(-left, 4)} over"
        )
    return f"memory    {need}; {said}; headroom {fmt_capacity(left, 4)}: fits"
