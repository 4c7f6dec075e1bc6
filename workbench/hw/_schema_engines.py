"""Schema of a chip's compute engines and memory levels (part of :mod:`workbench.hw.schema`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from workbench.hw._schema_base import _dtype_map, _Model
from workbench.ir.dtypes import DTYPES, canonical

__all__ = ["VECTOR_CLASSES", "FormatEfficiency", "MatrixEngine", "MemoryLevel", "VectorUnit"]

#: The vector-kernel classes a host's per-class rates are looked up by
#: (:func:`workbench.cost.host.vector_class`); any other key would be silently ignored.
VECTOR_CLASSES = ("layernorm", "rmsnorm", "softmax", "reduce", "elementwise")


def _check_shape(v: tuple[int, int, int] | None, name: str) -> tuple[int, int, int] | None:
    if v is not None and any(n <= 0 for n in v):
        raise ValueError(f"{name}: every side of (m, n, k) must be positive, got {list(v)}")
    return v


def _check_rate_table(v: tuple[tuple[int, float], ...], name: str) -> None:
    sides = [n for n, _ in v]
    if any(n <= 0 for n in sides) or sides != sorted(set(sides)):
        raise ValueError(f"{name}: sides must be positive and increasing")
    if not all(0 < r < float("inf") for _, r in v):
        raise ValueError(f"{name}: rates must be finite and > 0")


def _check_classes(keys: object, name: str) -> None:
    bad = [k for k in keys if k not in VECTOR_CLASSES]  # type: ignore[attr-defined]
    if bad:
        raise ValueError(
            f"{name}: unknown kernel class {', '.join(map(repr, bad))} "
            f"(known: {', '.join(VECTOR_CLASSES)})"
        )


class FormatEfficiency(_Model):
    """A measured large-GEMM rate of one format, as a fraction of that format's peak."""

    efficiency: float = Field(gt=0, le=1, description="Measured rate over the format's peak.")
    shape: tuple[int, int, int] = Field(description="(m, n, k) of the measured GEMM.")

    @field_validator("shape")
    @classmethod
    def _check_shape(cls, v: tuple[int, int, int]) -> tuple[int, int, int]:
        _check_shape(v, "shape")
        return v


