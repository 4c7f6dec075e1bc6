"""The mapping sheet: one row per kernel, the primary artifact of a mapping.

Rows are plain dicts (SI units: bytes, seconds, FLOPs) so they serialise to JSON unchanged; the
DataFrame, CSV, Markdown and HTML views are built from them. The JSON document
(:func:`mapping_document`) is a stable contract documented in the README.
"""

from __future__ import annotations

import json
import math
from typing import Any

from workbench import __version__
from workbench._format import fmt_capacity
from workbench.hw.loader import hardware_hash
from workbench.mapper import STEP_EVIDENCE, KernelMapping, ModelMapping
from workbench.models.footprint import Footprint, graph_footprint
from workbench.report._html import Html, each, escape

__all__ = [
    "CSV_MEMORY_COLUMNS",
    "DECISION_COLUMNS",
    "SHEET_COLUMNS",
    "mapping_document",
    "memory_text",
    "sheet_frame",
    "sheet_rows",
    "to_csv",
    "to_html",
    "to_json",
    "to_markdown",
]

#: Columns of the sheet, in order (``bytes_<level>`` columns follow ``flops``, one per level).
SHEET_COLUMNS = (
    "kernel", "ops", "layer_type", "kind", "engine", "dtype", "layout", "tile", "stages",
    "split_k", "dataflow", "tiles", "waves", "wave_efficiency", "padded_flops", "passes",
    "barriers", "sram_bytes", "sram_capacity_bytes", "sram_use", "fusion",
    "saved_bytes", "flops", "model_flops", "bytes_offchip", "intensity", "mbu", "time_s", "share",
    "compute_s", "stall_s", "bottleneck", "expected_bottleneck", "engine_reason", "notes",
    "tile_source",
)  # fmt: skip


#: Columns the CSV adds to every row: the step's memory need and one chip's capacity (bytes), and
#: whether it fits (the JSON document carries them once, under ``memory``).
CSV_MEMORY_COLUMNS = ("memory_bytes", "memory_capacity_bytes", "memory_fits")


def _row(
    k: KernelMapping, total_s: float, levels: tuple[str, ...], offchip: str, sustained: float
) -> dict[str, Any]:
    kern, t, c = k.kernel, k.tiling, k.cost
    off = c.bytes_at(offchip)
    row: dict[str, Any] = {
        "kernel": kern.name,
        "ops": list(kern.ops),
        "layer_type": kern.layer_type,
        "kind": kern.kind,
        "engine": kern.engine,
        "dtype": kern.dtype,
        "layout": kern.layout,
        "tile": t.shape if kern.kind != "collective" else "",
        "stages": t.stages,
        "split_k": t.split_k,
        "dataflow": t.dataflow,
        "tiles": t.tiles,
        "waves": t.waves,
        "wave_efficiency": t.wave_efficiency,
        "padded_flops": t.padded_flops,
        "passes": t.passes,
        "barriers": kern.barriers + t.barriers,
        "sram_bytes": t.sram_bytes,
        "sram_capacity_bytes": t.sram_capacity_bytes,
        "sram_use": t.sram_bytes / t.sram_capacity_bytes if t.sram_capacity_bytes else 0.0,
        "fusion": list(kern.fusion),
        "saved_bytes": kern.saved_bytes,
        "flops": kern.flops,
        "model_flops": kern.matmul_flops,
        "bytes_offchip": off,
        "intensity": kern.flops / off if off else None,
        "mbu": off / (c.total_s * sustained) if c.total_s else 0.0,
        "time_s": c.total_s,
        "share": c.total_s / total_s if total_s else 0.0,
        "compute_s": c.compute_s,
        "stall_s": c.stall_s,
        "bottleneck": c.bottleneck,
        "expected_bottleneck": c.evidence,
        "engine_reason": kern.engine_reason,
        "notes": list(kern.notes),
        "tile_source": t.source,
    }
    for lvl in levels:
        row[f"bytes_{lvl}"] = c.bytes_at(lvl)
    return row


def sheet_rows(mapping: ModelMapping) -> list[dict[str, Any]]:
    """One dict per kernel with the sheet's columns (SI units)."""
    levels = tuple(m.name for m in mapping.hardware.memory if m.kind != "register")
    off = mapping.hardware.offchip
    bw = off.sustained_bytes_per_s
    rows = [_row(k, mapping.time_s, levels, off.name, bw) for k in mapping.kernels]
    if mapping.step_overhead_s > 0:
        rows.append(_step_row(mapping, levels))
    return rows


def _step_row(mapping: ModelMapping, levels: tuple[str, ...]) -> dict[str, Any]:
    """The serving step's runtime overhead as its own row (no kernel, no bytes)."""
    step = mapping.step_overhead_s
    row: dict[str, Any] = dict.fromkeys(SHEET_COLUMNS, 0)
    row.update({
        "kernel": "runtime.step", "ops": [], "layer_type": "runtime", "kind": "runtime",
        "engine": "host", "dtype": "", "layout": "", "tile": "", "dataflow": "",
        "fusion": [], "intensity": None, "time_s": step,
        "share": step / mapping.time_s if mapping.time_s else 0.0,
        "bottleneck": "overhead", "expected_bottleneck": STEP_EVIDENCE,
        "engine_reason": "host-side work of the serving step", "notes": [],
        "tile_source": "profile",
    })  # fmt: skip
    for lvl in levels:
        row[f"bytes_{lvl}"] = 0.0
    return row


