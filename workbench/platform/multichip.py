"""Multi-chip plans: tensor parallel (one replica over N chips) and data parallel (N replicas).

Tensor parallel is built into the decoder graph (``tensor_parallel=N``: heads, MLP and vocabulary
split N ways, an AllReduce after each o_proj and down_proj); the mapper costs each AllReduce as a
collective kernel, a ring all-reduce::

    t = c + 2 (N - 1) / N x bytes / B + 2 (N - 1) x latency

with ``B`` the chip's aggregate one-direction link bandwidth (``hw.interconnect.links x
link_bandwidth_bytes_per_s``), ``latency`` the per-ring-step latency
(``hw.interconnect.latency_s``) and ``c`` the fixed latency of one collective call
(``hw.interconnect.collective_latency_s``); the mapper itself runs the fabric's own algorithm
(:mod:`workbench.cost.collective`). Data parallel runs N independent replicas: throughput x N, each
replica's mapping unchanged (training, with its gradient reduction, is
:mod:`workbench.platform.training`).

A plan is *interconnect-bound* when collectives take more than half of the step time.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions

__all__ = [
    "INTERCONNECT_BOUND_SHARE",
    "ParallelPlan",
    "ParallelResult",
    "collective_share",
    "map_parallel",
    "ring_all_reduce_s",
]

#: Share of step time in collectives above which a plan is called interconnect-bound.
INTERCONNECT_BOUND_SHARE = 0.5


def ring_all_reduce_s(nbytes: float, chips: int, hw: Hardware) -> float:
    """Time of a ring all-reduce of ``nbytes`` over ``chips`` chips, seconds.

    Args:
        nbytes: Size of the tensor each chip holds, bytes.
        chips: Chips in the ring.
        hw: Platform (its interconnect bandwidth and per-step latency).

    Returns:
        ``c + 2 (N-1)/N x nbytes / bandwidth + 2 (N-1) x latency`` (0 for one chip; inf without
        links).

    >>> from workbench.hw import load_hardware
    >>> round(ring_all_reduce_s(1e9, 8, load_hardware("h100-sxm")) * 1e3, 3)
    3.904
    """
    if chips < 1:
        raise WorkbenchError(f"ring_all_reduce_s: chips must be >= 1, got {chips}")
    if chips == 1:
        return 0.0
    ic = hw.interconnect
    bw = ic.bandwidth_bytes_per_s
    if bw <= 0:
        return float("inf")
    steps = 2 * (chips - 1) * ic.latency_s
    return ic.collective_latency_s + 2 * (chips - 1) / chips * nbytes / bw + steps


def collective_share(mapping: ModelMapping) -> float:
    """Share of a mapping's step time spent in collective kernels, 0..1."""
    total = mapping.time_s
    if not total:
        return 0.0
    coll = sum(k.cost.total_s for k in mapping.kernels if k.kernel.kind == "collective")
    return coll / total


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelPlan:
    """How many chips, and how they are used.

    Attributes:
        tensor_parallel: Chips one replica is split over.
        data_parallel: Independent replicas.
    """

    tensor_parallel: int = 1
    data_parallel: int = 1

    def __post_init__(self) -> None:
        if self.tensor_parallel < 1 or self.data_parallel < 1:
            raise WorkbenchError(
                f"parallel plan: tensor_parallel and data_parallel must be >= 1, got "
                f"{self.tensor_parallel} and {self.data_parallel}"
            )

    @property
    def chips(self) -> int:
        """Chips in total."""
        return self.tensor_parallel * self.data_parallel

    @property
    def label(self) -> str:
        """Short label, e.g. ``"tp4"``, ``"dp2"`` or ``"tp2xdp2"``."""
        parts = [f"tp{self.tensor_parallel}"] * (self.tensor_parallel > 1)
        parts += [f"dp{self.data_parallel}"] * (self.data_parallel > 1)
        return "x".join(parts) or "1 chip"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ParallelResult:
    """One step of a model under a parallel plan.

    Attributes:
        plan: The plan.
        mapping: One chip's mapping of one replica (collective kernels included).
        collective_share: Share of the step in collectives, 0..1.
    """

    plan: ParallelPlan
    mapping: ModelMapping
    collective_share: float

    @property
    def step_s(self) -> float:
        """Time of one step of one replica, seconds."""
        return self.mapping.time_s

    @property
    def items_per_s(self) -> float:
        """Tokens (or images) per second over all replicas."""
        return self.mapping.tokens_per_s * self.plan.data_parallel

    @property
    def energy_per_item_j(self) -> float:
        """Joules per token (or image), all chips of a replica counted."""
        items = self.mapping.items_per_step
        return self.mapping.energy_j * self.plan.tensor_parallel / items if items else 0.0

    @property
    def interconnect_bound(self) -> bool:
        """Collectives take more than :data:`INTERCONNECT_BOUND_SHARE` of the step."""
        return self.collective_share > INTERCONNECT_BOUND_SHARE

    def summary(self) -> str:
        """One line: plan, step time, throughput, collective share and the verdict."""
        verdict = "interconnect-bound" if self.interconnect_bound else "not interconnect-bound"
        return (
            f"{self.plan.label} on {self.mapping.hardware.name}: step {self.step_s * 1e3:.3f} ms, "
            f"{self.items_per_s:,.0f} items/s, collectives {self.collective_share:.0%} "
            f"({verdict})"
        )


def map_parallel(
    model: str,
    hw: Hardware,
    plan: ParallelPlan,
    options: MapOptions | None = None,
    *,
    phase: str = "decode",
    batch: int = 1,
    seq: int = 2048,
    context: int | None = None,
) -> ParallelResult:
    """Map one replica of a preset under a plan (per-chip graph with collectives).

    Args:
        model: Preset name (tensor parallel needs a decoder preset).
        hw: Platform.
        plan: Tensor- and data-parallel degrees.
        options: Mapping overrides (``dtype`` picks the graph dtype).
        phase: ``"prefill"`` or ``"decode"``.
        batch: Sequences per replica.
        seq: Prompt tokens.
        context: Cached tokens for decode (None: ``seq``).

    Returns:
        The :class:`ParallelResult`.
    """
    opts = options or MapOptions()
    dtype = opts.dtype or "bf16"
    graph = build_graph(model, phase, batch=batch, seq=seq, context=context, dtype=dtype,
                        tensor_parallel=plan.tensor_parallel)  # fmt: skip
    mapping = map_model(graph, hw, opts)
    return ParallelResult(plan=plan, mapping=mapping, collective_share=collective_share(mapping))
