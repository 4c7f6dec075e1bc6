"""Pydantic models of an accelerator description (the schema of ``hardware/*.yaml``).

Hardware is data. Each YAML file in ``hardware/`` is validated into a frozen :class:`Hardware`
with ``extra="forbid"`` (an unknown field is an error, not silently ignored). Units live in field
names and are SI base units: bytes, seconds, FLOP/s, bytes/s, watts, picojoules. Figures that are
derived from others (ridge point, peak per core) are properties, not fields, so they cannot
disagree with the figures they come from.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from workbench.hw._strict import check_value
from workbench.ir.dtypes import DTYPES, canonical

__all__ = [
    "SCHEMA_VERSION",
    "FormatEfficiency",
    "Hardware",
    "Interconnect",
    "MatrixEngine",
    "MemoryLevel",
    "Overheads",
    "Power",
    "RuntimeVariance",
    "ScaleOut",
    "Software",
    "VectorUnit",
]

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_coercion(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            check_value(value, field.annotation, info.field_name or "")
        return value


def _dtype_map(value: dict[str, float]) -> dict[str, float]:
    if not value:
        raise ValueError("needs at least one dtype")
    out: dict[str, float] = {}
    for key, v in value.items():
        if key not in DTYPES and canonical(key, where="") not in DTYPES:
            raise ValueError(f"unknown dtype {key!r}")
        if v <= 0:
            raise ValueError(f"{key}: must be > 0")
        out[canonical(key)] = v
    return out


class FormatEfficiency(_Model):
    """A measured large-GEMM rate of one format, as a fraction of that format's peak."""

    efficiency: float = Field(gt=0, le=1, description="Measured rate over the format's peak.")
    shape: tuple[int, int, int] = Field(description="(m, n, k) of the measured GEMM.")


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

    @field_validator("skinny_call_rates")
    @classmethod
    def _check_skinny(cls, v: tuple[tuple[int, float], ...]) -> tuple[tuple[int, float], ...]:
        sides = [n for n, _ in v]
        if any(n <= 0 for n in sides) or sides != sorted(set(sides)):
            raise ValueError("skinny_call_rates: sides must be positive and increasing")
        if not all(0 < r < float("inf") for _, r in v):
            raise ValueError("skinny_call_rates: rates must be finite and > 0")
        return v

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
        bad = [k for k, r in v.items() if not r > 0]
        if bad:
            raise ValueError(f"kernel_flops_per_s: rates must be > 0 ({', '.join(bad)})")
        return v

    @field_validator("row_rates")
    @classmethod
    def _check_row_rates(
        cls, v: dict[str, tuple[tuple[int, float], ...]]
    ) -> dict[str, tuple[tuple[int, float], ...]]:
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


class ScaleOut(_Model):
    """The network between nodes (InfiniBand/RoCE NICs): collectives whose group leaves a node."""

    chips_per_node: int = Field(
        gt=0, description="Chips that share one scale-up (NVLink) domain, e.g. 8 in a DGX."
    )
    bandwidth_bytes_per_s: float = Field(
        gt=0, description="One chip's share of the node's NIC bandwidth, one direction, bytes/s."
    )
    latency_s: float = Field(ge=0, description="Per-step latency of a collective across nodes, s.")
    sustained_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Fraction of bandwidth_bytes_per_s a collective sustains (measured bus "
        "bandwidth over the line rate), 0..1.",
    )


