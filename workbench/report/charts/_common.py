"""Shared pieces of the charts: display units, the bottleneck palette, layer grouping.

Data rows stay in SI base units (seconds, bytes, FLOP/s); each chart converts to its display
unit with a ``calculate`` transform, so ``chart.to_dict()`` carries both.
"""

from __future__ import annotations

import re
from typing import Any

import altair as alt

from workbench.cost import Bottleneck

__all__ = [
    "BOTTLENECK_COLOURS",
    "MAX_ROWS",
    "bottleneck_colour",
    "byte_unit",
    "group_name",
    "time_unit",
    "with_values",
]

#: Altair refuses more rows than this by default; every chart aggregates below it.
MAX_ROWS = 5000

#: Colour per bottleneck class (``bandwidth:<level>`` shades are assigned in order).
BOTTLENECK_COLOURS = {
    "compute": "#2ca02c",
    "overhead": "#7f7f7f",
    "sync": "#9467bd",
    "capacity": "#d62728",
    "interconnect": "#8c564b",
    "mixed": "#bcbd22",
}
_BANDWIDTH_SHADES = ("#1f77b4", "#ff7f0e", "#17becf", "#e377c2", "#aec7e8")

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BYTE_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B"))


def time_unit(largest_s: float) -> tuple[float, str]:
    """A display unit for times up to ``largest_s`` seconds.

    Returns:
        ``(factor, name)``: multiply seconds by ``factor`` to get ``name``.

    >>> time_unit(0.04)
    (1000.0, 'ms')
    """
    for size, name in _TIME_UNITS:
        if largest_s >= size:
            return 1.0 / size, name
    return 1e9, "ns"


def byte_unit(largest: float) -> tuple[float, str]:
    """A decimal display unit for byte counts up to ``largest`` bytes.

    Returns:
        ``(divisor, name)``: divide bytes by ``divisor`` to get ``name``.

    >>> byte_unit(3.2e7)
    (1000000.0, 'MB')
    """
    for size, name in _BYTE_UNITS:
        if largest >= size:
            return size, name
    return 1.0, "B"


def group_name(kernel_name: str) -> str:
    """Replace layer indices with ``*`` so the identical layers of a stack group together.

    >>> group_name("layers.12.mlp.up_proj")
    'layers.*.mlp.up_proj'
    """
    return re.sub(r"(^|\.)(\d+)(?=\.|$)", r"\1*", kernel_name)


def bottleneck_colour(classes: list[str]) -> alt.Scale:
    """A colour scale giving each bottleneck class present a fixed, readable colour."""
    domain = sorted(set(classes), key=lambda c: (Bottleneck.parse(c).is_bandwidth, c))
    shades = iter(_BANDWIDTH_SHADES * 4)
    rng = [BOTTLENECK_COLOURS.get(c) or next(shades) for c in domain]
    return alt.Scale(domain=domain, range=rng)


def clean(value: Any) -> Any:
    """Lists become ``+``-joined text and non-finite floats ``None`` (JSON-safe data rows)."""
    if isinstance(value, (list, tuple)):
        return "+".join(str(v) for v in value)
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def with_values(template: alt.Chart, rows: list[dict[str, Any]]) -> alt.Chart:
    """A shallow copy of a data-less chart template carrying ``rows`` as inline data."""
    chart = template.copy(deep=False)
    chart.data = alt.Data(values=rows)
    return chart
