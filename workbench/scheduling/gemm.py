"""The mapspace of a GEMM-like kernel, evaluated as NumPy arrays (no Python loop per candidate).

Dimensions: tile M, tile N (multiples of the matrix engine's native shape), K-step (a multiple of
its native K), pipeline stages, split-K, raster order, and dataflow where the hardware offers more
than one. For every candidate the arrays hold the per-core SRAM it needs (checked exactly against
the capacity), the work items and waves, the padded FLOPs, and the bytes moved at every memory
level from the SRAM outwards.

Traffic model (output-stationary, the default)::

    fill(A) = ceil(N / tile_n) * M * K * a_bytes      # each column of output tiles re-reads A
    fill(B) = ceil(M / tile_m) * N * K * b_bytes      # each row of output tiles re-reads B
    sram    = 2 * (fill(A) + fill(B)) + C             # written into SRAM once, read once
    cache   = fill(A) + fill(B) + C + epilogue + split-K partials
    dram    = A and B from off-chip: an operand whose whole matrix fits in half the cache is
              read once; otherwise the streamed operand is re-read once per band of concurrent
              tiles (a wave covers a band of rows, raster "mn", or of columns, raster "nm"), or,
              on GPUs and NPUs, once per group of up to 8 rows (columns) of tiles whose panels
              stay in the cache: the library's grouped (swizzled) raster, where it reads less.

Weight-stationary keeps each B tile in place (B read once, C partial sums re-read per K-block);
input-stationary does the same for A. The floor is the kernel's compulsory traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.hw.schema import Hardware
from workbench.lowering.kernel import GemmProblem, Kernel
from workbench.options import TileOverride
from workbench.scheduling.tiling import accumulator_capacity, max_tile

__all__ = [
    "CACHE_USABLE_FRACTION",
    "MAX_RASTER_GROUP",
    "GemmMapspace",
    "gemm_mapspace",
    "native_mn",
]

#: Share of a shared cache a GEMM's resident operand may use (the rest: other operand's stream,
#: output, other kernels' lines). An assumption, stated where it is used.
CACHE_USABLE_FRACTION = 0.5
_MULTIPLES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
_STAGES = (1, 2, 3, 4)
_SPLITS = (1, 2, 4, 8)
_DATAFLOWS = ("output_stationary", "weight_stationary", "input_stationary")


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmMapspace:
    """Every candidate tiling of one GEMM kernel, as NumPy arrays that broadcast to ``shape``.

    Each decision varies along its own axis of ``shape`` and every derived array depends only on
    the axes it needs (a sparse grid); ``np.broadcast_to(x, shape).flat[i]`` is candidate ``i``.

    Attributes:
        tm, tn, tk, stages, split, raster, dataflow: Candidate decisions (``raster`` 0 = "mn",
            1 = "nm"; ``dataflow`` indexes :data:`_DATAFLOWS`).
        sram_bytes, register_bytes: Per-core storage each needs, bytes.
        fits: Candidate fits the SRAM (and register file).
        tiles, waves: Work items and waves of concurrent tiles.
        k_iters: K-steps per tile.
        padded_flops: FLOPs executed including padding.
        traffic: Level name -> bytes moved at that level.
        spill: Extra bytes from overflowing SRAM (non-zero only for forced tiles).
        source: ``search``, ``override`` or ``heuristic``.
        shape: The mapspace's shape (one axis per decision).
    """

    tm: np.ndarray
    tn: np.ndarray
    tk: np.ndarray
    stages: np.ndarray
    split: np.ndarray
    raster: np.ndarray
    dataflow: np.ndarray
    sram_bytes: np.ndarray
    register_bytes: np.ndarray
    fits: np.ndarray
    tiles: np.ndarray
    waves: np.ndarray
    k_iters: np.ndarray
    padded_flops: np.ndarray
    traffic: dict[str, np.ndarray]
    spill: np.ndarray
    source: str
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """Number of candidates."""
        return math.prod(self.shape)

    @staticmethod
    def dataflow_name(index: int) -> str:
        """Name of dataflow ``index``."""
        return _DATAFLOWS[index]


def _sizes(native: int, dim: int, cap: int) -> np.ndarray:
    """Tile sizes: native multiples up to ``cap`` and no larger than the padded dimension."""
    limit = max(native, min(cap, -(-dim // native) * native))
    vals = [native * m for m in _MULTIPLES if native * m <= limit]
    return np.array(vals or [native], dtype=np.int64)


def _library(sizes: np.ndarray, dim: int, sides: tuple[int, ...]) -> np.ndarray:
    """Tile sizes a vendor library ships (``sides``) among ``sizes``.

    A dimension smaller than the library's smallest tile side keeps the instruction granularity
    (the library's skinny/GEMV kernels, e.g. a swapped decode GEMM's few rows); a side the
    library lacks is never searched, so wave and padding losses are those of the library's tiles.

    >>> _library(np.array([64, 128, 192, 256]), 1024, (64, 128, 256)).tolist()
    [64, 128, 256]
    >>> _library(np.array([8, 16, 24, 32]), 32, (64, 128, 256)).tolist()
    [8, 16, 24, 32]
    """
    if not sides or dim < sides[0]:
        return sizes
    kept = sizes[np.isin(sizes, sides)]
    return kept if kept.size else sizes


def native_mn(p: GemmProblem, hw: Hardware) -> tuple[int, int]:
    """Tile granularity (M, N) of ``p``: the engine's native shape, swapped for skinny GEMMs.

    A GEMM with fewer rows than the instruction's M (decode: M = batch = 1..16) is run as
    ``C^T = B^T A^T`` by GEMV/skinny kernels (CUTLASS and TensorRT-LLM "swap AB"): the small M
    takes the instruction's narrow N side (Hopper wgmma m64nNk16, N a multiple of 8; Ampere
    mma m16n8k16), so a decode row is padded to 8, not to 64. Only where the N side is the
    narrower one (GPU tensor cores); a square systolic array pads either way, and a software
    host runs the exact slice.

    >>> from workbench.hw import load_hardware
    >>> gemv = GemmProblem(batch=1, m=1, n=4096, k=4096, a_bytes=2, b_bytes=2, c_bytes=2)
    >>> native_mn(gemv, load_hardware("h100-sxm")), native_mn(gemv, load_hardware("tpu-v4"))
    ((8, 64), (128, 128))
    """
    me = hw.matrix_engine
    swap = p.m < me.native_tile_m and me.native_tile_n < me.native_tile_m and hw.hardware_scheduled
    return (me.native_tile_n, me.native_tile_m) if swap else (me.native_tile_m, me.native_tile_n)


def _axes(p: GemmProblem, hw: Hardware, override: TileOverride | None, search: str):
    me = hw.matrix_engine
    nat_m, nat_n = native_mn(p, hw)
    cap = max_tile(me.native_tile_m, hw.sram.capacity_bytes)
    if override is not None:
        tm, tn, tk = (np.array([v], dtype=np.int64) for v in (override.m, override.n, override.k))
    elif search == "heuristic":
        tm = np.array([min(128, _sizes(nat_m, p.m, cap)[-1])], dtype=np.int64)
        tn = np.array([min(128, _sizes(nat_n, p.n, cap)[-1])], dtype=np.int64)
        tk = np.array([min(4 * me.native_tile_k, _sizes(me.native_tile_k, p.k, 512)[-1])])
    else:
        tm = _library(_sizes(nat_m, p.m, cap), p.m, me.library_tile_sides)
        tn = _library(_sizes(nat_n, p.n, cap), p.n, me.library_tile_sides)
        big_k = max_tile(me.native_tile_k, hw.sram.capacity_bytes) // 2
        k_cap = max(128, me.native_tile_k * 2, big_k)
        tk = _sizes(me.native_tile_k, p.k, k_cap)
    if search == "heuristic" and override is None:
        stages, splits = np.array([2]), np.array([1])
    else:
        stages = np.array(_STAGES)
        splits = np.array([s for s in _SPLITS if s == 1 or p.k >= 8 * s * me.native_tile_k])
    if override is not None and override.split_k:
        splits = np.array([override.split_k])
    if override is not None and override.stages:
        stages = np.array([override.stages])
    flows = np.array([_DATAFLOWS.index(d) for d in me.dataflows])
    return tm, tn, tk, stages, splits, np.array([0, 1]), flows


def gemm_mapspace(
    kernel: Kernel, hw: Hardware, *, override: TileOverride | None = None, search: str = "full"
) -> GemmMapspace:
    """Build and evaluate the mapspace of a GEMM-like kernel.

    Args:
        kernel: A kernel with a :class:`GemmProblem`.
        hw: Target hardware.
        override: A forced tile (other dimensions are still searched).
        search: ``"full"`` or ``"heuristic"`` (the single default candidate).

    Returns:
        The candidates and their footprint and traffic arrays.
    """
    p = kernel.gemm
    assert p is not None
    # NOTE: sparse grids: each intermediate is computed over only the axes it depends on and
    # broadcast to the full mapspace at the end.
    grids = np.meshgrid(*_axes(p, hw, override, search), indexing="ij", sparse=True)
    shape = np.broadcast_shapes(*(g.shape for g in grids))
    tm, tn, tk, st, sk, ra, df = grids
    acc_cap = accumulator_capacity(hw)
    acc = tm * tn * 4  # fp32 accumulators
    operands = (tm * p.a_bytes + tn * p.b_bytes) * tk * st
    # NOTE: a software-issued host accumulates into the output array itself (its traffic is
    # costed per K-step), not into a reserved SRAM buffer.
    acc_in_sram = not acc_cap and hw.hardware_scheduled
    sram = np.ceil(operands + (acc if acc_in_sram else 0)).astype(np.int64)
    regs = acc if acc_cap else np.zeros_like(acc)
    fits = sram <= hw.sram.capacity_bytes
    if acc_cap:
        fits = fits & (regs <= acc_cap)
    grid_m, grid_n = -(-p.m // tm), -(-p.n // tn)
    k_split = -(-p.k // sk)
    k_iters = -(-k_split // tk)
    tiles = p.batch * grid_m * grid_n * sk
    cores = hw.matrix_engine.cores
    waves = -(-tiles // cores)
    padded = 2.0 * tiles * tm * tn * tk * k_iters  # float64: past 2^63 an int64 wraps
    traffic, spill = _traffic(p, hw, tm, tn, tk, sk, ra, df, grid_m, grid_n, tiles, sram)
    source = "override" if override is not None else search if search == "heuristic" else "search"
    if not fits.any() and override is None:
        source = "heuristic"

    return GemmMapspace(
        tm=tm,
        tn=tn,
        tk=tk,
        stages=st,
        split=sk,
        raster=ra,
        dataflow=df,
        sram_bytes=sram,
        register_bytes=regs,
        fits=fits,
        tiles=tiles,
        waves=waves,
        k_iters=k_iters,
        padded_flops=padded,
        traffic=traffic,
        spill=spill,
        source=source,
        shape=shape,
    )


def _traffic(p, hw, tm, tn, tk, sk, ra, df, grid_m, grid_n, tiles, sram):
    """Bytes at each level from the SRAM outwards, and spill bytes (see module docstring)."""
    a_total = p.batch * p.m * p.k * p.a_bytes
    b_total = p.batch * p.k * p.n * p.b_bytes
    c_total = p.batch * p.m * p.n * p.c_bytes
    grid_k = -(-p.k // tk)
    ws, is_ = df == 1, df == 2
    fill_a = np.where(is_, a_total, grid_n * a_total)
    fill_b = np.where(ws, b_total, grid_m * b_total)
    partial_sums = np.where(ws | is_, 2.0 * p.batch * p.m * p.n * 4 * (grid_k - 1), 0.0)
    # NOTE: weight-stationary accumulates a whole M x tile_n column panel of C (input-stationary
    # a tile_m x N row panel); it stays on chip when it fits half the SRAM, else it spills.
    panel = np.where(ws, p.m * tn * 4, np.where(is_, tm * p.n * 4, 0))
    partial_offchip = np.where(panel <= hw.sram.capacity_bytes / 2, 0.0, partial_sums)
    split_partials = np.where(sk > 1, 2.0 * p.batch * p.m * p.n * 4 * sk, 0.0)
    # NOTE: a cluster of cores shares (multicasts) each B tile load from the next level.
    fill = fill_a + fill_b / hw.matrix_engine.cluster_size
    levels = hw.memory
    s = levels.index(hw.sram)
    cap = hw.sram.capacity_bytes
    spill = np.where(sram > cap, 2.0 * fill * (sram - cap) / np.maximum(sram, 1), 0.0)
    traffic: dict[str, np.ndarray] = {hw.sram.name: 2.0 * fill + c_total + partial_sums}
    caches = [m for m in levels[s + 1 : -1] if m.kind in ("cache", "sram")]
    for lvl in caches:
        traffic[lvl.name] = (
            fill + c_total + p.epilogue_bytes + split_partials + spill + partial_offchip
        )
    dram = _dram_traffic(p, hw, tm, tn, ra, df, grid_m, grid_n, tiles, fill_a, fill_b, caches)
    floor = a_total / p.a_expansion + b_total + c_total + p.epilogue_bytes
    dram = np.maximum(dram + c_total + p.epilogue_bytes, floor)
    if not caches:
        dram = dram + split_partials + spill + partial_offchip
    traffic[levels[-1].name] = dram
    return traffic, spill


def _dram_traffic(p, hw, tm, tn, ra, df, grid_m, grid_n, tiles, fill_a, fill_b, caches):
    """Operand bytes read from off-chip memory given cache reuse across a wave."""
    if not caches:
        return fill_a / p.a_expansion + fill_b
    usable = CACHE_USABLE_FRACTION * max(c.capacity_bytes for c in caches)
    wave = np.minimum(tiles // max(p.batch, 1), hw.matrix_engine.cores).clip(min=1)
    # raster "mn": a wave spans rows_w rows of tiles; "nm": cols_w columns.
    rows_w = np.maximum(1, -(-wave // grid_n))
    cols_w = np.maximum(1, -(-wave // grid_m))
    # NOTE: seen from off-chip memory, A is the tensor it is gathered from (bytes per A element
    # a_bytes / e) where the halo a wave's tiles share stays in the cache (_halo_expansion).
    rows_in_flight = np.where(ra == 0, rows_w, np.minimum(wave, grid_m))
    ab = p.a_bytes / _halo_expansion(p, tm, rows_in_flight, usable)
    a_mat = p.m * p.k * ab
    b_mat = p.k * p.n * p.b_bytes
    bands_m = -(-grid_m // rows_w)
    bands_n = -(-grid_n // cols_w)
    b_mn = np.where(b_mat <= usable, b_mat, bands_m * b_mat)
    a_mn = np.where(rows_w * tm * p.k * ab <= usable, a_mat, grid_n * a_mat)
    a_nm = np.where(a_mat <= usable, a_mat, bands_n * a_mat)
    b_nm = np.where(cols_w * tn * p.k * p.b_bytes <= usable, b_mat, grid_m * b_mat)
    if hw.hardware_scheduled:
        a_mn, b_mn, a_nm, b_nm = _grouped(
            p, ab, tm, tn, grid_m, grid_n, usable, a_mn, b_mn, a_nm, b_nm
        )
    a = np.where(ra == 0, a_mn, a_nm)
    b = np.where(ra == 0, b_mn, b_nm)
    a = np.minimum(a * p.batch, fill_a * ab / p.a_bytes)
    b = np.minimum(b * p.batch, fill_b)
    return a + b


def _halo_expansion(p: GemmProblem, tm, rows: np.ndarray, usable: float) -> np.ndarray:
    """A elements per off-chip element read: ``p.a_expansion`` where the halo stays cached, else 1.

    An implicit-GEMM conv gathers each input element into up to ``a_expansion`` rows of its A
    matrix (the R x S windows overlap); a tile re-reads, K-step after K-step, the input rows its
    neighbours in the same wave read too. Those re-reads come from the shared cache while the
    input under the ``rows`` rows of tiles in flight (``rows x tm`` rows of A over the whole
    K, read once) fits its usable part; otherwise every A element is charged to off-chip
    memory as if nothing were shared (conservative).

    >>> p = GemmProblem(batch=1, m=2**20, n=64, k=576, a_bytes=1, b_bytes=1, c_bytes=1,
    ...     a_expansion=9.0)
    >>> _halo_expansion(p, 128, np.array([4, 4096]), 2**20).tolist()
    [9.0, 1.0]
    """
    if p.a_expansion == 1.0:
        return np.ones_like(rows, dtype=float)
    unique = np.minimum(rows * tm, p.m) * p.k * p.a_bytes / p.a_expansion
    return np.where(unique <= usable, p.a_expansion, 1.0)


#: Most rows (columns) of tiles a library's grouped raster visits before moving on: CUTLASS's
#: threadblock swizzle ``GemmIdentityThreadblockSwizzle<N>`` is instantiated with N up to 8, and
#: CUTLASS 3's persistent scheduler takes ``max_swizzle_size`` in {1, 2, 4, 8}.
MAX_RASTER_GROUP = 8


def _grouped(p, ab, tm, tn, grid_m, grid_n, usable, a_mn, b_mn, a_nm, b_nm):
    """Off-chip operand bytes with the library's grouped (swizzled) raster, where it reads less.

    GPU libraries do not visit output tiles row after row: a grouped raster walks a group of G
    rows of tiles column by column, so the G row panels of A (``tm x K`` each) stay in the cache
    for the whole sweep and every column panel of B is read once per group, not once per row
    band (and transposed for ``"nm"``). G is the most panels half the cache holds, at most
    :data:`MAX_RASTER_GROUP`. Each raster keeps the cheaper of its band and grouped traffic (the
    library's choice). Software-issued hosts run the plain raster and keep the band model.
    ``ab`` is A's off-chip bytes per element (below ``p.a_bytes`` for a conv whose halo stays
    cached: :func:`_halo_expansion`).
    """
    a_mat = p.m * p.k * ab
    b_mat = p.k * p.n * p.b_bytes
    a_panel = tm * p.k * ab
    b_panel = tn * p.k * p.b_bytes
    g_m = np.clip(usable // np.maximum(a_panel, 1), 1, np.minimum(grid_m, MAX_RASTER_GROUP))
    g_n = np.clip(usable // np.maximum(b_panel, 1), 1, np.minimum(grid_n, MAX_RASTER_GROUP))
    ga_mn = np.where(a_panel <= usable, a_mat, grid_n * a_mat)
    gb_mn = np.where(b_mat <= usable, b_mat, -(-grid_m // g_m) * b_mat)
    gb_nm = np.where(b_panel <= usable, b_mat, grid_m * b_mat)
    ga_nm = np.where(a_mat <= usable, a_mat, -(-grid_n // g_n) * a_mat)
    use_mn = ga_mn + gb_mn < a_mn + b_mn
    use_nm = ga_nm + gb_nm < a_nm + b_nm
    return (
        np.where(use_mn, ga_mn, a_mn),
        np.where(use_mn, gb_mn, b_mn),
        np.where(use_nm, ga_nm, a_nm),
        np.where(use_nm, gb_nm, b_nm),
    )


def native_padding(p: GemmProblem, tm: int, tn: int) -> float:
    """Fraction of the output tile grid that is padding (tile quantization), 0..1.

    >>> round(native_padding(GemmProblem(batch=1, m=257, n=256, k=64, a_bytes=2, b_bytes=2,
    ...     c_bytes=2), 128, 128), 3)
    0.331
    """
    padded = math.ceil(p.m / tm) * tm * math.ceil(p.n / tn) * tn
    return 1 - p.m * p.n / padded
