"""How much memory a graph needs on one chip, and whether its sizes are in range at all.

The checks that every command mapping a model runs before it prints a figure, and that every
widget applies before it draws one (issue 20: one implementation, so ``workbench map``, the
explorer, the lens and the latency panel accept and refuse the same settings for the same reason):

* :func:`position_refusal`: the step needs more positions than the model has (a prompt, or a
  decode step's cached context + 1 new token, past ``max_seq``).

* :func:`check_graph_size`: every tensor, FLOP count and byte count of the graph is far below what
  the cost model's 64-bit integer and float arithmetic can hold (a ``--batch 100000000`` or a
  ``hidden_size: 10**12`` is refused with one line instead of wrapping to negative times).
* :func:`graph_footprint`: weights + KV cache + the largest single op's live activations against
  the off-chip capacity of one chip (the same convention as :mod:`workbench.platform.fit`, but
  computed from any graph, so presets, ``config.json`` and ONNX models are all checked).
* :func:`step_refusal`: the two above for one mapped step, as the one line a widget shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench._format import fmt_capacity
from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.ir import Attention, Graph
from workbench.ir.dtypes import dtype_info
from workbench.models.config import TransformerConfig

__all__ = [
    "MAX_GRAPH_FLOPS",
    "MAX_TENSOR_BYTES",
    "Footprint",
    "check_graph_size",
    "graph_footprint",
    "position_refusal",
    "step_refusal",
]

#: Largest tensor accepted, bytes (2**50 = 1 PiB: 1,000 x the largest single-chip memory, and
#: far enough below 2**63 that tile counts, traffic and padding products stay exact in int64).
MAX_TENSOR_BYTES = 2**50
#: Largest FLOP count of the whole graph accepted (2**62: below int64's 2**63 - 1).
MAX_GRAPH_FLOPS = 2**62


def check_graph_size(graph: Graph, where: str = "") -> None:
    """Refuse a graph whose sizes the cost arithmetic cannot hold exactly.

    Args:
        graph: The graph to check.
        where: What built it (``"--batch 100000000"``, a file name), for the message.

    Raises:
        WorkbenchError: One line naming the op and the size that is out of range.
    """
    prefix = f"{where}: " if where else f"model {graph.name!r}: "
    for op in graph.ops:
        for t in (*op.input_tensors(), op.output_tensor(), *op.weight_tensors()):
            if t.nbytes > MAX_TENSOR_BYTES:
                raise WorkbenchError(
                    f"{prefix}tensor {t.name!r} of op {op.name!r} would take {t.nbytes:.3g} bytes "
                    f"(shape {'x'.join(map(str, t.shape))}); the limit is 2**50 (1 PiB): "
                    "reduce the batch, sequence or model sizes"
                )
    if graph.flops > MAX_GRAPH_FLOPS:
        raise WorkbenchError(
            f"{prefix}{graph.flops:.3g} FLOPs per step exceed the 2**62 the cost model can "
            "hold: reduce the batch, sequence or model sizes"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Footprint:
    """Memory need of one chip against its off-chip capacity (bytes).

    Attributes:
        weights_bytes: Parameters on one chip (in the weight format), bytes.
        kv_bytes: KV cache the step reads, bytes.
        activation_bytes: The largest single op's live activations (inputs + output), bytes.
        capacity_bytes: Off-chip memory of one chip, bytes.
        memory_name: Name of that memory level (e.g. ``"hbm"``).
    """

    weights_bytes: int
    kv_bytes: int
    activation_bytes: int
    capacity_bytes: int
    memory_name: str

    @property
    def memory_bytes(self) -> int:
        """Weights + KV cache + activations, bytes."""
        return self.weights_bytes + self.kv_bytes + self.activation_bytes

    @property
    def fits(self) -> bool:
        """Whether :attr:`memory_bytes` fits in one chip's off-chip memory."""
        return self.memory_bytes <= self.capacity_bytes

    @property
    def reason(self) -> str:
        """One sentence: the need against the capacity and its parts (empty when it fits)."""
        if self.fits:
            return ""
        return (
            f"needs {fmt_capacity(self.memory_bytes, 4)} per chip (weights "
            f"{fmt_capacity(self.weights_bytes, 4)}, KV cache {fmt_capacity(self.kv_bytes, 4)}, "
            f"activations {fmt_capacity(self.activation_bytes, 4)}) but {self.memory_name} holds "
            f"{fmt_capacity(self.capacity_bytes, 4)}"
        )

    def as_dict(self) -> dict[str, object]:
        """The JSON fields (``fits``, ``memory_bytes``, ``capacity_bytes``, parts, ``reason``)."""
        return {
            "fits": self.fits,
            "memory_bytes": self.memory_bytes,
            "capacity_bytes": self.capacity_bytes,
            "weights_bytes": self.weights_bytes,
            "kv_bytes": self.kv_bytes,
            "activation_bytes": self.activation_bytes,
            "reason": self.reason,
        }


