"""The mapspace of a vector (row-wise) kernel: rows per tile and whether rows are split.

Loop nest of a row kernel (norm, softmax, reduce, an elementwise chain)::

    for tile of `tile_m` rows (one core each):
        for chunk of `tile_n` columns:        # one chunk when a row fits SRAM
            load, reduce (stats), ...
        (second pass when a row did not fit: reload the chunks, normalise, store)

A reduction whose rows are split across cores (few, long rows) needs one grid-wide barrier to
combine partial statistics. A row that does not fit the per-core SRAM takes a second pass over
off-chip memory (online/Welford statistics keep it at two, not three).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel

__all__ = ["RowMapspace", "row_mapspace"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RowMapspace:
    """Candidate row tilings of a vector kernel, as arrays.

    Attributes:
        rows_per_tile, cols_per_tile: Tile shape, elements.
        split: Rows are split across cores (needs a grid barrier if the kernel reduces).
        passes: Passes over off-chip memory.
        barriers: Grid-wide barriers.
        tiles: Work items.
        sram_bytes, fits: Per-core footprint.
        traffic: Level name -> bytes.
    """

    rows_per_tile: np.ndarray
    cols_per_tile: np.ndarray
    split: np.ndarray
    passes: np.ndarray
    barriers: np.ndarray
    tiles: np.ndarray
    sram_bytes: np.ndarray
    fits: np.ndarray
    traffic: dict[str, np.ndarray]

    @property
    def size(self) -> int:
        """Number of candidates."""
        return int(self.rows_per_tile.size)


def row_mapspace(kernel: Kernel, hw: Hardware) -> RowMapspace:
    """Build the row-tiling mapspace of a vector kernel.

    Args:
        kernel: A kernel with a :class:`~workbench.lowering.kernel.RowProblem`.
        hw: Target hardware.

    Returns:
        Candidates with footprint, passes, barriers and traffic arrays.
    """
    p = kernel.rows
    assert p is not None
    cap = hw.sram.capacity_bytes
    cores = hw.matrix_engine.cores
    row_bytes = p.cols * p.operands * p.elem_bytes
    max_rows = max(1, min(p.rows, 4096))
    r = 2 ** np.arange(int(np.log2(max_rows)) + 1)
    # NOTE: few long rows are split across cores, up to 1024 parts of at least 1024 elements
    # (enough to fill any profile's cores: a 1-D copy of 2 GiB is one row).
    ways = 2 ** np.arange(11)
    split_ways = ways[(ways == 1) | (ways * 1024 <= p.cols)]
    rr, ss = (g.ravel() for g in np.meshgrid(r, split_ways, indexing="ij"))
    cols = -(-p.cols // ss)
    chunk_fits_row = cols * p.operands * p.elem_bytes <= cap
    cols_per_tile = np.where(chunk_fits_row, cols, max(1, int(cap // (p.operands * p.elem_bytes))))
    sram = np.ceil(rr * cols_per_tile * p.operands * p.elem_bytes).astype(np.int64)
    fits = sram <= cap
    whole_row_on_core = (ss == 1) & (row_bytes <= cap)
    passes = np.where(p.reduce & ~whole_row_on_core & (row_bytes > cap), 2, 1)
    barriers = np.where(p.reduce & (ss > 1), 1, 0)
    tiles = -(-p.rows // rr) * ss
    # Keep only sensible candidates: the split is there to fill idle cores.
    useful = (ss == 1) | (-(-p.rows // rr) < cores)
    sel = useful & (fits | ~fits.any())
    if not sel.any():
        sel = np.ones_like(sel)
    rr, ss, cols_per_tile = rr[sel], ss[sel], cols_per_tile[sel]
    passes, barriers, tiles, sram, fits = (
        passes[sel],
        barriers[sel],
        tiles[sel],
        sram[sel],
        fits[sel],
    )
    dram = kernel.bytes_read * passes + kernel.bytes_written
    levels = hw.memory
    s = levels.index(hw.sram)
    traffic = {hw.sram.name: 2.0 * dram}
    for lvl in levels[s + 1 : -1]:
        traffic[lvl.name] = dram.astype(float)
    traffic[levels[-1].name] = dram.astype(float)
    return RowMapspace(
        rows_per_tile=rr,
        cols_per_tile=cols_per_tile,
        split=ss,
        passes=passes,
        barriers=barriers,
        tiles=tiles,
        sram_bytes=sram,
        fits=fits,
        traffic=traffic,
    )
