"""The operator graph: ops, tensor edges, topological order and validation.

A :class:`Graph` is immutable. It is checked when built: every op's inputs must be produced by an
earlier op or be graph inputs, the shape and dtype a consumer expects must be the shape and dtype
its producer writes, names are unique, and there are no cycles. Errors name the op.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from workbench.errors import GraphError
from workbench.ir.ops import LAYER_TYPES, Op, Tensor

__all__ = ["Graph"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Graph:
    """An operator graph in topological order.

    Attributes:
        name: Human name (e.g. ``"llama2-7b prefill b1 s2048"``).
        ops: The operators, in a valid execution (topological) order.
        meta: Workload facts as ``(key, value)`` pairs: model, phase, batch, seq, context.
    """

    name: str
    ops: tuple[Op, ...]
    meta: tuple[tuple[str, object], ...] = ()
    _producer: dict[str, Op] = field(init=False, repr=False, compare=False, hash=False)
    _consumers: dict[str, tuple[Op, ...]] = field(init=False, repr=False, compare=False, hash=False)
    _inputs: dict[str, Tensor] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        ops = _topological(self.ops)
        if ops is not self.ops:
            object.__setattr__(self, "ops", ops)
        producer: dict[str, Op] = {}
        consumers: dict[str, list[Op]] = {}
        inputs: dict[str, Tensor] = {}
        for op in ops:
            if op.name in producer:
                raise GraphError(f"graph {self.name!r}: duplicate op name {op.name!r}")
            for t in op.input_tensors():
                src = producer.get(t.name)
                if src is not None:
                    _check_edge(src, op, t)
                else:
                    seen = inputs.setdefault(t.name, t)
                    if seen.shape != t.shape or seen.dtype != t.dtype:
                        raise GraphError(
                            f"op {op.name!r}: graph input {t.name!r} expected as "
                            f"{t.shape} {t.dtype} but another op expects {seen.shape} {seen.dtype}"
                        )
                consumers.setdefault(t.name, []).append(op)
            producer[op.name] = op
        object.__setattr__(self, "_producer", producer)
        object.__setattr__(self, "_consumers", {k: tuple(v) for k, v in consumers.items()})
        object.__setattr__(self, "_inputs", inputs)

    # --- edges ---------------------------------------------------------------------------
    def producer(self, tensor: str) -> Op | None:
        """The op that writes ``tensor``, or None for a graph input."""
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> tuple[Op, ...]:
        """Ops that read ``tensor``, in execution order."""
        return self._consumers.get(tensor, ())

    def op(self, name: str) -> Op:
        """The op called ``name``."""
        try:
            return self._producer[name]
        except KeyError:
            raise GraphError(f"graph {self.name!r}: no op named {name!r}") from None

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Tensors read but not produced inside the graph."""
        return tuple(self._inputs.values())

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """Tensors produced but not consumed inside the graph."""
        return tuple(op.output_tensor() for op in self.ops if op.name not in self._consumers)

    # --- totals ----------------------------------------------------------------------------
    @property
    def flops(self) -> int:
        """All FLOPs of the graph (multiply-add = 2)."""
        return sum(op.flops for op in self.ops)

    @property
    def matmul_flops(self) -> int:
        """Multiply-add FLOPs only: the model FLOPs used for MFU."""
        return sum(op.matmul_flops for op in self.ops)

    @property
    def params(self) -> int:
        """Trainable parameters owned by the graph's ops."""
        return sum(op.params for op in self.ops)

    @property
    def bytes_read(self) -> int:
        """Compulsory bytes read, each op alone (no fusion)."""
        return sum(op.bytes_read for op in self.ops)

    @property
    def bytes_written(self) -> int:
        """Compulsory bytes written, each op alone (no fusion)."""
        return sum(op.bytes_written for op in self.ops)

    def by_layer_type(self) -> dict[str, int]:
        """Model FLOPs (all FLOPs) per layer type, for every type in :data:`LAYER_TYPES`."""
        out = dict.fromkeys(LAYER_TYPES, 0)
        for op in self.ops:
            out[op.layer_type] += op.flops
        return out

    def meta_dict(self) -> dict[str, object]:
        """:attr:`meta` as a dict."""
        return dict(self.meta)


def _check_edge(src: Op, dst: Op, expected: Tensor) -> None:
    shape = src.output_shape()
    if shape != expected.shape:
        raise GraphError(
            f"op {dst.name!r}: input {expected.name!r} has shape {shape} from op {src.name!r} "
            f"but {dst.name!r} expects {expected.shape}"
        )
    if src.output_dtype != expected.dtype:
        raise GraphError(
            f"op {dst.name!r}: input {expected.name!r} is {src.output_dtype} from op "
            f"{src.name!r} but {dst.name!r} expects {expected.dtype}"
        )


def _topological(ops: Iterable[Op]) -> tuple[Op, ...]:
    """Return ``ops`` in topological order (the same tuple object if it already is)."""
    ops = tuple(ops)
    names = {op.name for op in ops}
    seen: set[str] = set()
    for op in ops:
        if any(i in names and i not in seen for i in op.inputs):
            break
        seen.add(op.name)
    else:
        return ops
    # Kahn's algorithm, stable with respect to the given order.
    pending = {op.name: sum(1 for i in op.inputs if i in names) for op in ops}
    users: dict[str, list[Op]] = {}
    for op in ops:
        for i in op.inputs:
            if i in names:
                users.setdefault(i, []).append(op)
    ready = [op for op in ops if pending[op.name] == 0]
    order: list[Op] = []
    while ready:
        op = ready.pop(0)
        order.append(op)
        for user in users.get(op.name, ()):
            pending[user.name] -= 1
            if pending[user.name] == 0:
                ready.append(user)
    if len(order) != len(ops):
        stuck = sorted(name for name, n in pending.items() if n > 0)
        raise GraphError(f"graph has a cycle through ops {', '.join(stuck[:5])}")
    return tuple(order)
