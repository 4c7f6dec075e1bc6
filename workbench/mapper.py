"""The mapper: graph x hardware x options -> a costed mapping of every kernel, and model totals.

``map_model`` lowers the graph to kernels, schedules each kernel (the whole mapspace is searched
unless a tile is forced), and sums the costs. Schedules are cached by (kernel signature, hardware,
the overrides that apply to the kernel), so the 32 identical decoder blocks of Llama-2-7B are
searched once, and a second mapping of the same model is almost free.

Model-level figures:

* **MFU** = model FLOPs (multiply-adds only, unpadded, no recompute) / (time x peak), as in the
  PaLM paper (Chowdhery et al. 2022, appendix B). The peak is that of the engine and format the
  model's GEMMs run in, fixed per model by the run's format (never switched by one kernel's
  ``--kernel-dtype`` override), named in :attr:`ModelMapping.mfu_peak_name`.
* **HFU** = engine-seconds of the FLOPs the hardware executes (padding, recompute and work on
  other engines or formats included, each at its own engine's peak) / time.
  Both are defined in :mod:`workbench.cost.utilisation`, so that 0 <= MFU <= HFU <= 1.
* **MBU** (model bandwidth utilisation, the decode KPI) = off-chip bytes moved per step / (time x
  sustained off-chip bandwidth).
* **Memory-stall fraction** of a layer type = time its kernels spend waiting on memory (execution
  beyond their compute time) / that layer type's time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace

from workbench.cost.model import Cost
from workbench.cost.search import schedule
from workbench.cost.utilisation import credit_s, model_peak, utilisation
from workbench.errors import OptionsError
from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.ir.ops import LAYER_TYPES, Attention, Conv2d, Linear, MatMul
from workbench.lowering.kernel import Kernel
from workbench.lowering.lower import lower
from workbench.options import MapOptions
from workbench.scheduling.tiling import Tiling

__all__ = [
    "KernelMapping",
    "ModelMapping",
    "clear_cache",
    "host_step_s",
    "map_model",
    "step_overhead",
]

_CACHE: OrderedDict[tuple[object, ...], tuple[Tiling, Cost]] = OrderedDict()
_CACHE_MAX = 20_000
_HW_PINS: dict[int, Hardware] = {}


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelMapping:
    """One kernel with its chosen tiling and predicted cost."""

    kernel: Kernel
    tiling: Tiling
    cost: Cost


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelMapping:
    """A whole model mapped onto one hardware profile.

    Attributes:
        graph: The graph that was mapped.
        hardware: The hardware profile.
        options: The options (overrides) used.
        kernels: Every kernel in execution order.
        total: The sum of the kernels' costs.
        dtype: The model's format.
        mfu_peak_flops: The MFU denominator, FLOP/s (see the module docstring).
        mfu_peak_name: Which engine, format and figure that denominator is, in words.
        step_overhead_s: Runtime cost of the serving step outside its kernels (the profile's
            ``overheads.step_s``; LLM prefill/decode steps only), seconds; included in
            :attr:`total` and shown as its own sheet row.
    """

    graph: Graph
    hardware: Hardware
    options: MapOptions
    kernels: tuple[KernelMapping, ...]
    total: Cost
    dtype: str
    mfu_peak_flops: float = 0.0
    mfu_peak_name: str = ""
    step_overhead_s: float = 0.0

    @property
    def time_s(self) -> float:
        """Predicted time of one step (a forward pass), seconds."""
        return self.total.total_s

    @property
    def model_flops(self) -> int:
        """Model FLOPs: multiply-adds of the graph, unpadded (PaLM convention)."""
        return self.graph.matmul_flops

    @property
    def peak_flops(self) -> float:
        """The MFU denominator, FLOP/s: the peak named by :attr:`mfu_peak_name`."""
        if self.mfu_peak_flops:
            return self.mfu_peak_flops
        return model_peak(self.hardware, self.dtype)[0]

    @property
    def mbu(self) -> float:
        """Model bandwidth utilisation: off-chip bytes per step / (time x sustained rate), 0..1."""
        off = self.hardware.offchip
        moved = self.total.bytes_at(off.name)
        return moved / (self.time_s * off.sustained_bytes_per_s) if self.time_s else 0.0

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation, 0..1 (:mod:`workbench.cost.utilisation`), <= :attr:`hfu`."""
        return self._utilisation()[0]

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilisation, 0..1: engine-seconds of executed FLOPs / step time."""
        return self._utilisation()[1]

    def _utilisation(self) -> tuple[float, float]:
        return utilisation(self.kernels, self.hardware, self.peak_flops, self.time_s)

    @property
    def phase(self) -> str:
        """The graph's phase (prefill, decode, encode, inference)."""
        return str(self.graph.meta_dict().get("phase", "inference"))

    @property
    def items_per_step(self) -> int:
        """Tokens (prefill/encode: batch x seq; decode: batch) or images per step."""
        meta = self.graph.meta_dict()
        batch = int(str(meta.get("batch") or 1))
        if self.phase in ("prefill", "encode"):
            return batch * int(str(meta.get("seq") or 1))
        return batch

    @property
    def tokens_per_s(self) -> float:
        """Tokens (or images, for vision models) per second."""
        return self.items_per_step / self.time_s if self.time_s else 0.0

    @property
    def energy_j(self) -> float:
        """Energy of one step, joules."""
        return self.total.energy_j

    @property
    def power_w(self) -> float:
        """Average power over the step, watts."""
        return self.energy_j / self.time_s if self.time_s else 0.0

    @property
    def perf_per_watt(self) -> float:
        """Tokens (or images) per joule = per second per watt."""
        return self.items_per_step / self.energy_j if self.energy_j else 0.0

    def time_by_layer_type(self) -> dict[str, float]:
        """Seconds per layer type (every type of :data:`LAYER_TYPES`)."""
        out = dict.fromkeys(LAYER_TYPES, 0.0)
        for k in self.kernels:
            out[k.kernel.layer_type] += k.cost.total_s
        return out

    def stall_fraction_by_layer_type(self) -> dict[str, float]:
        """Memory-stall fraction per layer type present in the model, 0..1."""
        time: dict[str, float] = {}
        stall: dict[str, float] = {}
        for k in self.kernels:
            lt = k.kernel.layer_type
            time[lt] = time.get(lt, 0.0) + k.cost.total_s
            stall[lt] = stall.get(lt, 0.0) + k.cost.stall_s
        return {lt: (stall[lt] / t if t else 0.0) for lt, t in time.items()}

    def mfu_by_layer_type(self) -> dict[str, float]:
        """Each layer type's MFU: its kernels' MFU credit (seconds) over its time, 0..1."""
        credit: dict[str, float] = {}
        time: dict[str, float] = {}
        for k in self.kernels:
            lt = k.kernel.layer_type
            credit[lt] = credit.get(lt, 0.0) + credit_s(k, self.hardware, self.peak_flops)
            time[lt] = time.get(lt, 0.0) + k.cost.total_s
        return {lt: (credit[lt] / t if t else 0.0) for lt, t in time.items()}

    def bottleneck_counts(self) -> dict[str, int]:
        """How many kernels fall in each bottleneck class."""
        out: dict[str, int] = {}
        for k in self.kernels:
            out[k.cost.bottleneck] = out.get(k.cost.bottleneck, 0) + 1
        return out

    def kernel(self, name: str) -> KernelMapping:
        """The kernel called ``name``."""
        for k in self.kernels:
            if k.kernel.name == name:
                return k
        raise KeyError(name)


