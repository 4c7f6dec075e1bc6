"""Does a workload fit in a platform's memory? Weights + KV cache + activations against capacity.

Per chip of one replica (``tensor_parallel`` chips share a replica; data-parallel replicas each
hold a full copy, so they do not change the per-chip figure):

- weights: the per-chip graph's parameters x the weight format's bytes (tensor parallel splits
  the heads, the MLP and the vocabulary N ways; norms are replicated);
- KV cache: ``2 x layers x ceil(kv_heads / N) x head_dim x context x batch x bytes`` at the
  workload's largest context and batch (decoders only);
- activations: the peak activation working set, estimated as the largest single op's live
  activations (its activation inputs plus its output) in a prefill of ``batch x prefill_tokens``
  (images: one batch). Fused attention never materialises the score matrix, so it is not counted.

The total is compared with what the software stack leaves of one chip's off-chip memory
(``hw.offchip.capacity_bytes``): a serving stack keeps a share back (vLLM's default
``gpu_memory_utilization`` of 0.9 leaves 10% for the CUDA context, the allocator and other
processes; ``stacks/*.yaml``'s ``memory_reserve_fraction``, with its source), and the report states
that reserve and the headroom left after it. A stack that states none reserves nothing, and the
report says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench._format import fmt_capacity
from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.hw.stack import DEFAULT_STACK, Stack, load_stack
from workbench.ir.dtypes import dtype_info
from workbench.models import build_graph
from workbench.models.footprint import graph_footprint, position_refusal, step_refusal
from workbench.models.presets import PRESETS

__all__ = [
    "FitReport",
    "MemoryReserve",
    "fit_check",
    "kv_bytes_per_token",
    "max_kv_tokens",
    "memory_reserve",
    "setting_refusal",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryReserve:
    """The share of one chip's off-chip memory a software stack keeps from the model.

    Attributes:
        stack: The stack's name.
        fraction: Share of the capacity held back (0 when the stack states none), no unit.
        origin: Where the figure comes from (the stack file's source or assumption); '' when
            the stack states none.
    """

    stack: str
    fraction: float
    origin: str

    def bytes_of(self, capacity_bytes: int) -> int:
        """The reserve on a chip of ``capacity_bytes``, bytes."""
        return int(self.fraction * capacity_bytes)

    def as_dict(self, capacity_bytes: int, memory_bytes: int) -> dict[str, object]:
        """The reserve and what it leaves for a need of ``memory_bytes`` (bytes; JSON fields).

        ``headroom_bytes`` is what is left after the reserve and the need, ``shortfall_bytes``
        how much the need exceeds what the reserve leaves; one of them is 0.
        """
        left = capacity_bytes - self.bytes_of(capacity_bytes) - memory_bytes
        return {
            "stack": self.stack,
            "reserve_fraction": self.fraction,
            "reserve_bytes": self.bytes_of(capacity_bytes),
            "reserve_source": self.origin,
            "fits_after_reserve": left >= 0,
            "headroom_bytes": max(left, 0),
            "shortfall_bytes": max(-left, 0),
        }

    def text(self, capacity_bytes: int, memory_name: str) -> str:
        """One clause stating the reserve and where it comes from (binary units)."""
        if self.fraction == 0:
            return (
                f"stack {self.stack} states no memory reserve (the CUDA context, allocator and "
                f"workspace are not counted)"
            )
        return (
            f"stack {self.stack} reserves {fmt_capacity(self.bytes_of(capacity_bytes), 4)} "
            f"({self.fraction:.0%} of {memory_name}; {self.origin})"
        )


def memory_reserve(stack: str | Stack | None = None) -> MemoryReserve:
    """The memory reserve of ``stack`` (a name, a loaded stack, or None: the default stack).

    >>> memory_reserve("vllm").fraction
    0.1
    >>> memory_reserve().fraction
    0.0
    """
    s = stack if isinstance(stack, Stack) else load_stack(stack or DEFAULT_STACK)
    fig = s.memory_reserve_fraction
    if fig is None:
        return MemoryReserve(stack=s.name, fraction=0.0, origin="")
    return MemoryReserve(
        stack=s.name, fraction=fig.value, origin=fig.source or fig.assumption or ""
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class FitReport:
    """Memory need of one chip of a replica against its capacity (bytes).

    Attributes:
        model: Model name.
        hardware: Profile name.
        tensor_parallel: Chips one replica is split over.
        batch: Sequences (or images) resident at once.
        context: Largest context, tokens (0 for image models).
        capacity_bytes: Off-chip memory of one chip, bytes.
        weights_bytes: Weights on one chip, bytes.
        kv_bytes: KV cache on one chip at ``batch`` x ``context``, bytes.
        activation_bytes: Peak activation working-set estimate on one chip, bytes.
        reserve: What the software stack keeps back of the capacity.
    """

    model: str
    hardware: str
    tensor_parallel: int
    batch: int
    context: int
    capacity_bytes: int
    weights_bytes: int
    kv_bytes: int
    activation_bytes: int
    reserve: MemoryReserve

    @property
    def reserve_bytes(self) -> int:
        """The stack's reserve on one chip, bytes."""
        return self.reserve.bytes_of(self.capacity_bytes)

    @property
    def usable_bytes(self) -> int:
        """Capacity less the stack's reserve: what the model may use on one chip, bytes."""
        return self.capacity_bytes - self.reserve_bytes

    @property
    def total_bytes(self) -> int:
        """Weights + KV cache + activations on one chip, bytes."""
        return self.weights_bytes + self.kv_bytes + self.activation_bytes

    @property
    def fits(self) -> bool:
        """Whether the total fits in what the stack leaves of one chip's off-chip memory."""
        return self.total_bytes <= self.usable_bytes

    @property
    def headroom_bytes(self) -> int:
        """Usable memory left over after the reserve (negative when it does not fit), bytes."""
        return self.usable_bytes - self.total_bytes

    @property
    def dominant(self) -> str:
        """Which term is largest: ``"weights"``, ``"kv_cache"`` or ``"activations"``."""
        terms = {
            "weights": self.weights_bytes,
            "kv_cache": self.kv_bytes,
            "activations": self.activation_bytes,
        }
        return max(terms, key=lambda k: terms[k])

    def summary(self) -> str:
        """One line: fits or not, the total against capacity and the dominant term."""
        verdict = "fits" if self.fits else "does not fit"
        left = "headroom" if self.fits else "over by"
        return (
            f"{self.model} on {self.tensor_parallel} x {self.hardware}: {verdict} "
            f"({fmt_capacity(self.total_bytes)} of {fmt_capacity(self.usable_bytes)} usable per "
            f"chip, {left} {fmt_capacity(abs(self.headroom_bytes))}; "
            f"{self.reserve.text(self.capacity_bytes, 'memory')}; "
            f"weights {fmt_capacity(self.weights_bytes)}, KV {fmt_capacity(self.kv_bytes)}, "
            f"activations {fmt_capacity(self.activation_bytes)}; largest: {self.dominant})"
        )


def kv_bytes_per_token(model: str, dtype: str = "bf16", tensor_parallel: int = 1) -> int:
    """KV-cache bytes one token of context takes on one chip (0 for non-decoders).

    Args:
        model: Preset name.
        dtype: KV-cache format.
        tensor_parallel: Chips the KV heads are split over.

    Returns:
        ``2 x layers x ceil(kv_heads / N) x head_dim x bytes``.

    >>> kv_bytes_per_token("llama2-7b")
    524288
    """
    cfg = PRESETS.get(model)
    if cfg is None or not cfg.causal:
        return 0
    kv_heads = cfg.kv_heads or cfg.heads
    head_dim = cfg.head_dim or cfg.hidden // cfg.heads
    per_chip = math.ceil(kv_heads / tensor_parallel)
    return int(2 * cfg.layers * per_chip * head_dim * dtype_info(dtype).bits // 8)


def fit_check(
    model: str,
    hw: Hardware,
    *,
    batch: int = 1,
    context: int = 4096,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
    tensor_parallel: int = 1,
    prefill_tokens: int | None = None,
    stack: str | Stack | None = None,
) -> FitReport:
    """Memory need of a model serving ``batch`` sequences of up to ``context`` tokens.

    Args:
        model: Preset name.
        hw: Platform.
        batch: Sequences (or images) resident at once.
        context: Largest context, tokens (ignored for image models).
        dtype: Activation and KV format.
        weight_dtype: Weight format (None: ``dtype``).
        tensor_parallel: Chips one replica is split over.
        prefill_tokens: Tokens per sequence in the largest prefill (None: ``context``).
        stack: Software stack whose memory reserve is held back (None: the default stack).

    Returns:
        The :class:`FitReport`.

    Example:
        >>> from workbench.hw import load_hardware
        >>> fit_check("llama2-70b", load_hardware("h100-sxm"), batch=1, context=4096).fits
        False
    """
    if batch < 1 or context < 1 or tensor_parallel < 1:
        raise WorkbenchError(
            f"fit_check: batch, context and tensor_parallel must be >= 1, "
            f"got {batch}, {context}, {tensor_parallel}"
        )
    decoder = model in PRESETS and PRESETS[model].causal
    tokens = min(prefill_tokens or context, PRESETS[model].max_seq) if model in PRESETS else 1
    # NOTE: one arithmetic with ``workbench map`` and the widgets (graph_footprint): the weights
    # of the per-chip graph, the activations of the largest prefill. The KV cache is the
    # per-token count (graph_footprint gives the same bytes for a decode step at ``context``,
    # tested), so a context at a learned-position model's limit is still sized.
    graph = build_graph(model, "decode" if decoder else "prefill", batch=1, seq=min(tokens, 512),
                        context=1, dtype=dtype, tensor_parallel=tensor_parallel)  # fmt: skip
    weights = graph_footprint(graph, hw, weight_dtype or dtype).weights_bytes
    kv = kv_bytes_per_token(model, dtype, tensor_parallel) * context * batch if decoder else 0
    prefill = build_graph(model, "prefill", batch=batch, seq=tokens, dtype=dtype,
                          tensor_parallel=tensor_parallel)  # fmt: skip
    acts = graph_footprint(prefill, hw).activation_bytes
    return FitReport(
        model=model,
        hardware=hw.name,
        tensor_parallel=tensor_parallel,
        batch=batch,
        context=context if decoder else 0,
        capacity_bytes=int(hw.offchip.capacity_bytes),
        weights_bytes=int(weights),
        kv_bytes=int(kv),
        activation_bytes=int(acts),
        reserve=memory_reserve(stack),
    )


def max_kv_tokens(report: FitReport, model: str, dtype: str = "bf16") -> int | None:
    """KV-cache tokens one replica can hold beside its weights and activations (None: no KV).

    Args:
        report: A fit report of the replica.
        model: Preset name.
        dtype: KV format.

    Returns:
        ``(usable - weights - activations) / kv_bytes_per_token`` (0 when nothing is left;
        usable is the capacity less the stack's reserve).
    """
    per_token = kv_bytes_per_token(model, dtype, report.tensor_parallel)
    if per_token == 0:
        return None
    free = report.usable_bytes - report.weights_bytes - report.activation_bytes
    return max(0, free // per_token)


def setting_refusal(
    model: str, hw: Hardware, *, phase: str, batch: int, seq: int, dtype: str = "bf16"
) -> str:
    """Why a (model, phase, batch, seq) step has no meaningful time on ``hw`` ('' when it has one).

    The checks ``workbench map`` applies, by the same code, for every place that offers a
    setting (the explorer's sliders, the lens and latency panels, a lesson's instruction "drag
    seq to N"): the positions the step needs against the model's context
    (:func:`workbench.models.footprint.position_refusal`: a decode step needs its context + 1),
    then the size and memory check of the step's own graph
    (:func:`workbench.models.footprint.step_refusal`: weights + KV cache + activations against
    one chip's off-chip capacity). ``map`` stops with the first (exit 2) and prints the second
    on its ``memory`` line; a widget shows either instead of a step time.

    Args:
        model: Preset name.
        hw: Platform.
        phase: ``prefill`` or ``decode``.
        batch: Sequences resident at once.
        seq: Prompt length, or the cached context of a decode step, tokens.
        dtype: Activation, weight and KV format.

    Returns:
        One line naming the limit and the numbers (binary units), or ''.

    Example:
        >>> from workbench.hw import load_hardware
        >>> setting_refusal("llama2-7b", load_hardware("h100-sxm"), phase="decode", batch=1,
        ...                 seq=4096)
        "llama2-7b's context is 4096 tokens; this step needs 4097 positions (context + 1 new token)"
    """
    cfg = PRESETS.get(model)
    if cfg is not None:
        why = position_refusal(cfg, phase=phase, seq=seq)
        if why:
            return why
    try:
        graph = build_graph(model, phase, batch=batch, seq=seq, dtype=dtype)
    except WorkbenchError as exc:
        return str(exc)
    return step_refusal(graph, hw)
