"""Static export of charts: PNG/SVG via vl-convert, offline HTML pages, Vega-Lite JSON.

Everything here works without a network: vl-convert renders in-process, and HTML pages inline
the Vega, Vega-Lite and Vega-Embed JavaScript (about 0.9 MB, once per page) instead of loading it
from a CDN. Files are written atomically (a temporary file in the same folder, then a rename).
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt

from workbench._files import write_bytes_safely
from workbench.errors import WorkbenchError

__all__ = [
    "EXPORT_SUFFIXES",
    "STATIC_FIGURE_CLASS",
    "chart_html_fragment",
    "chart_svg",
    "offline_page",
    "save_chart",
    "standalone_html",
    "static_figures_html",
]

#: CSS class of a chart's static figure (what an exported notebook shows offline).
STATIC_FIGURE_CLASS = "wb-static-chart"

#: File suffixes :func:`save_chart` understands.
EXPORT_SUFFIXES = (".png", ".svg", ".html", ".json")

_EXTERNAL_SCRIPT = re.compile(r"<script[^>]+src\s*=\s*[\"']?https?:", re.IGNORECASE)


def _vl_version() -> str:
    """The Vega-Lite version Altair writes, as vl-convert names it (``"6.4"``)."""
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


def _spec(chart: Any) -> dict[str, Any]:
    return chart.to_dict() if hasattr(chart, "to_dict") else dict(chart)


@functools.cache
def _javascript_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed bundled into one script (globals ``vegaEmbed`` ...)."""
    import vl_convert

    # NOTE: the snippet argument is optional at run time (its stub says otherwise).
    return vl_convert.javascript_bundle(vl_version=_vl_version())  # type: ignore[call-arg]


def _write_atomic(path: Path, data: bytes) -> None:
    write_bytes_safely(path, data, what="save_chart", make_parents=True)


def _check_offline(page: str) -> str:
    if _EXTERNAL_SCRIPT.search(page):
        raise WorkbenchError("offline HTML export: the page loads a script from the network")
    return page


def chart_html_fragment(chart: Any, *, div_id: str | None = None) -> str:
    """A ``<div>`` plus the ``<script>`` that draws ``chart`` into it with ``vegaEmbed``.

    The fragment needs the JavaScript of :func:`offline_page` (included once per page).

    Args:
        chart: An Altair chart (or a Vega-Lite spec dict).
        div_id: Element id; a unique one by default.

    Returns:
        HTML text.
    """
    target = div_id or f"wb-chart-{uuid.uuid4().hex[:12]}"
    # NOTE: every "<", ">" and "&" in the JSON is a \u escape, so no text in a spec (a model name
    # holding "<!--<script>") can open a comment or a tag inside this <script> block.
    spec = (
        json.dumps(_spec(chart))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    return (
        f'<div id="{html.escape(target)}" class="wb-chart"></div>\n'
        f"<script>vegaEmbed({json.dumps('#' + target)}, {spec}, "
        '{"actions": false, "renderer": "svg"}).catch(console.error);</script>\n'
    )


def offline_page(title: str, sections: Sequence[tuple[str, str]]) -> str:
    """A standalone HTML page with the Vega JavaScript inlined once and the given sections.

    Args:
        title: Page title (escaped).
        sections: ``(heading, html)`` pairs; the heading is escaped, the HTML is inserted as
            given (e.g. :func:`chart_html_fragment` output or a mapping-sheet table).

    Returns:
        The page's HTML text (no script is loaded from the network).
    """
    body = "".join(
        f"<section><h2>{html.escape(heading)}</h2>\n{content}</section>\n"
        for heading, content in sections
    )
    bundle = _javascript_bundle().replace("</script", "<\\/script")
    page = (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:sans-serif;margin:1.5em}section{margin-bottom:2em}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
        "padding:2px 4px}</style>\n"
        f"<script>{bundle}</script>\n</head><body><h1>{html.escape(title)}</h1>\n{body}"
        "</body></html>\n"
    )
    return _check_offline(page)


def chart_svg(chart: Any) -> str:
    """The chart rendered to SVG text by vl-convert (offline, in-process)."""
    import vl_convert

    return str(vl_convert.vegalite_to_svg(_spec(chart), vl_version=_vl_version()))


def static_figures_html(charts: Sequence[Any], caption: str = "") -> str:
    """Static SVG copies of live charts, for a notebook exported without its widgets.

    Each chart becomes one ``<figure class="wb-static-chart">`` holding its SVG (no script, no
    external resource). A style rule hides the block in a live front end when the widget output
    just before it rendered (a ``.widget-vbox`` is there), so a student sees the live chart once;
    an exported page (``jupyter nbconvert --to html``) has no rendered widget and shows the
    figures. Browsers without ``:has()`` show both.

    Args:
        charts: Altair charts (or Vega-Lite spec dicts).
        caption: A line under the figures (e.g. the settings they show).

    Returns:
        An HTML fragment.
    """
    block = f"wb-static-{uuid.uuid4().hex[:8]}"
    style = (
        f"<style>.jp-OutputArea-child:has(.widget-vbox) + .jp-OutputArea-child .{block},"
        f".output_area:has(.widget-vbox) + .output_area .{block} {{display:none}}</style>"
    )
    figures = "".join(
        f"<figure class='{STATIC_FIGURE_CLASS}' style='margin:4px 0;max-width:100%;"
        f"overflow-x:auto'>{chart_svg(c)}</figure>"
        for c in charts
    )
    note = f"<div style='font-size:11px;color:#555'>{html.escape(caption)}</div>" if caption else ""
    return f"{style}<div class='{block}'>{figures}{note}</div>"


def standalone_html(chart: Any, title: str = "chart") -> str:
    """One chart as a standalone page that renders offline (JavaScript inlined)."""
    return offline_page(title, [("", chart_html_fragment(chart))]).replace("<h2></h2>", "")


def save_chart(chart: Any, path: str | os.PathLike[str], *, scale: float = 2.0) -> Path:
    """Write ``chart`` to ``path``; the format follows the suffix.

    ``.png`` and ``.svg`` are rendered by vl-convert (offline); ``.html`` is a standalone page
    with the JavaScript inlined (works offline); ``.json`` is the Vega-Lite spec.

    Args:
        chart: An Altair chart (or a Vega-Lite spec dict).
        path: Output file; its folder is created if needed.
        scale: PNG pixel density (2 = twice the chart's nominal size).

    Returns:
        The path written.

    Raises:
        WorkbenchError: An unknown suffix.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in EXPORT_SUFFIXES:
        raise WorkbenchError(
            f"save_chart {out}: unknown suffix {suffix!r} (use {', '.join(EXPORT_SUFFIXES)})"
        )
    spec = _spec(chart)
    if suffix == ".json":
        data = json.dumps(spec, indent=2).encode()
    elif suffix == ".html":
        data = standalone_html(spec, title=out.stem).encode()
    else:
        import vl_convert

        if suffix == ".png":
            data = vl_convert.vegalite_to_png(spec, vl_version=_vl_version(), scale=scale)
        else:
            data = vl_convert.vegalite_to_svg(spec, vl_version=_vl_version()).encode()
    _write_atomic(out, data)
    return out