def _model_dtype(graph: Graph, options: MapOptions) -> str:
    if options.dtype:
        return options.dtype
    for op in graph.ops:
        if isinstance(op, (Linear, MatMul, Conv2d, Attention)):
            return op.dtype
    return graph.ops[0].dtype if graph.ops else "fp32"


#: Evidence of the step-overhead row.
STEP_EVIDENCE = (
    "overhead: runtime cost of the serving step outside its kernels (sampling, scheduler, "
    "KV-cache bookkeeping; the stack's MapOptions.step_overhead_s, else hardware overheads.step_s)"
)


def step_overhead(graph: Graph, hw: Hardware, options: MapOptions | None = None) -> float:
    """Seconds an LLM serving step (prefill or decode) pays outside its kernels, else 0.

    The software stack's figure (``options.step_overhead_s``) when given, else the profile's
    ``overheads.step_s``.
    """
    phase = str(graph.meta_dict().get("phase", ""))
    if phase not in ("prefill", "decode"):
        return 0.0
    return host_step_s(hw, options)


def host_step_s(hw: Hardware, options: MapOptions | None = None) -> float:
    """Host time one step or inference run pays outside its kernels, seconds.

    The software stack's figure (``options.step_overhead_s``) when given, else the profile's
    ``overheads.step_s``.
    """
    if options is not None and options.step_overhead_s is not None:
        return options.step_overhead_s
    return hw.overheads.step_s


