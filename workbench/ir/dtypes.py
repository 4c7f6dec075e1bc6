"""Numeric formats and their storage widths.

The workbench names formats by short strings (``"bf16"``, ``"fp8_e4m3"``) everywhere: in ops,
hardware files, CLI flags and run records. :data:`DTYPES` is the one table of what each name means.

``tf32`` is a compute format: it is stored as fp32 (4 bytes) but multiplied on the matrix engine at
TF32 precision. ``int4`` is a weight-only storage format: two values per byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import GraphError

__all__ = ["DTYPES", "DTypeInfo", "bytes_for", "dtype_info"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DTypeInfo:
    """What a numeric format costs and how precise it is.

    Attributes:
        name: Canonical short name.
        bits: Storage width in bits per element.
        is_float: Floating point (True) or integer.
        mantissa_bits: Explicit mantissa bits (floats) or 0 for integers.
        exponent_bits: Exponent bits (floats) or 0 for integers.
        weight_only: Only valid as a storage format for weights (dequantized before compute).
    """

    name: str
    bits: int
    is_float: bool
    mantissa_bits: int
    exponent_bits: int
    weight_only: bool = False

    @property
    def bytes(self) -> float:
        """Storage size per element in bytes (0.5 for int4)."""
        return self.bits / 8


DTYPES: dict[str, DTypeInfo] = {
    d.name: d
    for d in (
        DTypeInfo(name="fp32", bits=32, is_float=True, mantissa_bits=23, exponent_bits=8),
        DTypeInfo(name="tf32", bits=32, is_float=True, mantissa_bits=10, exponent_bits=8),
        DTypeInfo(name="fp16", bits=16, is_float=True, mantissa_bits=10, exponent_bits=5),
        DTypeInfo(name="bf16", bits=16, is_float=True, mantissa_bits=7, exponent_bits=8),
        DTypeInfo(name="fp8_e4m3", bits=8, is_float=True, mantissa_bits=3, exponent_bits=4),
        DTypeInfo(name="fp8_e5m2", bits=8, is_float=True, mantissa_bits=2, exponent_bits=5),
        DTypeInfo(name="int8", bits=8, is_float=False, mantissa_bits=0, exponent_bits=0),
        DTypeInfo(
            name="int4",
            bits=4,
            is_float=False,
            mantissa_bits=0,
            exponent_bits=0,
            weight_only=True,
        ),
    )
}

_ALIASES = {
    "fp8": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "half": "fp16",
    "float": "fp32",
}


def dtype_info(name: str, *, where: str = "") -> DTypeInfo:
    """Look up a format by name (aliases such as ``fp8`` -> ``fp8_e4m3`` accepted).

    Args:
        name: Format name.
        where: Context for the error message (e.g. the op name).

    Returns:
        The format's :class:`DTypeInfo`.

    Raises:
        GraphError: If the name is unknown; the message lists the known names.

    >>> dtype_info("bf16").bytes
    2.0
    """
    key = _ALIASES.get(name, name)
    info = DTYPES.get(key)
    if info is None:
        prefix = f"{where}: " if where else ""
        raise GraphError(f"{prefix}unknown dtype {name!r} (known: {', '.join(DTYPES)})")
    return info


def canonical(name: str, *, where: str = "") -> str:
    """Return the canonical name for a format or alias (``fp8`` -> ``fp8_e4m3``)."""
    return dtype_info(name, where=where).name


def bytes_for(numel: int, dtype: str) -> int:
    """Storage bytes for ``numel`` elements of ``dtype``, rounded up to whole bytes.

    >>> bytes_for(3, "int4")
    2
    """
    return -(-numel * DTYPES[_ALIASES.get(dtype, dtype)].bits // 8)
