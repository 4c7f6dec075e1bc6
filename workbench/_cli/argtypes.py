"""Strict argparse value types: plain ASCII decimals in a stated range, non-empty names.

``int("+5")``, ``int("1_000")`` and ``int("٣")`` (an Arabic-Indic digit) all parse in Python;
a command line that means a count of chips or tokens should not. Every numeric option of the CLI
goes through :func:`count` or :func:`number`, so a bad value is one argparse error line (exit 2)
naming the option, the value and the range. An empty (or blank) value for any option or argument
is refused before any of these run, by the CLI's parser (``workbench.cli``): ``--on ''`` names no
profile, and taken as "not given" it would be silently ignored.

Options that several commands take with the same type and default are added here, once.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

__all__ = [
    "DIGITS",
    "add_blas_threads",
    "add_connect_timeout",
    "count",
    "name",
    "number",
    "parse_count",
]

#: A plain ASCII decimal integer: digits only, no sign, no underscores, no other scripts.
DIGITS = re.compile(r"[0-9]{1,19}")
#: A plain ASCII decimal number (optionally with a fraction and an exponent), no sign.
_DECIMAL = re.compile(r"(?:[0-9]{1,19}(?:\.[0-9]{0,19})?|\.[0-9]{1,19})(?:[eE][+-]?[0-9]{1,3})?")


def parse_count(text: str, lo: int, hi: int, what: str = "value") -> int:
    """``text`` as an integer in ``[lo, hi]``, or ValueError with one readable line.

    >>> parse_count("8", 1, 64)
    8
    >>> parse_count("+5", 1, 64)
    Traceback (most recent call last):
    ...
    ValueError: value '+5' is not a plain decimal integer (digits 0-9 only)
    """
    if not isinstance(text, str) or not DIGITS.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not a plain decimal integer (digits 0-9 only)")
    value = int(text)
    if not lo <= value <= hi:
        raise ValueError(f"{what} {value} is outside {lo:,}..{hi:,}")
    return value


def count(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer option in ``[lo, hi]``.

    Args:
        lo: Smallest value accepted.
        hi: Largest value accepted.

    Returns:
        A converter raising :class:`argparse.ArgumentTypeError` (one line, exit 2).
    """

    def convert(text: str) -> int:
        try:
            return parse_count(text, lo, hi)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = "integer"
    return convert


def number(lo: float, hi: float, *, open_lo: bool = False) -> Callable[[str], float]:
    """An argparse ``type=`` for a finite decimal option in ``[lo, hi]`` (``(lo, hi]`` if open).

    Args:
        lo: Smallest value accepted (excluded when ``open_lo``).
        hi: Largest value accepted.
        open_lo: Refuse ``lo`` itself (a duration that must be positive).

    Returns:
        A converter raising :class:`argparse.ArgumentTypeError` (one line, exit 2).
    """

    def convert(text: str) -> float:
        if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a plain decimal number (digits 0-9, '.', an exponent)"
            )
        value = float(text)
        low_ok = value > lo if open_lo else value >= lo
        if not math.isfinite(value) or not low_ok or value > hi:
            bound = f"({lo:g}" if open_lo else f"[{lo:g}"
            raise argparse.ArgumentTypeError(f"{text} is outside {bound}, {hi:g}]")
        return value

    convert.__name__ = "number"
    return convert


def name(text: str) -> str:
    """An argparse ``type=`` for a name: non-empty, printable, no surrounding blanks."""
    if not isinstance(text, str) or not text.strip():
        raise argparse.ArgumentTypeError("an empty value is not a name")
    if text != text.strip() or any(not ch.isprintable() for ch in text):
        raise argparse.ArgumentTypeError(f"{text!r} has blanks around it or control characters")
    return text


def add_blas_threads(p: argparse.ArgumentParser, help: str) -> None:
    """Add ``--blas-threads`` (0-1024, default 1; 0 = the BLAS library's default)."""
    p.add_argument("--blas-threads", type=count(0, 1024), default=1, help=help)


def add_connect_timeout(p: argparse.ArgumentParser) -> None:
    """Add ``--connect-timeout``: seconds to wait for a Dask scheduler, (0, 3600], default 5."""
    p.add_argument(
        "--connect-timeout",
        type=number(0, 3600, open_lo=True),
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for the Dask scheduler to answer (default 5 s)",
    )