def _overlap_collectives(mapped: list[KernelMapping]) -> list[KernelMapping]:
    """Hide each collective behind the GEMM right before it (chunked comm/compute overlap).

    The producing GEMM is cut into chunks whose partial outputs are reduced while the next
    chunk computes, so the collective's link time up to the GEMM's execution time is hidden;
    its launch and the rest stay exposed.
    """
    out = list(mapped)
    for i in range(1, len(out)):
        k, prev = out[i], out[i - 1]
        if k.kernel.kind != "collective" or prev.kernel.gemm is None:
            continue
        c = k.cost
        hidden = min(c.exec_s, prev.cost.exec_s)
        note = (f"; overlapped with {prev.kernel.name}: {hidden * 1e6:.3g} us of "
                f"{c.exec_s * 1e6:.3g} us hidden")  # fmt: skip
        cost = replace(c, exec_s=c.exec_s - hidden, total_s=c.total_s - hidden,
                       evidence=c.evidence + note)  # fmt: skip
        out[i] = replace(k, cost=cost)
    return out


def _schedule_cached(kernel: Kernel, hw: Hardware, options: MapOptions) -> tuple[Tiling, Cost]:
    override = options.tile_for(kernel.name)
    key = (
        kernel.signature(),
        id(hw),
        override,
        options.launch,
        options.launch_host_s if options.launch == "eager" else None,  # NOTE: graph replay: unused
        options.search,
        options.attention_kernel,
    )
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    _HW_PINS[id(hw)] = hw  # NOTE: keeps id(hw) from being reused while cached entries exist
    result = schedule(kernel, hw, options)
    _CACHE[key] = result
    if len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return result


def clear_cache() -> None:
    """Forget every cached schedule (benchmarks use it to measure a cold mapping)."""
    _CACHE.clear()
    _HW_PINS.clear()


def map_model(graph: Graph, hw: Hardware, options: MapOptions | None = None) -> ModelMapping:
    """Map ``graph`` onto ``hw``: lower, schedule and cost every kernel.

    Args:
        graph: The operator graph.
        hw: The hardware profile.
        options: Overrides; ``None`` means the defaults (search everything, all fusion on).

    Returns:
        The :class:`ModelMapping` with every kernel's tiling and cost and the model totals.

    Raises:
        OptionsError: An argument of the wrong type (the message names it).
    """
    for what, value, kind in (("graph", graph, Graph), ("hw", hw, Hardware)):
        if not isinstance(value, kind):
            got = type(value).__name__
            raise OptionsError(f"map_model: {what} must be a {kind.__name__}, got {got}")
    if options is not None and not isinstance(options, MapOptions):
        got = type(options).__name__
        raise OptionsError(f"map_model: options must be a MapOptions or None, got {got}")
    options = options or MapOptions()
    mapped = []
    for kernel in lower(graph, hw, options):
        tiling, cost = _schedule_cached(kernel, hw, options)
        mapped.append(KernelMapping(kernel=kernel, tiling=tiling, cost=cost))
    if options.overlap_collectives:
        mapped = _overlap_collectives(mapped)
    total = sum((k.cost for k in mapped), Cost())
    step_s = step_overhead(graph, hw, options)
    if step_s > 0:
        total = total + Cost(
            launch_s=step_s,
            total_s=step_s,
            energy_j=hw.power.idle_w * step_s,
            bottleneck="overhead",
            evidence=STEP_EVIDENCE,
        )
    dtype = _model_dtype(graph, options)
    peak, peak_name = model_peak(hw, dtype)
    return ModelMapping(
        graph=graph,
        hardware=hw,
        options=options,
        kernels=tuple(mapped),
        total=total,
        dtype=dtype,
        mfu_peak_flops=peak,
        mfu_peak_name=peak_name,
        step_overhead_s=step_s,
    )