def sheet_frame(mapping: ModelMapping):  # -> pandas.DataFrame
    """The sheet as a pandas DataFrame (for notebooks)."""
    import pandas as pd

    return pd.DataFrame(sheet_rows(mapping))


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def mapping_document(mapping: ModelMapping) -> dict[str, Any]:
    """The JSON contract of ``workbench map --format json`` (see the README)."""
    hw = mapping.hardware
    meta = dict(mapping.graph.meta)
    totals = {
        "time_s": mapping.time_s,
        "mfu": mapping.mfu,
        "mbu": mapping.mbu,
        "hfu": mapping.hfu,
        "step_overhead_s": mapping.step_overhead_s,
        "tokens_per_s": mapping.tokens_per_s,
        "items_per_step": mapping.items_per_step,
        "model_flops": mapping.model_flops,
        "energy_j": mapping.energy_j,
        "power_w": mapping.power_w,
        "perf_per_watt": mapping.perf_per_watt,
        "stall_fraction_by_layer_type": mapping.stall_fraction_by_layer_type(),
        "time_by_layer_type": {k: v for k, v in mapping.time_by_layer_type().items() if v > 0},
        "mfu_by_layer_type": mapping.mfu_by_layer_type(),
        "bottleneck_counts": mapping.bottleneck_counts(),
        "kernels": len(mapping.kernels),
    }
    rows = [{k: _clean(v) for k, v in r.items()} for r in sheet_rows(mapping)]
    return {
        "schema_version": 1,
        "workbench_version": __version__,
        "model": meta,
        "graph": mapping.graph.name,
        "hardware": {
            "name": hw.name,
            "hash": hardware_hash(hw),
            "dtype_peak_flops_per_s": mapping.peak_flops,
            "dtype_peak_source": mapping.mfu_peak_name,
            "offchip_sustained_bytes_per_s": hw.offchip.sustained_bytes_per_s,
            "dtype": mapping.dtype,
        },
        "options": mapping.options.as_tags(),
        "totals": totals,
        "memory": _footprint(mapping).as_dict(),
        "kernels": rows,
    }


def _footprint(mapping: ModelMapping) -> Footprint:
    """Weights + KV cache + activations of one chip against its off-chip capacity."""
    return graph_footprint(mapping.graph, mapping.hardware, mapping.options.weight_dtype)


def memory_text(mapping: ModelMapping) -> str:
    """One sentence: whether the step fits one chip's off-chip memory, and why not."""
    fp = _footprint(mapping)
    if fp.fits:
        need = f"{fmt_capacity(fp.memory_bytes, 4)} of {fmt_capacity(fp.capacity_bytes, 4)}"
        return f"memory: {need} per chip (fits)"
    return f"memory: does not fit: {fp.reason}"


def to_json(mapping: ModelMapping) -> str:
    """The mapping document as indented JSON text."""
    return json.dumps(mapping_document(mapping), indent=2)


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def to_csv(mapping: ModelMapping) -> str:
    """The sheet as CSV text (lists joined with ``+``), each row with the step's memory fit."""
    import csv
    import io

    # NOTE: the step's memory fit belongs to the whole mapping, not to one kernel; CSV has no
    # place for a document-level field, so every row repeats it (CSV_MEMORY_COLUMNS).
    fp = _footprint(mapping)
    memory = {
        "memory_bytes": fp.memory_bytes,
        "memory_capacity_bytes": fp.capacity_bytes,
        "memory_fits": fp.fits,
    }
    rows = [{**r, **memory} for r in sheet_rows(mapping)]
    buf = io.StringIO()
    names = list(rows[0]) if rows else [*SHEET_COLUMNS, *CSV_MEMORY_COLUMNS]
    writer = csv.DictWriter(buf, fieldnames=names)
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _cell(v) for k, v in r.items()})
    return buf.getvalue()


#: A kernel's mapping decisions as the shorter tables (Markdown, the review pack) show them.
DECISION_COLUMNS = ("layer_type", "engine", "dtype", "tile", "stages", "sram_use")
_MD_COLS = ("kernel", *DECISION_COLUMNS, "fusion", "time_s", "share", "bottleneck")


def to_markdown(mapping: ModelMapping, columns: tuple[str, ...] = _MD_COLS) -> str:
    """The sheet as a Markdown table (a subset of the columns), then the memory line."""
    rows = sheet_rows(mapping)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = (escape(_cell(r[c]), quote=False).replace("|", "\\|") for c in columns)
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", escape(memory_text(mapping), quote=False)]
    return "\n".join(lines) + "\n"


def to_html(mapping: ModelMapping) -> str:
    """The sheet as a standalone HTML page (no scripts, no external assets; text escaped)."""
    rows = sheet_rows(mapping)
    cols = list(rows[0]) if rows else list(SHEET_COLUMNS)
    head = each("<th>{}</th>", cols)
    body = each("<tr>{}</tr>", (each("<td>{}</td>", (_cell(r[c]) for c in cols)) for r in rows))
    return Html(
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<title>{title}</title><style>body{{font-family:sans-serif}}table{{border-collapse:"
        "collapse;font-size:12px}}td,th{{border:1px solid #ccc;padding:2px 4px}}</style></head>"
        "<body><h1>{title}</h1><p>{memory}</p><table><thead><tr>{head}</tr></thead>"
        "<tbody>{body}</tbody></table></body></html>\n"
    ).format(
        title=f"{mapping.graph.name} on {mapping.hardware.name}",
        memory=memory_text(mapping),
        head=head,
        body=body,
    )
