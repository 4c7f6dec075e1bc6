"""The review pack: one offline HTML page (and a Markdown twin) for a senior design review.

Two packs:

* **one run** (:func:`review_pack`): summary; the mapping sheet with tiling assumptions, fusion
  plan and expected bottleneck class; roofline; bandwidth lens (the mapping against the same
  model with every fusion rule off); MFU and stall fraction by layer type; owners; debug
  branches; validation matrix; rollback criteria;
* **a regression** (:func:`comparison_html`, rendered by :mod:`workbench.report._comparison`;
  data from :func:`workbench.review.pack.content.comparison_pack`): a static page (tables and inline
  SVG, no script) that fits a 1,366 px screen: title naming the change, decision, headline,
  material causes with their proving sheet rows, declared change, counterfactual attribution,
  kernel diff by family, per-stream timelines, temporal breakdown of measured runs, bandwidth
  lens, owners assigned, debug branches, validation matrix, rollback criteria, reproducer
  commands, provenance, the ownership roster in an appendix.

Every string that comes from outside (model, hardware and kernel names, file contents) is escaped:
through :mod:`workbench.report._html` in HTML (the one path), chart JSON with unicode escapes for
``<`` (see :func:`workbench.report.export.chart_html_fragment`), and :func:`md_escape` in the
Markdown twin.
:func:`write_pack` chooses the format by the suffix of ``--out`` and writes the twin beside it
with the other suffix, so neither overwrites the other.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from workbench._files import write_text_safely
from workbench._format import fmt_quantity, fmt_time
from workbench.errors import WorkbenchError
from workbench.mapper import ModelMapping, map_model
from workbench.options import FUSION_RULES
from workbench.report._cells import cell_text, md_escape
from workbench.report._comparison import comparison_html, comparison_markdown, write_comparison
from workbench.report._html import Html, each
from workbench.report.sheet import DECISION_COLUMNS, sheet_rows
from workbench.review.decision.verdict import TriageReport, triage
from workbench.review.pack._rows import check_rows, metric_unit
from workbench.review.records.store import RunRecord, record_from_mapping

__all__ = [
    "SHEET_COLUMNS",
    "comparison_html",
    "comparison_markdown",
    "md_escape",
    "review_markdown",
    "review_pack",
    "review_sections",
    "write_comparison",
    "write_pack",
    "write_review",
]

#: Mapping-sheet columns shown in the pack (identical layers grouped, display units).
SHEET_COLUMNS = (
    "kernel",
    "count",
    *DECISION_COLUMNS,
    "tile_source",
    "fusion",
    "time_each",
    "share_total",
    "bottleneck",
    "expected_bottleneck",
)


def _grouped_sheet(mapping: ModelMapping) -> list[dict[str, Any]]:
    """Sheet rows with identical layers merged (``layers.*.x``), times and shares for display.

    Kernels of one group share their mapping (same signature, cached schedule), so the first
    row stands for the group; ``share_total`` sums the group's share of the step time.
    """
    groups: dict[str, dict[str, Any]] = {}
    for row in sheet_rows(mapping):
        key = re.sub(r"\.(\d+)\.", ".*.", row["kernel"])
        g = groups.get(key)
        if g is None:
            g = groups[key] = {**row, "kernel": key, "count": 0, "share_sum": 0.0}
        g["count"] += 1
        g["share_sum"] += row["share"]
    for g in groups.values():
        g["time_each"] = fmt_time(g["time_s"])
        g["share_total"] = f"{g['share_sum']:.1%}"
        g["sram_use"] = f"{g['sram_use']:.0%}"
    return list(groups.values())


#: One-run pack columns that hold fractions (shown as %) or rates, beside ``*_s`` times.
_PERCENT_COLS = ("mfu", "hfu", "mbu", "stall_fraction")


def _cell(v: Any, col: str = "") -> str:
    """One table cell: times with units, utilisations and shares as %, rates per second."""
    if isinstance(v, float) and col in _PERCENT_COLS:
        return fmt_quantity(v, "%")
    if isinstance(v, float) and col == "tokens_per_s":
        return fmt_quantity(v, "tokens/s")
    return cell_text(v, col)


def _table(rows: list[dict[str, Any]], cols: tuple[str, ...] | list[str]) -> Html:
    head = each("<th>{}</th>", cols)
    body = each(
        "<tr>{}</tr>", (each("<td>{}</td>", (_cell(r.get(c), c) for c in cols)) for r in rows)
    )
    return Html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>\n").format(head, body)


def _md_table(rows: list[dict[str, Any]], cols: tuple[str, ...] | list[str]) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(md_escape(_cell(r.get(c), c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _figure(v: Any, metric: str) -> Any:
    """A metric's value in its unit (numbers only; anything else as it is)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_quantity(v, metric_unit(metric))
    return v


