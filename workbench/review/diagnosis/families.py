"""Kernel families: a kernel's name with its layer index starred, and the natural sort order."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["family_of", "natural_key"]

_LAYER = re.compile(r"\.(\d+)\.")


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key that orders digit runs as numbers (``layers.2`` before ``layers.10``).

    >>> sorted(["layers.10.x", "layers.2.x", "embed"], key=natural_key)
    ['embed', 'layers.2.x', 'layers.10.x']
    """
    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", name))


def family_of(name: str) -> str:
    """A kernel's family: the layer index starred (``layers.*.mlp.down_proj``).

    >>> family_of("layers.12.mlp.down_proj")
    'layers.*.mlp.down_proj'
    """
    return _LAYER.sub(".*.", name, count=1)
