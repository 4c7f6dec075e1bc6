"""The bandwidth lens's reading of one variant, shared by the chart and the static page.

The reading says what the numbers show and nothing they do not:

* the first variant is the ``baseline behaviour``;
* with a serving replay (``unstable`` given), a variant whose p99 went unstable is
  ``unstable tail latency``: the replay saw it (the queue: offered rate against the step's
  service rate), whatever the pressure;
* otherwise a variant at or above the saturation band is ``saturated``: a change that keeps the
  bytes can shorten its step by at most ``1 / pressure`` (x1.25 at the band's 80 %);
* any other variant has ``headroom left`` at this level (more than x1.25 for byte-preserving
  changes).

Pressure alone never claims a tail: no replay, no ``unstable tail latency``.
"""

from __future__ import annotations

__all__ = ["LENS_LABELS", "lens_label"]

#: The four readings, in the order of the rules above.
LENS_LABELS = ("baseline behaviour", "unstable tail latency", "saturated", "headroom left")


def lens_label(index: int, pressure: float, saturation: float, unstable: bool | None) -> str:
    """The reading of variant ``index`` (0 = baseline) at ``pressure`` (0..1).

    Args:
        index: Position in the optimisation order.
        pressure: Achieved over the reference bandwidth, a fraction.
        saturation: Where the saturation band starts, a fraction.
        unstable: Whether the serving replay found the p99 unstable (None: no replay).
    """
    if index == 0:
        return LENS_LABELS[0]
    if unstable:
        return LENS_LABELS[1]
    return LENS_LABELS[2] if pressure >= saturation else LENS_LABELS[3]
