"""Static export of charts: PNG/SVG via vl-convert, offline HTML pages, Vega-Lite JSON.

Everything here works without a network: vl-convert renders in-process, and HTML pages inline
the Vega, Vega-Lite and Vega-Embed JavaScript (about 0.9 MB, once per page) instead of loading it
from a CDN. Files are written atomically (a temporary file in the same folder, then a rename).
"""

from __future__ import annotations

import functools
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
from workbench.report._html import Html, each, trusted

__all__ = [
    "EXPORT_SUFFIXES",
    "STATIC_FIGURE_CLASS",
    "chart_html_fragment",
    "chart_svg",
    "export_notebook",
    "notebook_html",
    "offline_page",
    "save_chart",
    "standalone_html",
    "static_figures_html",
]

#: CSS class of a chart's static figure (what an exported notebook shows offline).
STATIC_FIGURE_CLASS = "wb-static-chart"

#: File suffixes :func:`save_chart` understands.
EXPORT_SUFFIXES = (".png", ".svg", ".html", ".json")

#: nbconvert templates shipped with the package (``offline``: nbconvert's lab page without the
#: require.js, MathJax, Mermaid and widget-manager scripts it would load from CDNs).
TEMPLATES = Path(__file__).with_name("templates")

# Anything a browser would fetch from the network: a script, stylesheet, image or frame source,
# a module import, a CSS import or url(). Plain <a href> links (sources cited in a lesson) are
# not fetched and may stay.
_REMOTE = re.compile(
    r"<(?:script|img|iframe|source|embed)\b[^>]*\ssrc\s*=\s*[\"']?(?:https?:)?//"
    r"|<link\b[^>]*\shref\s*=\s*[\"']?(?:https?:)?//"
    r"|\bimport\s*\(\s*[\"'](?:https?:)?//"
    r"|@import\s+(?:url\()?[\"']?(?:https?:)?//"
    r"|url\(\s*[\"']?(?:https?:)?//",
    re.IGNORECASE,
)


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


def remote_resources(page: str) -> list[str]:
    """What in an HTML page would be fetched from the network (empty: the page is offline).

    >>> remote_resources('<script src="https://cdn.example/x.js"></script><a href="https://a.b">')
    ['<script src="https://']
    """
    return [m.group(0) for m in _REMOTE.finditer(page)]


def _check_offline(page: str, what: str = "offline HTML export") -> str:
    found = remote_resources(page)
    if found:
        raise WorkbenchError(f"{what}: the page loads from the network ({found[0]!r}...)")
    return page


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _without_widget_text(nb: Any) -> Any:
    """A copy of ``nb`` whose widget outputs lose their ``text/plain`` fallback.

    Without saved widget state a page cannot draw the live widget, and nbconvert falls back to
    its text repr (``Panel(children=(HBox(...``) above the static copy the widget emitted
    itself; the static copy is what the reader should see (issue 20).
    """
    import copy

    out = copy.deepcopy(nb)
    for cell in out.cells:
        if "outputs" not in cell:
            continue
        for o in cell.outputs:
            data = o.get("data", {})
            if _WIDGET_VIEW in data:
                data.pop("text/plain", None)
        # an output left with nothing but the live view has nothing a static page can show
        cell.outputs = [o for o in cell.outputs if set(o.get("data") or ()) != {_WIDGET_VIEW}]
    return out


def notebook_html(nb: Any, name: str = "Notebook") -> str:
    """A notebook (an ``nbformat`` node) as one HTML page that loads nothing from the network.

    ``jupyter nbconvert --to html`` with nbconvert's ``lab`` template links require.js and
    MathJax from cdnjs; this uses the package's ``offline`` template (the same page without
    them). Run the notebook first to export its outputs: the lessons' widgets leave static SVG
    figures of their charts, which need no script.

    Args:
        nb: The notebook.
        name: The page title (when the notebook's metadata has none).

    Returns:
        The page's HTML text.

    Raises:
        WorkbenchError: The page would still fetch something (a remote image in a cell...).
    """
    from nbconvert import HTMLExporter

    nb = _without_widget_text(nb)
    exporter = HTMLExporter(template_name="offline", extra_template_basedirs=[str(TEMPLATES)])
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": name}})
    return _check_offline(body, what="notebook export")