class MatrixEngine(_Model):
    """The GEMM engine (tensor cores, MXUs, MMEs, a systolic PE array)."""

    cores: int = Field(
        gt=0,
        description="Independent compute units that each run one tile at a time (SMs, CUs, MXU cores).",
    )
    native_tile_m: int = Field(
        gt=0, description="Tile M must be a multiple of this (instruction/array shape), elements."
    )
    native_tile_n: int = Field(gt=0, description="Tile N must be a multiple of this, elements.")
    native_tile_k: int = Field(
        gt=0, description="Tile K (K-step) must be a multiple of this, elements."
    )
    clock_hz: float = Field(gt=0, description="Clock the peak figures assume, Hz.")
    peak_flops_per_s: dict[str, float] = Field(
        description="Dense whole-chip peak per dtype, FLOP/s (multiply-add = 2). A dtype absent here is not supported by the engine."
    )
    efficiency: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Fraction of peak the engine sustains on a large, well-tiled GEMM (measured maximum achievable matmul FLOP/s over peak): clock and issue limits the tile model does not capture.",
    )
    call_rates: tuple[tuple[int, float], ...] = Field(
        default=(),
        description="Software-scheduled hosts: achieved FLOP/s of one square library matmul call by its side, as (side, FLOP/s) pairs in increasing side; empty = every tile runs at the sustained peak.",
    )
    efficiency_shape: tuple[int, int, int] | None = Field(
        default=None,
        description="(m, n, k) of the GEMM the efficiency was measured at. Given, the tile model's own losses at that shape (waves, K-step overhead, prologue and epilogue, cache loads) are taken out of the derate so they count once, and the model reproduces the measurement there; None = the derate is applied to the math as is.",
    )
    format_efficiency: dict[str, FormatEfficiency] = Field(
        default_factory=dict,
        description="Formats whose measured large-GEMM rate differs from the efficiency figure (e.g. FP8, whose scaling epilogue and doubled math rate leave a lower share of peak), each with its measured fraction and shape; counted once, as efficiency_shape is.",
    )
    fold_skew_cycles: int = Field(
        default=0,
        ge=0,
        description="Spatial (systolic) arrays: cycles of fill and drain skew of the array (rows + columns - 2 for an R x C array, H. T. Kung 1982), exposed once per tile (its folds stream back to back: weights double-buffered, the next wavefront entering as the last leaves). 0 = an instruction-issued engine (GPU tensor cores).",
    )
    kstep_overhead_s: float = Field(
        default=0.0,
        ge=0,
        description="Fixed time per K-step of a tile on top of its math: the pipeline barrier (wait/arrive) and the issue of the next stage's loads, seconds. Makes very short K-steps cost what they do.",
    )
    skinny_call_rates: tuple[tuple[int, float], ...] = Field(
        default=(),
        description="Software-scheduled hosts: achieved FLOP/s of one library matmul call of the given number of rows (M) with large K and N, as (rows, FLOP/s) pairs in increasing rows: library microkernels and the packing of B are amortized over the rows, so a call of 8 rows runs far below a square call of the same work. Empty = calls are rated by call_rates alone.",
    )
    k_major_dtypes: tuple[str, ...] = Field(
        default=(),
        description="Formats whose B operand must be K-major (contiguous along K) on this engine; an N-major B (e.g. V in P x V) is transposed first or stored transposed by its producer.",
    )
    legacy_mma_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Fraction of the peak reachable with the previous generation's synchronous warp-level MMA (mma.sync) instead of the engine's own asynchronous instruction (Hopper wgmma); a kernel written for the older instruction (FlashAttention-2 on Hopper), or a GEMM whose operand strides are not multiples of 16 bytes (no TMA: the library falls back to a warp-level MMA kernel), runs at this fraction. 1 = no such split.",
    )
    cluster_size: int = Field(
        default=1,
        ge=1,
        description="Cores that share one operand tile load from the next level (multicast within a thread-block cluster); 1 = no sharing.",
    )
    library_tile_sides: tuple[int, ...] = Field(
        default=(),
        description="CTA tile sides (elements) the vendor GEMM library ships kernels for (CUTLASS/cuBLAS: 64, 128, 256): tile M and N are searched among these (the narrow side of a skinny, swapped GEMM keeps the instruction's granularity). Empty = any multiple of the native tile (a compiler that generates the tile it wants).",
    )
    core_load_bytes_per_clk: float = Field(
        default=0.0,
        ge=0,
        description="Bytes per core clock one core can load from the level above its SRAM (its port into the on-chip network): an under-occupied GEMM's few active cores cannot pull the whole level's bandwidth. 0 = no per-core limit (the level's bandwidth is shared among the active cores).",
    )
    preferred_layout: Literal["NHWC", "NCHW"] = Field(
        default="NHWC",
        description="Activation layout the engine's conv kernels want (implicit GEMM reads NHWC on tensor cores).",
    )
    dataflows: tuple[Literal["output_stationary", "weight_stationary", "input_stationary"], ...] = (
        Field(
            default=("output_stationary",),
            min_length=1,
            description="Dataflows the engine can run; the first is its default.",
        )
    )

    @field_validator("peak_flops_per_s")
    @classmethod
    def _check_peaks(cls, v: dict[str, float]) -> dict[str, float]:
        return _dtype_map(v)

    @field_validator("skinny_call_rates", "call_rates")
    @classmethod
    def _check_call_tables(
        cls, v: tuple[tuple[int, float], ...], info: ValidationInfo
    ) -> tuple[tuple[int, float], ...]:
        _check_rate_table(v, info.field_name or "call_rates")
        return v

    @field_validator("efficiency_shape")
    @classmethod
    def _check_efficiency_shape(cls, v: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        return _check_shape(v, "efficiency_shape")

    @field_validator("library_tile_sides")
    @classmethod
    def _check_sides(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(n <= 0 for n in v) or list(v) != sorted(set(v)):
            raise ValueError("library_tile_sides: sides must be positive and increasing")
        return v

    @field_validator("k_major_dtypes")
    @classmethod
    def _check_k_major(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for d in v:
            if d not in DTYPES and canonical(d, where="") not in DTYPES:
                raise ValueError(f"unknown dtype {d!r}")
        return tuple(canonical(d) for d in v)


class VectorUnit(_Model):
    """The SIMD / vector / scalar units that run everything that is not a GEMM."""

    peak_flops_per_s: dict[str, float] = Field(
        description="Whole-chip peak of non-GEMM arithmetic per dtype, FLOP/s."
    )
    special_function_ops_per_s: float = Field(
        default=0.0,
        ge=0,
        description="Whole-chip rate of transcendental ops (exp, rsqrt) per second; 0 = same as the fp32 vector rate.",
    )
    kernel_flops_per_s: dict[str, float] = Field(
        default_factory=dict,
        description="Software-scheduled hosts: effective FLOP/s (library FLOP convention) of the execution engine's vector kernels per class (layernorm, rmsnorm, softmax, reduce, elementwise; fused attention's online softmax uses softmax), measured by calibration; a class not listed uses peak_flops_per_s. Empty on hardware.",
    )
    gather_bytes_per_s: float = Field(
        default=0.0,
        ge=0,
        description="Software-scheduled hosts: bytes/s at which the engine gathers an im2col tile for a convolution (bytes written); 0 = implicit-GEMM addressing costs nothing extra (hardware).",
    )
    row_rates: dict[str, tuple[tuple[int, float], ...]] = Field(
        default_factory=dict,
        description="Software-scheduled hosts: effective FLOP/s (library FLOP convention) of the engine's row kernels per class (layernorm, rmsnorm, softmax; fused attention's online softmax uses softmax) by row length, as (row length, FLOP/s) pairs in increasing length: each row's reductions and broadcasts are library inner loops whose cost per element depends on the row length. Overrides kernel_flops_per_s for row kernels; measured by calibration; empty on hardware.",
    )
    transpose_rates: tuple[tuple[int, int, float], ...] = Field(
        default=(),
        description="Software-scheduled hosts: elements/s of the engine's tiled 2-D transpose (a layout-transform kernel) by the source's row length and the transpose's elements, as (row length, elements, elements/s) triples sorted by row length then elements, every row length at the same element counts: the strided side makes the rate depend on the row length, and the footprint's cache level on the size. Empty = a transpose moves its bytes at the memory levels' copy rates (hardware).",
    )

    @field_validator("peak_flops_per_s")
    @classmethod
    def _check_peaks(cls, v: dict[str, float]) -> dict[str, float]:
        return _dtype_map(v)

    @field_validator("kernel_flops_per_s")
    @classmethod
    def _check_kernel_rates(cls, v: dict[str, float]) -> dict[str, float]:
        _check_classes(v, "kernel_flops_per_s")
        bad = [k for k, r in v.items() if not r > 0]
        if bad:
            raise ValueError(f"kernel_flops_per_s: rates must be > 0 ({', '.join(bad)})")
        return v

    @field_validator("row_rates")
    @classmethod
    def _check_row_rates(
        cls, v: dict[str, tuple[tuple[int, float], ...]]
    ) -> dict[str, tuple[tuple[int, float], ...]]:
        _check_classes(v, "row_rates")
        for name, table in v.items():
            lengths = [n for n, _ in table]
            if not table or any(n <= 0 for n in lengths) or lengths != sorted(set(lengths)):
                raise ValueError(f"row_rates.{name}: row lengths must be positive and increasing")
            if not all(0 < r < float("inf") for _, r in table):
                raise ValueError(f"row_rates.{name}: rates must be finite and > 0")
        return v

    @field_validator("transpose_rates")
    @classmethod
    def _check_transpose_rates(
        cls, v: tuple[tuple[int, int, float], ...]
    ) -> tuple[tuple[int, int, float], ...]:
        keys = [(w, n) for w, n, _ in v]
        if any(w <= 0 or n <= 0 for w, n in keys) or keys != sorted(set(keys)):
            raise ValueError(
                "transpose_rates: (row length, elements) must be positive and increasing"
            )
        sizes = {w: [n for x, n in keys if x == w] for w, _ in keys}
        if len({tuple(s) for s in sizes.values()}) > 1:
            raise ValueError("transpose_rates: every row length needs the same element counts")
        if not all(0 < r < float("inf") for *_, r in v):
            raise ValueError("transpose_rates: rates must be finite and > 0")
        return v


class MemoryLevel(_Model):
    """One level of the memory hierarchy. Levels are listed innermost (registers) first."""

    name: str = Field(
        min_length=1,
        description="Short name shown in sheets and charts (e.g. 'smem', 'l2', 'hbm').",
    )
    kind: Literal["register", "sram", "cache", "dram"] = Field(
        description="register file, software-managed SRAM (the tiling target), hardware cache, or off-chip DRAM/HBM."
    )
    scope: Literal["per_core", "shared"] = Field(
        description="per_core: each core has its own capacity_bytes; shared: one pool for the chip."
    )
    capacity_bytes: int = Field(
        gt=0, description="Capacity, bytes (per core when scope is per_core)."
    )
    bandwidth_bytes_per_s: float = Field(
        gt=0, description="Whole-chip aggregate bandwidth, bytes/s."
    )
    energy_pj_per_byte: float = Field(ge=0, description="Access energy, picojoules per byte.")
    latency_s: float = Field(default=0.0, ge=0, description="Access latency, seconds.")
    sustained_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Fraction of bandwidth_bytes_per_s a streaming kernel sustains (a measured copy/STREAM result over the datasheet figure; refresh, ECC, row switches), 0..1; 1 = the figure is already a measured one. Source it or list it under assumptions.",
    )

    @property
    def sustained_bytes_per_s(self) -> float:
        """Bandwidth a streaming kernel achieves: datasheet x ``sustained_fraction``, bytes/s."""
        return self.bandwidth_bytes_per_s * self.sustained_fraction
