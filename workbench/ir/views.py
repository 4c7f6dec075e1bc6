"""Shape-only operators: a zero-cost :class:`Reshape` view and a copying :class:`Slice`.

They exist so that builders and importers can connect ops whose tensors differ only in how they
are viewed (ONNX ``Reshape``/``Flatten``/``Squeeze``) or that read part of a tensor (the last
token before the LM head, the ``[CLS]`` token before BERT's pooler), while every edge of the
graph keeps an exact shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from workbench.errors import GraphError
from workbench.ir.ops import Op

__all__ = ["Reshape", "Slice"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reshape(Op):
    """Reinterpret a contiguous tensor with a new shape: no FLOPs and no bytes moved (a view).

    Attributes:
        shape: Input shape.
        to: Output shape; same number of elements.
    """

    shape: tuple[int, ...]
    to: tuple[int, ...]
    layer_type: str = "layout"
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape", "to")

    def _validate(self) -> None:
        if math.prod(self.shape) != math.prod(self.to):
            raise GraphError(
                f"op {self.name!r}: cannot reshape {self.shape} to {self.to} "
                "(element counts differ)"
            )

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The one input, of :attr:`shape`."""
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        """:attr:`to`."""
        return self.to

    @property
    def bytes_read(self) -> int:
        """Zero: a view moves no data."""
        return 0

    @property
    def bytes_written(self) -> int:
        """Zero: a view moves no data."""
        return 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Slice(Op):
    """Copy ``[start, stop)`` of one axis: no FLOPs; reads and writes the selected bytes.

    Attributes:
        shape: Input shape.
        axis: Axis sliced (negative counts from the end).
        start, stop: Half-open index range along ``axis``.
    """

    shape: tuple[int, ...]
    axis: int
    start: int
    stop: int
    layer_type: str = "layout"
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape",)

    def _validate(self) -> None:
        if not -len(self.shape) <= self.axis < len(self.shape):
            raise GraphError(f"op {self.name!r}: axis {self.axis} out of range for {self.shape}")
        size = self.shape[self.axis]
        if not 0 <= self.start < self.stop <= size:
            raise GraphError(
                f"op {self.name!r}: slice [{self.start}, {self.stop}) out of range 0..{size}"
            )

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The one input, of :attr:`shape`."""
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        """:attr:`shape` with ``axis`` cut to ``stop - start``."""
        out = list(self.shape)
        out[self.axis] = self.stop - self.start
        return tuple(out)

    @property
    def bytes_read(self) -> int:
        """Only the selected part is read: the output's bytes."""
        return self.output_tensor().nbytes
