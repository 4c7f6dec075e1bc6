"""How much memory a graph needs on one chip, and whether its sizes are in range at all.

Two checks that every command mapping a model runs before it prints a figure:

* :func:`check_graph_size`: every tensor, FLOP count and byte count of the graph is far below what
  the cost model's 64-bit integer and float arithmetic can hold (a ``--batch 100000000`` or a
  ``hidden_size: 10**12`` is refused with one line instead of wrapping to negative times).
* :func:`graph_footprint`: weights + KV cache + the largest single op's live activations against
  the off-chip capacity of one chip (the same convention as :mod:`workbench.platform.fit`, but
  computed from any graph, so presets, ``config.json`` and ONNX models are all checked).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench._format import fmt_capacity
from workbench.errors import WorkbenchError
from workbench.hw.schema import Hardware
from workbench.ir import Attention, Graph
from workbench.ir.dtypes import dtype_info

__all__ = [
    "MAX_GRAPH_FLOPS",
    "MAX_TENSOR_BYTES",
    "Footprint",
    "check_graph_size",
    "graph_footprint",
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