class Interconnect(_Model):
    """Chip-to-chip links used by collectives."""

    links: int = Field(ge=0, description="Number of chip-to-chip links (0: single-chip part).")
    link_bandwidth_bytes_per_s: float = Field(
        ge=0, description="Per-link bandwidth in one direction, bytes/s."
    )
    latency_s: float = Field(ge=0, description="Per-hop (per ring step) latency, seconds.")
    topology: str = Field(
        default="switch", description="e.g. 'switch' (NVLink/NVSwitch), 'torus-3d', 'ring', 'none'."
    )
    energy_pj_per_byte: float = Field(
        default=0.0, ge=0, description="Energy per byte moved over a link, pJ."
    )
    sustained_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Fraction of link_bandwidth_bytes_per_s a transfer sustains (a measured point-to-point or bus bandwidth over the datasheet rate), 0..1.",
    )
    in_network_reduction: bool = Field(
        default=False,
        description="The switch reduces in the network (NVLink SHARP / NVLS on NVSwitch 3): an all-reduce sends each chip's data up once and receives the sum once.",
    )
    scale_out: ScaleOut | None = Field(
        default=None,
        description="The inter-node network (None: every chip of a job is on these links, e.g. a TPU pod's ICI, or no scale-out figure).",
    )
    collective_latency_s: float = Field(
        default=0.0,
        ge=0,
        description="Fixed latency of one collective call beyond its per-step latency (launch, protocol set-up, final flag wait), seconds; paid once per all-reduce or all-gather whatever the algorithm (NCCL's baseLat).",
    )
    in_network_latency_s: float = Field(
        default=0.0,
        ge=0,
        description="Fixed latency of one in-network (NVLS) all-reduce, seconds; where it exceeds the ring's latency, small messages run the ring (the library picks the faster algorithm).",
    )
    mesh_size: int = Field(
        default=0,
        ge=0,
        description="Chips in a full-mesh box (topology 'full-mesh'); links are split evenly over its mesh_size - 1 peers. 0: links + 1 (one link per peer).",
    )

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Aggregate one-direction bandwidth of all links, bytes/s."""
        return self.links * self.link_bandwidth_bytes_per_s


class Overheads(_Model):
    """Fixed costs that do not scale with work."""

    kernel_launch_s: float = Field(
        ge=0, description="Host-to-device launch cost of one kernel in eager mode, seconds."
    )
    graph_launch_s: float = Field(
        ge=0, description="Amortised per-kernel launch cost under graph capture, seconds."
    )
    barrier_s: float = Field(
        ge=0, description="Cost of one grid-wide barrier/synchronisation, seconds."
    )
    tile_issue_s: float = Field(
        default=0.0,
        ge=0,
        description="Cost to issue one tile step (one K-step of one tile, one row tile) from software, seconds: 0 where hardware schedules tiles (GPUs, NPUs); the per-call dispatch of a NumPy tile on a CPU host.",
    )
    attention_block_issue_s: float = Field(
        default=0.0,
        ge=0,
        description="Software-scheduled hosts: fixed cost of one fused-attention KV block step (all heads of the block, its library calls) beyond its arithmetic, seconds; 0 = tile_issue_s per head block (hardware: 0).",
    )
    conv_setup_s: float = Field(
        default=0.0,
        ge=0,
        description="Software-scheduled hosts: fixed cost of a convolution kernel's input and weight preparation (padding, window view, weight reshape, output layout) beyond the kernel launch, seconds; 0 = none (hardware).",
    )
    step_s: float = Field(
        default=0.0,
        ge=0,
        description="Runtime cost of one LLM serving step (prefill or decode) outside its kernels, seconds: host-side sampling and its device-to-host copy, scheduler and KV-cache block-table bookkeeping, the step's input preparation. Paid once per step in graph and eager mode alike (eager mode also pays kernel_launch_s per kernel); 0 = none modelled.",
    )
    attention_qtile_issue_s: float = Field(
        default=0.0,
        ge=0,
        description="Software-scheduled hosts: fixed cost of one fused-attention query tile (statistics set-up, first block, normalise and store) beyond its arithmetic, seconds; 0 = none.",
    )


class Power(_Model):
    """Power and energy figures."""

    tdp_w: float = Field(gt=0, description="Thermal design / board power, watts.")
    idle_w: float = Field(ge=0, description="Power drawn when idle, watts.")
    energy_pj_per_flop: dict[str, float] = Field(
        description="Energy per FLOP on the matrix engine per dtype, picojoules."
    )

    @field_validator("energy_pj_per_flop")
    @classmethod
    def _check(cls, v: dict[str, float]) -> dict[str, float]:
        return _dtype_map(v)


class RuntimeVariance(_Model):
    """Parameters of the serving simulation's runtime-variance model."""

    launch_jitter_s: float = Field(
        default=0.0, ge=0, description="Standard deviation of per-step launch jitter, seconds."
    )
    slow_step_probability: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Probability that a step is slow (GC, preemption, thermal).",
    )
    slow_step_factor: float = Field(
        default=1.0, ge=1, description="A slow step takes this many times as long."
    )


class Software(_Model):
    """Software-stack maturity, the engineering-risk input of platform selection."""

    maturity: float = Field(
        ge=0, le=1, description="0 = experimental stack, 1 = mature, broad op coverage."
    )
    fused_attention: bool = Field(
        default=True, description="A production fused (flash-style) attention kernel exists."
    )
    graph_capture: bool = Field(
        default=True, description="Kernel launches can be captured and replayed as a graph."
    )
    attention_kernel: Literal["generic", "fa2", "fa3", "serial"] = Field(
        default="generic",
        description="Fused-attention class the stack ships (workbench/cost/attention_class.py): 'fa2' = warp-level MMA, each warp's online softmax serial with its GEMMs, partly hidden by other warps (FlashAttention-2, Dao 2023; CK on ROCm); 'fa3' = asynchronous GEMMs with the softmax of one warpgroup overlapped with the GEMMs of another (ping-pong, intra-warpgroup pipelining: FlashAttention-3, Shah et al. 2024, arXiv:2407.08608); 'serial' = asynchronous GEMMs, softmax not overlapped with them (Triton tutorial kernel); 'generic' (default) = the block's GEMMs then its softmax at 5 vector FLOPs per score, no per-item costs: stacks with no published breakdown (TPU Pallas, Gaudi FusedSDPA, NPUs).",
    )
    attention_warp_mma_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Fraction of the matrix engine's rate that an 'fa2'-class (warp-level MMA) fused attention kernel's GEMMs reach, where it differs from matrix_engine.legacy_mma_fraction (a GEMM with many warps); None = legacy_mma_fraction. Fitted figures name their calibration row.",
    )
    notes: str = Field(
        default="", description="Where the maturity figure comes from, or that it is an assumption."
    )


