"""Engineering-notation formatting for the one-line explanations the library writes.

Numbers of record stay in SI base units; this module only turns them into short text
(``3.35 TB/s``, ``12.4 us``) for evidence sentences, errors and tables. One convention:
capacities (memory sizes) in binary units (KiB, MiB, GiB), rates and amounts moved in SI.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "fmt_bytes",
    "fmt_capacity",
    "fmt_change",
    "fmt_cut",
    "fmt_delta",
    "fmt_percent",
    "fmt_quantity",
    "fmt_rate",
    "fmt_si",
    "fmt_time",
    "shift_line",
]

_PREFIX = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def fmt_si(value: float, unit: str, digits: int = 3) -> str:
    """Format ``value`` with an SI prefix.

    >>> fmt_si(3.35e12, "B/s"), fmt_si(999.96, "B")
    ('3.35 TB/s', '1 kB')
    """
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    shown = abs(float(f"{value:.{digits}g}"))  # NOTE: 999.96 shows as 1 k, never 1e+03
    for scale, prefix in _PREFIX:
        if shown >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def fmt_time(seconds: float) -> str:
    """Format a duration (``12.4 us``, ``3.1 ms``), the unit chosen after rounding.

    >>> fmt_time(1.24e-5), fmt_time(-9.996e-7), fmt_time(9.9996e-4), fmt_time(1234.5)
    ('12.4 us', '-1 us', '1 ms', '1,234 s')
    """
    if not math.isfinite(seconds):
        return f"{seconds:g} s"
    if abs(seconds) < 1e-12:  # below a picosecond: floating-point dust, not a duration
        return "0 s"
    shown = abs(float(f"{seconds:.3g}"))  # NOTE: a 1 us shift of -999.6 ns is "-1 us"
    if shown >= 1000:  # NOTE: 1,234 s, never 1.23e+03 s
        return f"{seconds:,.0f} s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if shown >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_delta(seconds: float) -> str:
    """Format a change of duration with its sign (``+12.4 us``, ``-3.1 ms``).

    >>> fmt_delta(1.24e-5), fmt_delta(-3.1e-3)
    ('+12.4 us', '-3.1 ms')
    """
    return ("+" if seconds >= 0 else "-") + fmt_time(abs(seconds))


def fmt_cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ``...`` marking the cut.

    >>> fmt_cut("vectorized_elementwise", 12)
    'vectoriz...'
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fmt_bytes(n: float) -> str:
    """Format a byte count with decimal prefixes (``32.0 MB``)."""
    return fmt_si(n, "B")


def fmt_capacity(n: float, digits: int = 3) -> str:
    """Format a capacity (a memory size) with binary prefixes.

    >>> fmt_capacity(80 * 2**30)
    '80 GiB'
    >>> fmt_capacity(228 * 1024)
    '228 KiB'
    """
    if n == 0 or not math.isfinite(n):
        return f"{n:g} B"
    for scale, prefix in (
        (2**50, "Pi"),
        (2**40, "Ti"),
        (2**30, "Gi"),
        (2**20, "Mi"),
        (2**10, "Ki"),
    ):
        if abs(n) >= scale:
            return f"{n / scale:.{digits}g} {prefix}B"
    return f"{n:.{digits}g} B"


def fmt_rate(flops_per_s: float) -> str:
    """Format a FLOP rate (``989 TFLOP/s``)."""
    return fmt_si(flops_per_s, "FLOP/s")


def fmt_peak(ops_per_s: float, fmt: str) -> str:
    """Format an engine's peak in the unit of its format: TOPS for integers, else FLOP/s.

    >>> fmt_peak(989.4e12, "bf16"), fmt_peak(1979e12, "int8")
    ('989 TFLOP/s', '1,979 TOPS')
    """
    if fmt.startswith("int"):
        return f"{ops_per_s / 1e12:,.0f} TOPS"
    return fmt_si(ops_per_s, "FLOP/s")


def fmt_percent(fraction: float, digits: int = 3) -> str:
    """Format a fraction (0..1, a utilisation or a share) as a percentage.

    >>> fmt_percent(0.707), fmt_percent(0.0004), fmt_percent(1.459)
    ('70.7%', '0.04%', '146%')
    """
    if not math.isfinite(fraction):
        return f"{fraction:g}"
    pct = fraction * 100
    if abs(pct) < 0.005:
        return "0%"
    if abs(pct) >= 10 ** (digits - 1):
        return f"{pct:.0f}%"
    return f"{pct:.{digits}g}%"


def fmt_change(relative: float) -> str:
    """Format a relative change (``(new - old) / old``) as a signed percentage.

    >>> fmt_change(2.177), fmt_change(-0.295), fmt_change(1e-9)
    ('+218%', '-29.5%', '0%')
    """
    text = fmt_percent(relative)
    return text if text == "0%" or text.startswith("-") or "%" not in text else "+" + text


#: Unit names :func:`fmt_quantity` understands.
QUANTITY_UNITS = ("s", "%", "tokens/s", "req/s", "B", "B/s", "FLOP/s", "FLOP", "")


def fmt_quantity(value: float | int | None, unit: str) -> str:
    """Format ``value`` (SI base units) for a reader: a time, a percentage, a rate.

    ``unit`` is one of :data:`QUANTITY_UNITS`: ``s`` (a duration), ``%`` (``value`` is a
    fraction 0..1), ``tokens/s``, ``req/s``, ``B``, ``B/s``, ``FLOP/s``, ``FLOP``, or ``""``
    (a plain number, three significant figures). None is ``-``.

    >>> fmt_quantity(0.04026, "s"), fmt_quantity(0.2225, "%"), fmt_quantity(1332.4, "tokens/s")
    ('40.3 ms', '22.2%', '1,332 tokens/s')
    """
    if value is None:
        return "-"
    v = float(value)
    if not math.isfinite(v):
        return f"{v:g}"
    if unit == "s":
        text = fmt_time(abs(v))
        return "-" + text if v < 0 and text != "0 s" else text
    if unit == "%":
        return fmt_percent(v)
    if unit in ("tokens/s", "req/s"):
        return f"{v:,.0f} {unit}" if abs(v) >= 100 else f"{v:.3g} {unit}"
    if unit in ("B", "B/s", "FLOP/s", "FLOP"):
        return fmt_si(v, unit)
    if unit:
        return f"{v:.3g} {unit}"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def shift_line(s: dict[str, Any]) -> str:
    """One line for a step-time shift (``workbench.review.join.pairs.shift_doc``).

    Paired shifts give the per-step interval and the sign test; unpaired ones the
    Hodges-Lehmann shift with its coverage; either says whether it is beyond the noise.
    """
    verdict = "beyond the noise" if s["beyond_noise"] else "within the noise"
    if s["method"] == "paired":
        return (
            f"paired over {s['pairs']} steps: {fmt_delta(s['estimate_s'])} per step "
            f"(95% interval {fmt_delta(s['low_s'])} to {fmt_delta(s['high_s'])}), "
            f"{s['positive']} of {s['pairs']} steps slower (sign test p = {s['sign_p']:.3g}): "
            f"{verdict}"
        )
    return (
        f"shift {fmt_delta(s['estimate_s'])} (Hodges-Lehmann; interval "
        f"{fmt_delta(s['low_s'])} to {fmt_delta(s['high_s'])}, "
        f"coverage {100 * s['coverage']:.0f}%): {verdict}"
    )
