"""Pydantic models of an accelerator description (the schema of ``hardware/*.yaml``).

Hardware is data. Each YAML file in ``hardware/`` is validated into a frozen :class:`Hardware`
with ``extra="forbid"`` (an unknown field is an error, not silently ignored). Units live in field
names and are SI base units: bytes, seconds, FLOP/s, bytes/s, watts, picojoules. Figures that are
derived from others (ridge point, peak per core) are properties, not fields, so they cannot
disagree with the figures they come from.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from workbench.hw._schema_base import _Model
from workbench.hw._schema_engines import FormatEfficiency, MatrixEngine, MemoryLevel, VectorUnit
from workbench.hw._schema_system import (
    Interconnect,
    Overheads,
    Power,
    RuntimeVariance,
    ScaleOut,
    Software,
)
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
    "TileScheduling",
    "VectorUnit",
    "default_scheduling",
]

SCHEMA_VERSION = 1

#: Who issues a kernel's tiles: the chip's own schedulers (GPUs, NPUs, TPUs) or software, one
#: library call per tile step (a host calibrated by ``workbench calibrate``).
TileScheduling = Literal["hardware_scheduled", "software_issued"]


def default_scheduling(tile_issue_s: float) -> TileScheduling:
    """The scheduling style of a file that does not state one, from its tile-issue cost.

    Files written before ``scheduling`` existed said "host" only by ``overheads.tile_issue_s``
    (seconds): > 0 on a calibrated host, 0 on a chip. They keep meaning what they meant.

    >>> default_scheduling(0.0), default_scheduling(2e-6)
    ('hardware_scheduled', 'software_issued')
    """
    return "software_issued" if tile_issue_s > 0 else "hardware_scheduled"


class Hardware(_Model):
    """An accelerator: engines, memory hierarchy, interconnect, overheads, power and sources."""

    schema_version: int = Field(
        description="Schema version of the file; this code reads version 1."
    )
    name: str = Field(min_length=1, description="Profile name used on the CLI (e.g. 'h100-sxm').")
    scheduling: TileScheduling = Field(
        default="hardware_scheduled",
        description="Who issues a kernel's tiles, and so how lowering, scheduling and the cost model treat them: 'hardware_scheduled' = the chip's schedulers issue tiles, loads, math and epilogues overlap, padded tiles are the work (GPUs, NPUs, TPUs); 'software_issued' = every tile step is a library call issued one after another from software at its calibrated rate (a host written by `workbench calibrate`; needs overheads.tile_issue_s > 0, the measured cost of one call). A hardware-scheduled profile may give overheads.tile_issue_s > 0 as a fixed cost per tile step that its own scheduler pays (added to every step); its tiles are still lowered and costed as hardware-scheduled. Left out: 'software_issued' where overheads.tile_issue_s > 0, else 'hardware_scheduled' (what files written before this field meant).",
    )
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

    @model_validator(mode="before")
    @classmethod
    def _default_scheduling(cls, data: Any) -> Any:
        """A file without ``scheduling`` gets :func:`default_scheduling` of its tile-issue cost."""
        if not isinstance(data, dict) or "scheduling" in data:
            return data
        overheads = data.get("overheads")
        issue = (
            overheads.get("tile_issue_s", 0.0)
            if isinstance(overheads, dict)
            else getattr(overheads, "tile_issue_s", 0.0)
        )
        if isinstance(issue, int | float) and not isinstance(issue, bool):
            return {**data, "scheduling": default_scheduling(issue)}
        return data  # NOTE: a malformed tile_issue_s is reported by its own field

    @model_serializer(mode="wrap")
    def _canonical(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The dump leaves out a ``scheduling`` that a file may leave out (the default).

        The canonical form (run records embed it, :func:`workbench.hw.hardware_hash` hashes it)
        then stays what it was before the field existed for every profile that means the same.
        """
        data = handler(self)
        if self.scheduling == default_scheduling(self.overheads.tile_issue_s):
            data.pop("scheduling", None)
        return data

    @field_validator("name", "vendor", "description")
    @classmethod
    def _printable(cls, v: str) -> str:
        # NOTE: shown on terminals and in reports: no control, escape or bidi character
        if not v.isprintable():
            raise ValueError("holds a control, escape or bidi character (one printable line)")
        return v

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
        if self.scheduling == "software_issued" and self.overheads.tile_issue_s <= 0:
            raise ValueError(
                "scheduling: 'software_issued' needs overheads.tile_issue_s > 0 (the measured "
                "cost of issuing one tile step; `workbench calibrate` writes it), got 0"
            )
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
    @property
    def hardware_scheduled(self) -> bool:
        """Whether the chip's schedulers issue its tiles (``scheduling``), not software.

        >>> from workbench.hw import load_hardware
        >>> load_hardware("h100-sxm").hardware_scheduled
        True
        """
        return self.scheduling == "hardware_scheduled"

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