class Hardware(_Model):
    """An accelerator: engines, memory hierarchy, interconnect, overheads, power and sources."""

    schema_version: int = Field(
        description="Schema version of the file; this code reads version 1."
    )
    name: str = Field(min_length=1, description="Profile name used on the CLI (e.g. 'h100-sxm').")
    vendor: str = Field(description="Vendor.")
    description: str = Field(default="", description="One-line description.")
    matrix_engine: MatrixEngine
    vector_unit: VectorUnit
    memory: tuple[MemoryLevel, ...] = Field(
        min_length=2, description="Levels innermost first; the last is off-chip memory."
    )
    interconnect: Interconnect
    overheads: Overheads
    power: Power
    runtime_variance: RuntimeVariance = Field(default_factory=RuntimeVariance)
    software: Software
    sources: tuple[str, ...] = Field(
        min_length=1, description="Where the figures come from (URLs or documents)."
    )
    assumptions: tuple[str, ...] = Field(
        default=(), description="Figures that are assumed rather than published, each with why."
    )

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"this workbench reads schema_version {SCHEMA_VERSION}, file has {v}")
        return v

    @model_validator(mode="after")
    def _levels(self) -> Hardware:
        if not any(m.kind == "sram" and m.scope == "per_core" for m in self.memory):
            raise ValueError(
                "memory: needs one level with kind 'sram' and scope 'per_core' (the tiling target)"
            )
        if self.memory[-1].kind != "dram":
            raise ValueError("memory: the last (outermost) level must have kind 'dram'")
        names = [m.name for m in self.memory]
        if len(set(names)) != len(names):
            raise ValueError(f"memory: level names must be unique, got {names}")
        self._check_tile_fits()
        return self

    def _check_tile_fits(self) -> None:
        """The per-core SRAM must hold the A and B operands of one native tile, at least."""
        me = self.matrix_engine
        bits = min(DTYPES[d].bits for d in me.peak_flops_per_s)
        need = (me.native_tile_m + me.native_tile_n) * me.native_tile_k * bits / 8
        i, sram = next(
            (i, m) for i, m in enumerate(self.memory) if m.kind == "sram" and m.scope == "per_core"
        )
        if sram.capacity_bytes < need:
            raise ValueError(
                f"memory[{i}].capacity_bytes: {sram.capacity_bytes} bytes of per-core SRAM cannot "
                f"hold one native {me.native_tile_m}x{me.native_tile_n}x{me.native_tile_k} tile's "
                f"operands ({need:g} bytes at {bits}-bit): no tile fits"
            )

    # --- derived figures -------------------------------------------------------------------
    def peak_flops(self, dtype: str) -> float:
        """Matrix-engine peak for ``dtype`` (FLOP/s), or 0.0 when the engine lacks it."""
        return self.matrix_engine.peak_flops_per_s.get(canonical(dtype), 0.0)

    def vector_flops(self, dtype: str) -> float:
        """Vector-unit peak for ``dtype`` (FLOP/s), falling back to its fp32 figure."""
        peaks = self.vector_unit.peak_flops_per_s
        return peaks.get(canonical(dtype)) or peaks.get("fp32") or max(peaks.values())

    def supports(self, dtype: str) -> bool:
        """Whether the matrix engine runs ``dtype`` natively."""
        return self.peak_flops(dtype) > 0

    @property
    def sram(self) -> MemoryLevel:
        """The per-core software-managed SRAM that tiles must fit (the innermost such level)."""
        return next(m for m in self.memory if m.kind == "sram" and m.scope == "per_core")

    @property
    def offchip(self) -> MemoryLevel:
        """Off-chip memory (HBM/DRAM), the outermost level."""
        return self.memory[-1]

    def level(self, name: str) -> MemoryLevel:
        """The memory level called ``name``."""
        for m in self.memory:
            if m.name == name:
                return m
        raise KeyError(
            f"{self.name}: no memory level {name!r} (have {[m.name for m in self.memory]})"
        )

    def ridge_point(self, dtype: str, level: str | None = None) -> float:
        """Arithmetic intensity (FLOP/byte) where ``dtype`` peak meets ``level`` bandwidth.

        ``level`` defaults to off-chip memory. Kernels below the ridge are bandwidth-bound.
        """
        mem = self.offchip if level is None else self.level(level)
        return self.peak_flops(dtype) / mem.bandwidth_bytes_per_s

    def peak_per_core(self, dtype: str) -> float:
        """Matrix-engine peak of one core for ``dtype``, FLOP/s."""
        return self.peak_flops(dtype) / self.matrix_engine.cores
