"""The regression review pack rendered: one offline HTML page and its Markdown twin.

The data is :class:`workbench.review.pack.content.ComparisonPack`. The page fits a 1,366 px screen
(tables scroll inside their own box, long names are shortened with the full name in a
``title``), prints (sections avoid page breaks, charts are static SVG), and loads nothing from
the network. Timelines are drawn per stream (:mod:`._timeline_svg`: an Altair chart rendered to
SVG by vl-convert): the layer before and after, and for measured runs the median iteration of
each trace, with an ``overlap`` lane; measured runs also get the temporal breakdown (idle /
compute / non-compute).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.report._cells import html_table, md_escape, md_table
from workbench.report._html import Html, trusted
from workbench.report._lens_static import lens_rows, lens_svg
from workbench.report._timeline_svg import breakdown_rows, iteration_lanes, lanes_svg, layer_lanes

__all__ = ["PAGE_CSS", "comparison_html", "comparison_markdown", "extra_tables"]

#: Layout for a 1,366 px screen and for print.
PAGE_CSS = (
    "body{font-family:sans-serif;max-width:1280px;margin:1em auto;padding:0 16px;"
    "box-sizing:border-box}"
    "h1{font-size:1.35em;overflow-wrap:anywhere}h2{font-size:1.1em}"
    ".wb-table{max-width:100%;overflow-x:auto}"
    "section{margin-bottom:1.6em}table{border-collapse:collapse;font-size:12px}"
    "td,th{border:1px solid #ccc;padding:2px 4px;vertical-align:top;text-align:left;"
    "max-width:34em;overflow-wrap:anywhere}"
    ".wb-chart,.wb-svg{max-width:100%;overflow-x:auto}"
    ".wb-svg svg{max-width:100%;height:auto}"
    "@media print{section{break-inside:avoid-page}.wb-chart,.wb-svg{break-inside:avoid}"
    "body{margin:0;max-width:none}.wb-table{overflow:visible}}"
)

_BREAKDOWN_COLS = (
    "run",
    "wall_s",
    "compute_s",
    "compute_share",
    "non_compute_s",
    "non_compute_share",
    "idle_s",
    "idle_share",
)


def extra_tables(pack: Any) -> list[tuple[str, list[dict[str, Any]], tuple[str, ...]]]:
    """Tables the renderer computes from the traces: the temporal breakdown of measured runs."""
    runs = list(zip(("baseline", "candidate"), pack.traces, strict=True))
    rows = breakdown_rows(runs)
    if not rows:
        return []
    return [
        (
            "Temporal breakdown of the measured runs (median iteration: compute, non-compute "
            "(copies, communication not under compute), idle)",
            rows,
            _BREAKDOWN_COLS,
        )
    ]


def _timelines(pack: Any) -> list[tuple[str, Html]]:
    out = []
    if pack.timeline:
        stamped = all(r["source"].startswith("trace timestamps") for r in pack.timeline)
        how = (
            "at the traces' own timestamps, gaps included, one lane per stream"
            if stamped
            else "kernels in order from their recorded times (no streams are known); gaps "
            "between kernels are in the diff's remainder row"
        )
        svg = lanes_svg(layer_lanes(pack.timeline), f"{pack.layer}: baseline and candidate")
        out.append((f"Before/after timeline of {pack.layer} ({how})", _svg_box(svg)))
    for side, run in zip(("baseline", "candidate"), pack.traces, strict=True):
        if run is None:
            continue
        caption, lanes = iteration_lanes(run)
        if lanes:
            svg = lanes_svg(lanes, f"{side}: {caption}")
            heading = f"Measured timeline per stream: {side} ({caption}; overlap lane in red)"
            out.append((heading, _svg_box(svg)))
    return out


def _svg_box(svg: Html) -> Html:
    return Html("<div class='wb-svg'>{}</div>\n").format(svg)


def _lens_table(pack: Any) -> list[tuple[str, list[dict[str, Any]], tuple[str, ...]]]:
    if not pack.lens:
        return []
    return [
        (
            "Bandwidth lens: baseline, each declared change reverted alone, candidate",
            lens_rows(pack.lens),
            ("variant", "time_s", "moved", "achieved", "pressure", "reading"),
        )
    ]


def _all_tables(pack: Any) -> list[tuple[str, list[dict[str, Any]], tuple[str, ...]]]:
    tables = list(pack.tables)
    at = next((i for i, t in enumerate(tables) if t[0].startswith("Per layer type")), None)
    at = len(tables) if at is None else at + 1
    return tables[:at] + extra_tables(pack) + _lens_table(pack) + tables[at:]


def _page(title: str, sections: list[tuple[str, Html]]) -> Html:
    """A standalone page: no script, no stylesheet or image from anywhere (title escaped)."""
    body = Html("").join(
        Html("<section><h2>{}</h2>\n{}</section>\n").format(heading, content)
        for heading, content in sections
    )
    return Html(
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<title>{title}</title>\n<style>{css}</style>\n</head><body>"
        "<h1>{title}</h1>\n{body}</body></html>\n"
    ).format(title=title, css=trusted(PAGE_CSS), body=body)


def comparison_html(pack: Any) -> Html:
    """The regression pack (a :class:`~workbench.review.pack.content.ComparisonPack`) as one page.

    Static: tables and inline SVG only (the timelines rendered by vl-convert), no script at all,
    so it opens offline and prints.
    """
    sections = []
    for h, rows, cols in _all_tables(pack):
        sections.append((h, html_table(rows, cols)))
        if h.startswith("Bandwidth lens"):
            sections.append((f"{h} (chart)", _svg_box(lens_svg(rows))))
        if h.startswith("Per layer type"):
            sections += _timelines(pack)
    return _page(pack.title, sections)


def comparison_markdown(pack: Any) -> str:
    """The Markdown twin of :func:`comparison_html` (every cell and the title escaped)."""
    out = [f"# {md_escape(pack.title)}\n"]
    for heading, rows, cols in _all_tables(pack):
        out.append(f"## {md_escape(heading)}\n\n{md_table(rows, cols)}")
    if pack.timeline or any(pack.traces):
        out.append("## Charts\n\nTimelines per stream: see the HTML page.\n")
    return "\n".join(out)


def write_comparison(pack: Any, out: str | Path) -> tuple[Path, Path]:
    """Write the regression pack at ``out`` (format by suffix) and its twin beside it."""
    from workbench.report.review_pack import write_pack

    return write_pack(out, comparison_html(pack), comparison_markdown(pack))
