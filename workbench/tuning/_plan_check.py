"""Is a tiling one the search could have chosen? Plan-cache entries are checked with this.

A plan cache is a file anyone can edit, copy between machines or half-write; an entry is only
trusted when its tiling is a point of the kernel's mapspace on the hardware it is used for (the
same tile sizes, stages and split-K the search enumerates, with a footprint that fits the
on-chip memory). Anything else (``split_k: 10**6``, a tile larger than SRAM, a tile side the
search never produces) is refused with a one-line reason.
"""

from __future__ import annotations

import numpy as np

from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.attention import attention_mapspace
from workbench.scheduling.gemm import GemmMapspace, gemm_mapspace
from workbench.scheduling.rows import row_mapspace
from workbench.scheduling.tiling import Tiling

__all__ = ["mapspace_problem"]


def _allowed(values: np.ndarray) -> str:
    vals = sorted({int(v) for v in np.ravel(values)})
    return ", ".join(str(v) for v in vals[:12]) + (" ..." if len(vals) > 12 else "")


def _gemm(kernel: Kernel, hw: Hardware, t: Tiling) -> str:
    ms = gemm_mapspace(kernel, hw, search="full")
    axes = (
        ("tile_m", ms.tm),
        ("tile_n", ms.tn),
        ("tile_k", ms.tk),
        ("stages", ms.stages),
        ("split_k", ms.split),
    )
    index = []
    for name, grid in axes:
        value = getattr(t, name)
        hit = np.flatnonzero(np.ravel(grid) == value)
        if hit.size == 0:
            return f"{name} {value} is not in the mapspace (it has {_allowed(grid)})"
        index.append(int(hit[0]))
    if t.raster not in ("mn", "nm"):
        return f"raster {t.raster!r} is not 'mn' or 'nm'"
    flows = [GemmMapspace.dataflow_name(int(d)) for d in np.ravel(ms.dataflow)]
    if t.dataflow not in flows:
        return f"dataflow {t.dataflow!r} is not one of {', '.join(flows)}"
    index += [0 if t.raster == "mn" else 1, flows.index(t.dataflow)]
    if not bool(np.broadcast_to(ms.fits, ms.shape)[tuple(index)]):
        need = int(np.broadcast_to(ms.sram_bytes, ms.shape)[tuple(index)])
        return (
            f"tile {t.shape} needs {need} bytes, more than {hw.sram.name}'s "
            f"{hw.sram.capacity_bytes} bytes"
        )
    return ""


def _attention(kernel: Kernel, hw: Hardware, t: Tiling) -> str:
    p = kernel.attention
    assert p is not None
    if t.tile_k != p.head_dim:
        return f"tile_k {t.tile_k} is not the head dimension {p.head_dim}"
    ms = attention_mapspace(kernel, hw, search="full")
    same = (ms.br == t.tile_m) & (ms.bc == t.tile_n) & (ms.stages == t.stages)
    same &= ms.split == t.split_k
    if not same.any():
        return (
            f"tile {t.tile_m}x{t.tile_n} stages {t.stages} split_k {t.split_k} is not in the "
            f"mapspace (query tiles {_allowed(ms.br)}; key tiles {_allowed(ms.bc)}; "
            f"splits {_allowed(ms.split)})"
        )
    if not (same & ms.fits).any():
        return f"tile {t.tile_m}x{t.tile_n} does not fit {hw.sram.name}"
    return ""


def _rows(kernel: Kernel, hw: Hardware, t: Tiling) -> str:
    ms = row_mapspace(kernel, hw)
    same = (ms.rows_per_tile == t.tile_m) & (ms.cols_per_tile == t.tile_n)
    same &= ms.split == t.split_k
    if t.tile_k != 1 or not same.any():
        return (
            f"tile {t.shape} split_k {t.split_k} is not in the mapspace (rows per tile "
            f"{_allowed(ms.rows_per_tile)}; splits {_allowed(ms.split)})"
        )
    if not (same & ms.fits).any() and ms.fits.any():
        return f"tile {t.shape} does not fit {hw.sram.name}"
    return ""


def mapspace_problem(kernel: Kernel, hw: Hardware, tiling: Tiling) -> str:
    """Why ``tiling`` is not a fitting point of ``kernel``'s mapspace on ``hw`` ("" if it is).

    Args:
        kernel: The kernel the tiling is for.
        hw: The hardware it would run on.
        tiling: The tiling to check (a plan-cache entry).

    Returns:
        One line naming the offending field and what the mapspace allows, or "".
    """
    if kernel.gemm is not None:
        return _gemm(kernel, hw, tiling)
    if kernel.attention is not None:
        return _attention(kernel, hw, tiling)
    if kernel.rows is not None:
        return _rows(kernel, hw, tiling)
    return f"kernel kind {kernel.kind!r} has no tiling to cache"
