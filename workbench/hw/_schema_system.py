"""Schema of a chip's links, overheads, power and software stack (part of :mod:`workbench.hw.schema`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from workbench.hw._schema_base import _dtype_map, _Model

__all__ = ["Interconnect", "Overheads", "Power", "RuntimeVariance", "ScaleOut", "Software"]


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
    nccl_generation: Literal["volta", "ampere", "hopper"] | None = Field(
        default=None,
        description="The row of NCCL's tuning tables (src/graph/tuning.cc) this GPU's collectives use, by compute capability: one-node collectives on a 'switch' fabric are then costed by NCCL's own model, the fastest of ring/tree/NVLS x LL/LL128/Simple (workbench/cost/nccl.py), and collective_latency_s / latency_s are not used for them. None: the fabric does not run NCCL (the generic ring model).",
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
        description="Cost to issue one tile step (one K-step of one tile, one row tile), seconds: the per-call dispatch of a NumPy tile on a CPU host (scheduling 'software_issued' needs it > 0); 0 where the chip's schedulers issue tiles for free (GPUs, NPUs). Whether tiles are software-issued is the profile's scheduling field, not this figure.",
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
