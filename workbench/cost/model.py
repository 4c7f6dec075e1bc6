"""The cost of a kernel: time parts, energy, bottleneck class and the evidence for it.

Time of one kernel (seconds)::

    execution = max(pipeline, traffic[level] / bandwidth[level] + ramp[level] for every level,
                    network)
    ramp      = latency[level] + store drain    # first request back, last stores landed
                                                # (0 on calibrated hosts: cost/issue.py)
    pipeline  = waves x per-tile time         # compute at the sustained rate, K-step loads
                                              # from the next level, latency not hidden by
                                              # the pipeline stages, prologue and epilogue
    graph launch: total = execution + graph_launch_s       (device-side gap per kernel)
    eager launch: total = max(execution + graph_launch_s, host launch)
                                              # the host cannot issue faster than this
    host launch = the software stack's host time per kernel launched outside a graph
                  (MapOptions.launch_host_s: framework dispatch + driver submission), else the
                  profile's kernel_launch_s (the driver's submission alone: a C++ runtime)
    total += grid barriers x barrier_s        # grid-wide syncs inside the kernel
    total += drains x (barrier_s + exposed)   # a device-wide sync after the kernel: the device
                                              # drains, the host waits, and the next launch is
                                              # no longer hidden behind this kernel
    exposed (graph) = kernel_launch_s - graph_launch_s     # the next graph segment's launch
    exposed (eager) = min(host launch - graph_launch_s, execution)
                                              # the next launch no longer overlaps this kernel

Power roof (chips): the board cannot dissipate more than ``tdp_w``, so the engine's clock falls
until a kernel's engine energy fits the budget left above idle::

    execution >= engine FLOPs x energy per FLOP / (tdp_w - idle_w)       (power_floor_s)

With ``energy_pj_per_flop`` derived as ``(tdp_w - idle_w) / peak`` the roof is ``FLOPs / peak``
and never binds; on a power-capped board (a 70 W card whose sustained GEMM rate is measured
far below its peak) the figure is derived from the measured sustained rate, and the roof is that
rate for every kernel busy enough to reach it, while a latency-bound kernel draws less and keeps
its boost clock.

Energy (joules) = FLOPs x pJ/FLOP + sum over levels of bytes x pJ/byte + link bytes x pJ/byte
+ idle power x time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.hw.schema import Hardware

if TYPE_CHECKING:
    from workbench.lowering.kernel import Kernel
    from workbench.scheduling.tiling import Tiling

__all__ = [
    "BOTTLENECK_CLASSES",
    "Bottleneck",
    "Cost",
    "engine_flops",
    "host_launch_s",
    "launch_and_sync",
    "power_floor_s",
]

#: Bottleneck classes; ``bandwidth`` is reported as ``bandwidth:<level>``.
BOTTLENECK_CLASSES = ("compute", "bandwidth", "overhead", "sync", "capacity", "interconnect")


@dataclass(frozen=True, slots=True, kw_only=True)
class Bottleneck:
    """A bottleneck class, with the memory level that bounds a ``bandwidth`` one.

    Costs, run records and reports carry the class as text (``compute``,
    ``bandwidth:hbm``...); this is that text taken apart once, for every reader.

    Attributes:
        kind: The class (one of :data:`BOTTLENECK_CLASSES`, or ``mixed``).
        level: The memory level of a ``bandwidth`` class; ``""`` for the others.

    >>> b = Bottleneck.parse("bandwidth:hbm")
    >>> b.kind, b.level, b.is_bandwidth, str(b)
    ('bandwidth', 'hbm', True, 'bandwidth:hbm')
    >>> str(Bottleneck.parse("compute")), Bottleneck.parse("compute").is_bandwidth
    ('compute', False)
    """

    kind: str
    level: str = ""

    @classmethod
    def parse(cls, text: str) -> Bottleneck:
        """The class written as ``kind`` or ``kind:level``."""
        kind, _, level = text.partition(":")
        return cls(kind=kind, level=level)

    @classmethod
    def bandwidth(cls, level: str) -> Bottleneck:
        """Bound by the bandwidth of memory ``level``."""
        return cls(kind="bandwidth", level=level)

    @property
    def is_bandwidth(self) -> bool:
        """Whether a memory level's bandwidth bounds the kernel."""
        return self.kind == "bandwidth"

    def __str__(self) -> str:
        """The text form carried by costs and run records (``bandwidth:hbm``)."""
        return f"{self.kind}:{self.level}" if self.level else self.kind


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """Predicted cost of one kernel, or the sum of several (costs add).

    Attributes:
        compute_s: Engine time for the padded work at its sustained rate, seconds.
        pipeline_s: Tile-pipeline time (compute plus unhidden loads and latency), seconds.
        memory_s: ``(level, seconds)`` to move each level's traffic at its bandwidth.
        traffic: ``(level, bytes)`` moved at each level.
        network_s: Time on chip-to-chip links, seconds.
        exec_s: Execution time on the device (the max of the above), seconds.
        launch_s: Launch overhead added to the execution, seconds.
        sync_s: Barrier time, seconds.
        total_s: Wall time of the kernel(s), seconds.
        stall_s: Time the engine waits on memory (execution beyond compute), seconds.
        energy_j: Energy, joules.
        bottleneck: Class (``compute``, ``bandwidth:<level>``, ``overhead``, ``sync``,
            ``capacity``, ``interconnect``); ``mixed`` for sums of different classes.
        evidence: The figures that prove the class, as one sentence.
    """

    compute_s: float = 0.0
    pipeline_s: float = 0.0
    memory_s: tuple[tuple[str, float], ...] = ()
    traffic: tuple[tuple[str, float], ...] = ()
    network_s: float = 0.0
    exec_s: float = 0.0
    launch_s: float = 0.0
    sync_s: float = 0.0
    total_s: float = 0.0
    stall_s: float = 0.0
    energy_j: float = 0.0
    bottleneck: str = ""
    evidence: str = ""

    def __add__(self, other: Cost) -> Cost:
        """Sum two costs part by part (levels matched by name)."""
        if not isinstance(other, Cost):
            return NotImplemented
        cls = self.bottleneck if self.bottleneck == other.bottleneck else "mixed"
        if not self.bottleneck or not other.bottleneck:
            cls = self.bottleneck or other.bottleneck
        return Cost(
            compute_s=self.compute_s + other.compute_s,
            pipeline_s=self.pipeline_s + other.pipeline_s,
            memory_s=_merge(self.memory_s, other.memory_s),
            traffic=_merge(self.traffic, other.traffic),
            network_s=self.network_s + other.network_s,
            exec_s=self.exec_s + other.exec_s,
            launch_s=self.launch_s + other.launch_s,
            sync_s=self.sync_s + other.sync_s,
            total_s=self.total_s + other.total_s,
            stall_s=self.stall_s + other.stall_s,
            energy_j=self.energy_j + other.energy_j,
            bottleneck=cls,
            evidence="" if cls == "mixed" else self.evidence or other.evidence,
        )

    def __radd__(self, other: object) -> Cost:
        """Allow ``sum(costs)`` (which starts from 0)."""
        if other == 0:
            return self
        return NotImplemented

    def time_at(self, level: str) -> float:
        """Seconds to move ``level``'s traffic (0 if absent)."""
        return next((s for name, s in self.memory_s if name == level), 0.0)

    def bytes_at(self, level: str) -> float:
        """Bytes moved at ``level`` (0 if absent)."""
        return next((b for name, b in self.traffic if name == level), 0.0)


