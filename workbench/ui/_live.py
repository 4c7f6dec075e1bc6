"""A live Altair chart: a chart value that redraws in place when a new one is assigned.

In a Jupyter kernel the chart is shown with :class:`altair.JupyterChart` (offline JavaScript
enabled once, on first display), and assigning :attr:`LiveChart.chart` resends the spec. Without a
kernel (tests, scripts) the chart value is kept and nothing is rendered.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import altair as alt
import ipywidgets as widgets

from workbench.report._html import Html
from workbench.report.export import static_figures_html

__all__ = [
    "ChartPanel",
    "LiveChart",
    "Panel",
    "ShowsWidget",
    "busy",
    "enable_offline",
    "in_kernel",
    "row",
]


def in_kernel() -> bool:
    """Whether a Jupyter kernel (with a frontend to render widgets) is running."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


@functools.cache
def enable_offline() -> bool:
    """Make JupyterChart load its JavaScript from vl-convert, not a CDN (once per process).

    Only done inside a kernel; returns whether offline mode is on.
    """
    if not in_kernel():
        return False
    try:
        alt.JupyterChart.enable_offline()
    except Exception as exc:
        warnings.warn(f"offline Altair charts unavailable ({exc}); charts need a CDN", stacklevel=2)
        return False
    return True


@contextlib.contextmanager
def busy(status: widgets.HTML, controls: Sequence[widgets.DOMWidget], text: str) -> Iterator[None]:
    """Show ``text`` in ``status`` and disable ``controls`` while a slow change runs.

    A change that genuinely needs seconds (a new model or hardware) says so instead of leaving
    a frozen page: the status line and the disabled state reach the front end at once (widget
    messages are sent as they are made), the work runs, then the controls come back and the
    line clears, also when the work raises.

    Args:
        status: The panel's status line.
        controls: Widgets to disable meanwhile.
        text: What is being computed (plain text; escaped here).
    """
    was = [c.disabled for c in controls]
    status.value = Html("<i>computing: {}...</i>").format(text)
    for c in controls:
        c.disabled = True
    try:
        yield
    finally:
        for c, d in zip(controls, was, strict=True):
            c.disabled = d
        status.value = ""


class ShowsWidget(ABC):
    """Mixin: a panel displays as its ``widget`` property in Jupyter (and in exported HTML).

    A panel names what its box holds (``_children``), the charts its static copy shows
    (``_static_charts``) and the settings they show (``_caption``); :attr:`widget` makes the
    box from them on first use.
    """

    _widget: Panel | None = None
    #: The controls' names, row by row, at the top of the box.
    _ROWS: tuple[tuple[str, ...], ...] = ()
    #: The static copy's caption: a format string of the controls' values by name.
    _CAPTION = ""
    controls: dict[str, Any]

    def _control_rows(self) -> list[widgets.HBox]:
        """The controls laid out as :attr:`_ROWS` says."""
        return [row(*(self.controls[name] for name in names)) for names in self._ROWS]

    @abstractmethod
    def _children(self) -> list[Any]:
        """What the box holds, top to bottom (controls, lines, charts)."""

    @abstractmethod
    def _static_charts(self) -> tuple[Any, ...]:
        """The charts the static (exported) copy shows."""

    def _caption(self) -> str:
        """:attr:`_CAPTION` filled in with the controls' values."""
        return self._CAPTION.format_map({k: c.value for k, c in self.controls.items()})

    @property
    def widget(self) -> Panel:
        """The ipywidgets container (controls, lines, charts), made on first use.

        Displayed, it adds static copies of the charts for an offline export.
        """
        if self._widget is None:
            self._widget = Panel(
                self._children(), charts=self._static_charts, caption=self._caption
            )
        return self._widget

    def _ipython_display_(self, **kwargs: Any) -> None:
        self.widget._ipython_display_(**kwargs)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


