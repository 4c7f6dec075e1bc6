"""The one path by which text reaches HTML (and SVG) in report/ and ui/: markup that escapes.

:class:`Html` is a ``str`` holding markup this package built. Its :meth:`Html.format` and
:meth:`Html.join` escape every value that is not already :class:`Html` (with
:func:`html.escape`, quotes included, so a value is safe in text and in a quoted attribute);
numbers pass through so format specs such as ``{:.1%}`` still work. A template is a literal in
the code; only values come from records, traces, models or files, and they are always escaped::

    Html("<td title='{}'>{}</td>").format(name, short)

Markup from a renderer that escapes its own text (vl-convert's SVG, a chart spec whose ``<``
are JSON unicode escapes) enters through :func:`trusted`, the one greppable exception.

>>> Html("<b>{}</b> {:.0%}").format("<script>", 0.5)
'<b>&lt;script&gt;</b> 50%'
>>> Html("<li>{}</li>").format(Html("<i>{}</i>").format("a&b"))
'<li><i>a&amp;b</i></li>'
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

__all__ = ["Html", "each", "escape", "trusted"]


class Html(str):
    """Markup built here: inserted as it is, never escaped twice."""

    __slots__ = ()

    def format(self, *args: Any, **kwargs: Any) -> Html:
        """``str.format`` with every value escaped (see the module doc)."""
        return Html(
            super().format(*(_value(a) for a in args), **{k: _value(v) for k, v in kwargs.items()})
        )

    def join(self, parts: Iterable[Any]) -> Html:
        """``str.join`` with every part escaped."""
        return Html(super().join(escape(p) for p in parts))


def escape(value: Any, *, quote: bool = True) -> Html:
    """``value`` as markup: :class:`Html` as it is, anything else as escaped text.

    >>> escape("<a href='x'>"), escape(Html("<br>"))
    ('&lt;a href=&#x27;x&#x27;&gt;', '<br>')
    """
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=quote))


def each(template: str, items: Iterable[Any]) -> Html:
    """``template`` formatted with each item (escaped unless :class:`Html`), joined.

    >>> each("<td>{}</td>", ["a<b", 2])
    '<td>a&lt;b</td><td>2</td>'
    """
    t = Html(template)
    return Html("").join(t.format(item) for item in items)


def trusted(markup: str) -> Html:
    """Markup from a renderer that escapes its own text (vl-convert's SVG), taken as it is."""
    return Html(markup)


def _value(v: Any) -> Any:
    if isinstance(v, Html) or (isinstance(v, int | float) and not isinstance(v, bool)):
        return v
    return escape(v)