def _tables(mapping: ModelMapping, report: TriageReport) -> list[tuple[str, list, tuple]]:
    """``(heading, rows, columns)`` of every tabular section."""
    m = mapping
    summary = [
        {
            "model": m.graph.name,
            "hardware": m.hardware.name,
            "dtype": m.dtype,
            "time_s": m.time_s,
            "mfu": m.mfu,
            "tokens_per_s": m.tokens_per_s,
            "kernels": len(m.kernels),
        }
    ]
    stall, mfu_lt = m.stall_fraction_by_layer_type(), m.mfu_by_layer_type()
    times = m.time_by_layer_type()
    layer = [
        {
            "layer_type": k,
            "time_s": times.get(k, 0.0),
            "mfu": mfu_lt.get(k, 0.0),
            "stall_fraction": v,
        }
        for k, v in stall.items()
    ]
    owners = [
        {
            "role": r.role,
            "responsibility": r.responsibility,
            "closure_artifact": r.closure_artifact,
            "mechanisms": list(r.mechanisms),
        }
        for r in report.owners.roles
    ]
    branches = [dataclasses.asdict(n) for n in report.branches]
    matrix = []
    for row in report.matrix:
        for metric, value in row["candidate"].items():
            matrix.append(
                {
                    "slice": row["slice"],
                    "source": row["source"],
                    "metric": metric,
                    "baseline": _figure(row["baseline"].get(metric), metric),
                    "candidate": _figure(value, metric),
                }
            )
    checks = check_rows(report)
    return [
        ("Summary", summary, tuple(summary[0])),
        (
            "Mapping sheet: tiling assumptions, fusion plan, expected bottleneck class "
            "(identical layers grouped; every kernel is in `workbench map --format csv`)",
            _grouped_sheet(m),
            SHEET_COLUMNS,
        ),
        (
            "MFU and stall fraction by layer type",
            layer,
            ("layer_type", "time_s", "mfu", "stall_fraction"),
        ),
        ("Owners", owners, ("role", "responsibility", "closure_artifact", "mechanisms")),
        (
            "Debug branches",
            branches,
            ("id", "parent", "question", "status", "evidence", "next_action"),
        ),
        ("Validation matrix", matrix, ("slice", "source", "metric", "baseline", "candidate")),
        (
            "Rollback criteria",
            checks,
            ("metric", "baseline", "candidate", "regression", "flag_at", "rollback_at", "status"),
        ),
    ]


def _charts(mapping: ModelMapping) -> list[tuple[str, Html]]:
    from workbench.report.charts import bandwidth_lens, layer_type_bars, roofline
    from workbench.report.export import chart_html_fragment

    unfused = map_model(
        mapping.graph,
        mapping.hardware,
        dataclasses.replace(mapping.options, disabled_fusion=tuple(FUSION_RULES)),
    )
    return [
        ("Roofline", chart_html_fragment(roofline(mapping))),
        (
            "Bandwidth lens (every fusion rule off vs as mapped)",
            chart_html_fragment(bandwidth_lens([("fusion off", unfused), ("as mapped", mapping)])),
        ),
        (
            "MFU and stall fraction by layer type (chart)",
            chart_html_fragment(layer_type_bars(mapping)),
        ),
    ]


def review_sections(
    mapping: ModelMapping, record: RunRecord | None = None, *, simulate: bool = True
) -> tuple[list[tuple[str, list, tuple]], TriageReport]:
    """The pack's tables and the self-triage (baseline = candidate = this run) behind them."""
    rec = record or record_from_mapping(mapping)
    report = triage(rec, rec, simulate=simulate)
    return _tables(mapping, report), report


def review_pack(
    mapping: ModelMapping, record: RunRecord | None = None, *, simulate: bool = True
) -> str:
    """The review pack as one standalone offline HTML page (escaped; Vega inlined once)."""
    from workbench.report.export import offline_page

    tables, _ = review_sections(mapping, record, simulate=simulate)
    sections = [(h, _table(rows, cols)) for h, rows, cols in tables]
    charts = _charts(mapping)
    sections = sections[:2] + charts + sections[2:]
    title = f"Design review: {mapping.graph.name} on {mapping.hardware.name}"
    return offline_page(title, sections)


def review_markdown(
    mapping: ModelMapping, record: RunRecord | None = None, *, simulate: bool = True
) -> str:
    """The Markdown twin of :func:`review_pack` (charts are in the HTML page; text escaped)."""
    tables, _ = review_sections(mapping, record, simulate=simulate)
    title = md_escape(f"{mapping.graph.name} on {mapping.hardware.name}")
    out = [f"# Design review: {title}\n"]
    for heading, rows, cols in tables:
        out.append(f"## {heading}\n\n{_md_table(rows, cols)}")
    out.append("## Charts\n\nRoofline, bandwidth lens and layer-type bars: see the HTML page.\n")
    return "\n".join(out)


def write_pack(out: str | Path, html_text: str, md_text: str) -> tuple[Path, Path]:
    """Write the pack at ``out`` in the format its suffix names, and the twin beside it.

    ``pack.md`` gets the Markdown and ``pack.html`` the HTML; ``pack.html`` (or any other
    suffix) gets the HTML and ``pack.md`` the Markdown. The two paths always differ.

    Returns:
        ``(path written as asked, twin path)``.
    """
    path = Path(out)
    if not path.parent.is_dir():
        raise WorkbenchError(f"--out {out}: folder {path.parent} does not exist")
    if path.suffix.lower() in (".md", ".markdown"):
        pairs = ((path, md_text), (path.with_suffix(".html"), html_text))
    else:
        twin = path.with_suffix(".md") if path.suffix else path.with_name(path.name + ".md")
        pairs = ((path, html_text), (twin, md_text))
    for target, text in pairs:
        write_text_safely(target, text, what="--out")
    return pairs[0][0], pairs[1][0]


def write_review(
    mapping: ModelMapping, out: str | Path, record: RunRecord | None = None
) -> tuple[Path, Path]:
    """Write the one-run pack at ``out`` (format by suffix) and its twin; see :func:`write_pack`."""
    return write_pack(out, review_pack(mapping, record), review_markdown(mapping, record))


# --- the regression pack: rendered in workbench.report._comparison ---------------------------