def graph_footprint(graph: Graph, hw: Hardware, weight_dtype: str | None = None) -> Footprint:
    """Memory one chip needs to run one step of ``graph`` (weights, KV cache, activations).

    Args:
        graph: The per-chip graph (a tensor-parallel graph already holds one chip's share).
        hw: The hardware; its outermost memory level is the capacity.
        weight_dtype: Weight-only format (``--weight-dtype``); None keeps the graph's.

    Returns:
        The :class:`Footprint`.

    >>> from workbench.hw import load_hardware
    >>> from workbench.models import build_graph
    >>> graph_footprint(build_graph("llama2-70b", seq=16), load_hardware("h100-sxm")).fits
    False
    """
    # NOTE: parameters, not the weight bytes a step reads: an embedding reads only the rows it
    # gathers but holds its whole table.
    weights = sum(op.params * dtype_info(weight_dtype or op.dtype).bits // 8 for op in graph.ops)
    kv = sum(t.nbytes for op in graph.ops if isinstance(op, Attention) for t in op.weight_tensors())
    acts = max(
        (sum(t.nbytes for t in op.input_tensors()) + op.output_tensor().nbytes for op in graph.ops),
        default=0,
    )
    return Footprint(
        weights_bytes=int(weights),
        kv_bytes=int(kv),
        activation_bytes=int(acts),
        capacity_bytes=int(hw.offchip.capacity_bytes),
        memory_name=hw.offchip.name,
    )


def position_refusal(
    cfg: TransformerConfig, *, phase: str, seq: int, context: int | None = None
) -> str:
    """Why a step needs more positions than the model has ('' when it fits its context).

    A prompt of ``seq`` tokens needs ``seq`` positions; a decode step reads ``context`` (default
    ``seq``) cached tokens and adds one, so it needs ``context + 1``. ``workbench map`` prefixes
    the flag (``--seq``/``--context``) and, for a RoPE model, offers ``--allow-long-context``;
    a widget shows the line as it is.

    Args:
        cfg: The model's configuration.
        phase: ``"prefill"`` or ``"decode"`` (encoders are always a prompt).
        seq: Prompt tokens, or the cached context of a decode step, tokens.
        context: Cached tokens of a decode step when it differs from ``seq``.

    Returns:
        One line naming the limit and the positions the step needs, or ''.

    >>> from workbench.models.presets import PRESETS
    >>> position_refusal(PRESETS["llama2-7b"], phase="decode", seq=4096)
    "llama2-7b's context is 4096 tokens; this step needs 4097 positions (context + 1 new token)"
    >>> position_refusal(PRESETS["llama2-7b"], phase="prefill", seq=4096)
    ''
    """
    decode = cfg.causal and phase == "decode"
    need = ((context if context is not None else seq) + 1) if decode else seq
    if need <= cfg.max_seq:
        return ""
    what = f"{need} positions ({'context + 1 new token' if decode else 'prompt'})"
    if cfg.position == "learned":
        return f"{cfg.name} has {cfg.max_seq} learned positions; this step needs {what}"
    return f"{cfg.name}'s context is {cfg.max_seq} tokens; this step needs {what}"


def step_refusal(graph: Graph, hw: Hardware, weight_dtype: str | None = None) -> str:
    """Why one mapped step of ``graph`` has no meaningful time on one chip of ``hw`` ('' if none).

    The sizes of :func:`check_graph_size`, then the memory of :func:`graph_footprint` (weights +
    KV cache + the largest op's live activations against the off-chip capacity): the same
    figures and the same reason ``workbench map`` prints on its ``memory`` line.

    Args:
        graph: The per-chip graph of the step.
        hw: The hardware.
        weight_dtype: Weight-only format; None keeps the graph's.

    Returns:
        One line (binary units), or ''.
    """
    try:
        check_graph_size(graph)
    except WorkbenchError as exc:
        return str(exc)
    fp = graph_footprint(graph, hw, weight_dtype)
    return f"does not fit on one {hw.name}: {fp.reason}" if not fp.fits else ""
