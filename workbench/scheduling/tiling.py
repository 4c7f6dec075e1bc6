"""The schedule decision of one kernel: a frozen :class:`Tiling` record."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tiling", "accumulator_capacity", "max_tile"]


def accumulator_capacity(hw) -> int:  # hw: workbench.hw.schema.Hardware
    """Per-core bytes for fp32 accumulators in the register file, or 0 if they live in SRAM.

    A core whose register file is at least a quarter of its SRAM (GPU SMs, Eyeriss PEs' psum
    scratchpads) accumulates in registers; half of it is given to accumulators (the rest holds
    fragments and addresses). A core with a small register file next to a large SRAM (a TPU's
    vector registers next to VMEM) accumulates in the SRAM.
    """
    regs = next(
        (m.capacity_bytes for m in hw.memory if m.kind == "register" and m.scope == "per_core"), 0
    )
    return regs // 2 if regs * 4 >= hw.sram.capacity_bytes else 0


def max_tile(native: int, sram_bytes: int) -> int:
    """Largest tile side worth searching: 256 (or 4 native tiles), more for a very large SRAM.

    >>> max_tile(64, 228 * 1024), max_tile(128, 32 * 2**20)
    (256, 2048)
    """
    return max(256, 4 * native, int((sram_bytes / 8) ** 0.5) // native * native)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tiling:
    """How one kernel is tiled and placed in the memory hierarchy.

    For GEMM-like kernels ``tile_m x tile_n`` is the output tile and ``tile_k`` the K-step; for
    fused attention ``tile_m`` is the query tile, ``tile_n`` the key/value tile and ``tile_k`` the
    head dimension; for row kernels ``tile_m`` is rows per tile and ``tile_n`` columns per tile.

    Attributes:
        tile_m, tile_n, tile_k: Tile sizes, elements.
        stages: Pipeline stages (1 = no overlap of load and compute, 2 = double buffering ...).
        split_k: Slices K is split into (partial sums reduced afterwards).
        raster: Order output tiles are visited: ``"mn"`` (n fastest) or ``"nm"``.
        dataflow: ``output_stationary``, ``weight_stationary`` or ``input_stationary``.
        sram_bytes: Per-core SRAM the tile uses (operand tiles x stages, plus accumulators
            when the hardware has no register file for them), bytes.
        sram_capacity_bytes: Per-core SRAM capacity, bytes.
        register_bytes: Accumulator bytes held in the register file (0 if none), per core.
        tiles: Independent work items (output tiles x split-K x batch).
        waves: Waves of ``cores`` concurrent tiles (ceil).
        wave_efficiency: tiles / (waves x cores): the last wave's idle cores.
        padded_flops: FLOPs executed including tile padding (multiply-add = 2).
        passes: Passes over off-chip memory (row kernels: 2 when a row does not fit SRAM).
        barriers: Grid-wide barriers the schedule needs (split rows, split-K reductions).
        traffic: ``(level name, bytes)`` moved at each level from the SRAM outwards.
        spill_bytes: Extra bytes moved because the tile overflows SRAM (forced tiles only).
        compute_s: Time the engine needs for the padded work at its sustained rate, seconds.
        pipeline_s: Time of the tile pipeline including load latency not hidden by stages,
            seconds (>= compute_s).
        source: ``search``, ``override`` or ``heuristic``.
        candidates: Mapspace points evaluated (0 for an override).
    """

    tile_m: int
    tile_n: int
    tile_k: int
    stages: int = 1
    split_k: int = 1
    raster: str = "mn"
    dataflow: str = "output_stationary"
    sram_bytes: int = 0
    sram_capacity_bytes: int = 0
    register_bytes: int = 0
    tiles: int = 1
    waves: int = 1
    wave_efficiency: float = 1.0
    padded_flops: int = 0
    passes: int = 1
    barriers: int = 0
    traffic: tuple[tuple[str, float], ...] = ()
    spill_bytes: float = 0.0
    compute_s: float = 0.0
    pipeline_s: float = 0.0
    source: str = "search"
    candidates: int = 0

    @property
    def fits(self) -> bool:
        """Whether the tile fits the per-core SRAM."""
        return self.sram_bytes <= self.sram_capacity_bytes

    @property
    def shape(self) -> str:
        """Tile as ``MxNxK`` text."""
        return f"{self.tile_m}x{self.tile_n}x{self.tile_k}"

    def traffic_at(self, level: str) -> float:
        """Bytes moved at ``level`` (0 if the level is not listed)."""
        return next((b for name, b in self.traffic if name == level), 0.0)