def export_notebook(
    src: str | os.PathLike[str], dest: str | os.PathLike[str], *, execute: bool = False
) -> Path:
    """Write ``src`` (an ``.ipynb``) as an offline HTML page at ``dest``.

    Args:
        src: The notebook file.
        dest: The page to write (atomically; its folder is created).
        execute: Run the notebook first (in its folder, without saving widget state), as
            ``jupyter nbconvert --execute`` does.

    Returns:
        The path written.

    Raises:
        WorkbenchError: ``src`` is missing or not a notebook, or the page is not offline.
    """
    import nbformat

    source = Path(src)
    try:
        nb = nbformat.read(source, as_version=4)
    except (OSError, ValueError) as exc:
        raise WorkbenchError(f"export_notebook {source}: not a readable notebook ({exc})") from exc
    if execute:
        from nbclient import NotebookClient

        # NOTE: the kernel's start-up warning about TCP without encryption concerns a local,
        # loopback kernel run for the export; it is not the reader's business (issue 20).
        NotebookClient(nb, timeout=300, store_widget_state=False,
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": str(source.parent)}}).execute()  # fmt: skip
    out = Path(dest)
    _write_atomic(out, notebook_html(nb, name=source.stem).encode())
    return out


def chart_html_fragment(chart: Any, *, div_id: str | None = None) -> Html:
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
    selector = json.dumps("#" + target).replace("<", "\\u003c").replace("&", "\\u0026")
    return Html(
        '<div id="{target}" class="wb-chart"></div>\n'
        "<script>vegaEmbed({selector}, {spec}, "
        '{{"actions": false, "renderer": "svg"}}).catch(console.error);</script>\n'
    ).format(target=target, selector=trusted(selector), spec=trusted(spec))


def offline_page(title: str, sections: Sequence[tuple[str, Html]]) -> Html:
    """A standalone HTML page with the Vega JavaScript inlined once and the given sections.

    Args:
        title: Page title (escaped).
        sections: ``(heading, html)`` pairs; the heading is escaped, the HTML is inserted as
            given (e.g. :func:`chart_html_fragment` output or a mapping-sheet table).

    Returns:
        The page's HTML text (no script is loaded from the network).
    """
    body = Html("").join(
        Html("<section><h2>{}</h2>\n{}</section>\n").format(heading, content)
        for heading, content in sections
    )
    bundle = _javascript_bundle().replace("</script", "<\\/script")
    page = Html(
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        "<title>{title}</title>\n"
        "<style>body{{font-family:sans-serif;margin:1.5em}}section{{margin-bottom:2em}}"
        "table{{border-collapse:collapse;font-size:12px}}td,th{{border:1px solid #ccc;"
        "padding:2px 4px}}</style>\n"
        "<script>{bundle}</script>\n</head><body><h1>{title}</h1>\n{body}"
        "</body></html>\n"
    ).format(title=title, bundle=trusted(bundle), body=body)
    return Html(_check_offline(page))


def chart_svg(chart: Any) -> str:
    """The chart rendered to SVG text by vl-convert (offline, in-process)."""
    import vl_convert

    return str(vl_convert.vegalite_to_svg(_spec(chart), vl_version=_vl_version()))


def static_figures_html(charts: Sequence[Any], caption: str = "") -> Html:
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
    style = Html(
        "<style>.jp-OutputArea-child:has(.widget-vbox) + .jp-OutputArea-child .{block},"
        ".output_area:has(.widget-vbox) + .output_area .{block} {{display:none}}</style>"
    ).format(block=block)
    # NOTE: vl-convert escapes every text it writes into the SVG
    figures = each(
        "<figure class='" + STATIC_FIGURE_CLASS + "' style='margin:4px 0;max-width:100%;"
        "overflow-x:auto'>{}</figure>",
        (trusted(chart_svg(c)) for c in charts),
    )
    note = Html("<div style='font-size:11px;color:#555'>{}</div>").format(caption)
    return Html("{}<div class='{}'>{}{}</div>").format(
        style, block, figures, note if caption else Html("")
    )


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