def _merge(a: tuple[tuple[str, float], ...], b: tuple[tuple[str, float], ...]):
    out = dict(a)
    for k, v in b:
        out[k] = out.get(k, 0.0) + v
    return tuple(out.items())


def host_launch_s(hw: Hardware, host_s: float | None = None) -> float:
    """Host time to launch one kernel outside a captured graph, seconds.

    The software stack's figure (``host_s``: its framework's dispatch plus the driver's
    submission, e.g. ~20 us for a PyTorch eager op) when given, else the profile's
    ``overheads.kernel_launch_s`` (the driver's submission alone, what a C++ runtime pays).
    """
    return hw.overheads.kernel_launch_s if host_s is None else host_s


def launch_and_sync(
    exec_s: float,
    hw: Hardware,
    *,
    launch: str,
    host_s: float | None = None,
    grid_barriers: int = 0,
    drains: int = 0,
) -> tuple[float, float]:
    """Launch overhead added to ``exec_s`` and barrier time (see module docstring).

    A drain (a device-wide sync after the kernel, as a per-layer debugging barrier) costs the
    sync itself (``barrier_s``) plus the launch it exposes: the host waits for the device before
    it launches the next kernel, so that launch no longer overlaps this kernel. In graph mode
    the sync splits the graph, and the next segment pays a host launch (``kernel_launch_s``)
    instead of the in-graph gap; in eager mode the next launch loses its overlap with this
    kernel's execution (at most its host launch). NVIDIA's CUDA Graphs post (V100, 2.9 us
    kernels: 9.6 us a kernel with a sync after each, 3.8 us without; reference dossier A6,
    [R]) puts that cost at ~6 us a sync; H100's figures give 2 + 4 - 1.5 = 4.5 us.

    Args:
        exec_s: Device execution time, seconds.
        hw: Hardware (its overheads).
        launch: ``"eager"`` or ``"graph"``.
        host_s: Host time per eager launch, seconds (None: ``kernel_launch_s``).
        grid_barriers: Grid-wide barriers inside the kernel (split rows, split-K).
        drains: Device-wide syncs after the kernel (the per-layer debugging barrier).

    Returns:
        ``(launch_s, sync_s)``, seconds.

    >>> from workbench.hw import load_hardware
    >>> hw = load_hardware("h100-sxm")
    >>> [round(s * 1e6, 2) for s in launch_and_sync(10e-6, hw, launch="graph", drains=1)]
    [1.5, 4.5]
    >>> [round(s * 1e6, 2) for s in launch_and_sync(2e-6, hw, launch="eager", host_s=20e-6)]
    [18.0, 0.0]
    """
    o = hw.overheads
    issue = host_launch_s(hw, host_s)
    with_gap = exec_s + o.graph_launch_s
    if launch == "eager":
        total = max(with_gap, issue)
        exposed = min(max(issue - o.graph_launch_s, 0.0), exec_s)
    else:
        total = with_gap
        exposed = max(o.kernel_launch_s - o.graph_launch_s, 0.0)
    sync = grid_barriers * o.barrier_s + drains * (o.barrier_s + exposed)
    return total - exec_s, sync