class ChartPanel(ShowsWidget):
    """Mixin: a panel whose one live chart (a :class:`LiveChart` in ``_chart``) is ``chart``.

    A panel that draws its chart with ``_make_chart()`` and its text lines with ``_fill()``
    starts with :meth:`_start` and redraws with :meth:`update`.
    """

    _chart: LiveChart

    @property
    def chart(self) -> Any:
        """The current chart."""
        return self._chart.chart

    def _static_charts(self) -> tuple[Any, ...]:
        return (self.chart,)

    @abstractmethod
    def _make_chart(self) -> Any:
        """The chart for the current controls."""

    def _fill(self) -> None:
        """Write the panel's text lines for the current controls (none by default)."""

    def _start(self) -> None:
        """Draw the first chart and lines; every control's change then redraws."""
        self._chart = LiveChart(self._make_chart())
        self._fill()
        for control in self.controls.values():
            control.observe(lambda _change: self.update(), names="value")

    def update(self) -> Any:
        """Redraw the text lines and the chart with the current controls; returns the chart."""
        self._fill()
        self._chart.chart = self._make_chart()
        return self._chart.chart


def row(*children: Any) -> widgets.HBox:
    """Widgets side by side, wrapping onto the next line where the page is narrow."""
    return widgets.HBox(
        list(children), layout=widgets.Layout(display="flex", flex_flow="row wrap", width="100%")
    )


class LiveChart:
    """Holds the current chart; its widget (a JupyterChart) is made on first use.

    Args:
        chart: The first chart.
    """

    def __init__(self, chart: Any) -> None:
        self._chart = chart
        self._widget: alt.JupyterChart | None = None

    @property
    def chart(self) -> Any:
        """The current chart value (an Altair chart)."""
        return self._chart

    @chart.setter
    def chart(self, new: Any) -> None:
        self._chart = new
        if self._widget is None:
            return
        if getattr(new, "params", alt.Undefined) is alt.Undefined:
            # NOTE: a chart without params or selections only needs its spec resent; skipping
            # Altair's JSON-schema validation of every update halves the redraw latency. The
            # chart functions are validated by their tests.
            self._widget.spec = new.to_dict(validate=False)
        else:
            self._widget.chart = new

    @property
    def widget(self) -> alt.JupyterChart:
        """The JupyterChart showing :attr:`chart` (offline JavaScript enabled first)."""
        if self._widget is None:
            enable_offline()
            self._widget = alt.JupyterChart(self._chart)
        return self._widget


class Panel(widgets.VBox):
    """A widget's outer box; displayed, it also emits static SVG copies of its charts.

    The static copies make an executed lesson exported to HTML show every chart offline (the
    export has no widget state); in a live front end they are hidden by a style rule while the
    widget renders (see :func:`workbench.report.export.static_figures_html`).

    Args:
        children: The box's children.
        charts: Returns the charts to copy (called at display time).
        caption: Returns a line naming the settings the copies show.
        **kwargs: Passed to :class:`ipywidgets.VBox` (e.g. ``layout``; default: the page's full
            width).
    """

    def __init__(
        self,
        children: Sequence[Any],
        charts: Callable[[], Sequence[Any]],
        caption: Callable[[], str] = lambda: "",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("layout", widgets.Layout(width="100%", max_width="100%"))
        super().__init__(children, **kwargs)
        self._static_charts = charts
        self._static_caption = caption

    def static_html(self) -> str:
        """The static copies of the current charts, as an HTML fragment."""
        return static_figures_html(
            list(self._static_charts()), caption="static copy: " + self._static_caption()
        )

    def _ipython_display_(self, **kwargs: Any) -> None:
        from IPython.display import HTML, display

        display(self._repr_mimebundle_(**kwargs), raw=True)
        try:
            display(HTML(self.static_html()))
        except Exception as exc:  # pragma: no cover - vl-convert missing or failing
            warnings.warn(f"no static chart copies ({exc})", stacklevel=2)