def _pj_per_flop(hw: Hardware, dtype: str) -> float:
    """Energy of one FLOP in ``dtype`` (the fp32 figure, else the largest, where absent), pJ."""
    pj = hw.power.energy_pj_per_flop
    return pj.get(dtype) or pj.get("fp32") or max(pj.values())


def power_floor_s(hw: Hardware, dtype: str, flops):
    """Seconds the board needs to dissipate ``flops`` engine FLOPs in ``dtype`` (power roof).

    ``flops x energy_pj_per_flop[dtype] / (tdp_w - idle_w)``: the power the board may spend above
    idle bounds the engine's sustained rate (module docstring). Only the engine the kernel runs
    on counts: each ``energy_pj_per_flop`` figure is the energy of that engine running alone
    (derived from one engine's rate at the board limit), so adding a second engine's figure
    would spend the same budget twice.

    Args:
        hw: The profile (its ``power`` section).
        dtype: The format the engine computes in.
        flops: FLOPs the engine executes (a float, or an array over candidates).

    Returns:
        Seconds (same shape as ``flops``); 0 where the board has no budget above idle.

    >>> from workbench.hw import load_hardware
    >>> hw = load_hardware("a100-80gb")  # pJ/FLOP = (TDP - idle) / peak: the roof is FLOPs / peak
    >>> round(power_floor_s(hw, "bf16", 312e12), 2)
    1.0
    """
    budget_w = hw.power.tdp_w - hw.power.idle_w
    if budget_w <= 0:
        return 0.0 * flops
    return flops * _pj_per_flop(hw, dtype) * 1e-12 / budget_w


def engine_flops(kernel: Kernel, tiling: Tiling) -> float:
    """FLOPs the kernel's own engine executes: what meets the power roof.

    Padded tiles of a GEMM or attention, a vector kernel's work; 0 for a matrix kernel's row
    work, which runs on the vector unit (another engine's energy figure, :func:`power_floor_s`).
    """
    if kernel.gemm is not None or kernel.attention is not None:
        return float(tiling.padded_flops)
    return float(kernel.flops) if kernel.engine != "matrix" else 0.0


def energy(
    hw: Hardware,
    *,
    dtype: str,
    matmul_flops: float,
    vector_flops: float,
    traffic: dict[str, float],
    link_bytes: float,
    seconds: float,
) -> float:
    """Energy of a kernel in joules (see module docstring)."""
    pj = hw.power.energy_pj_per_flop
    per_flop = _pj_per_flop(hw, dtype)
    vec = pj.get("fp32") or per_flop
    e = matmul_flops * per_flop + vector_flops * vec
    for lvl in hw.memory:
        e += traffic.get(lvl.name, 0.0) * lvl.energy_pj_per_byte
    e += link_bytes * hw.interconnect.energy_pj_per_byte
    return e * 1e-12 + hw.power.idle_w * seconds
