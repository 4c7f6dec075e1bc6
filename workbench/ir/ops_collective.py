"""Collective operators across chips: AllReduce, AllGather and AllToAll."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from workbench.ir.ops_base import Op

__all__ = ["AllGather", "AllReduce", "AllToAll"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Collective(Op):
    shape: tuple[int, ...]
    chips: int
    layer_type: str = "collective"
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape", "chips")

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllReduce(_Collective):
    """Sum a tensor across ``chips`` devices (each holds the full shape before and after).

    :attr:`link_bytes` is what a ring all-reduce sends per chip: ``2 (N-1)/N x bytes``.
    """

    def output_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def vector_flops(self) -> int:
        return math.prod(self.shape) * (self.chips - 1) // self.chips

    @property
    def link_bytes(self) -> float:
        """Bytes each chip sends over its links in a ring all-reduce."""
        return 2 * (self.chips - 1) / self.chips * self.output_tensor().nbytes


@dataclass(frozen=True, slots=True, kw_only=True)
class AllGather(_Collective):
    """Concatenate each chip's shard along ``axis``; the output is ``chips`` times larger there."""

    axis: int = -1

    def output_shape(self) -> tuple[int, ...]:
        axis = self.axis % len(self.shape)
        s = list(self.shape)
        s[axis] *= self.chips
        return tuple(s)

    @property
    def link_bytes(self) -> float:
        """Bytes each chip sends in a ring all-gather: ``(N-1)/N x output bytes``."""
        return (self.chips - 1) / self.chips * self.output_tensor().nbytes


@dataclass(frozen=True, slots=True, kw_only=True)
class AllToAll(_Collective):
    """Each chip sends a ``1/chips`` slice of its tensor to every other chip (same shape after).

    :attr:`link_bytes` is what each chip sends: ``(N-1)/N x bytes`` (its own slice stays). DLRM's
    embedding exchange is one (``nccl:all_to_all``, NCCL send/recv pairs).
    """

    def output_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def link_bytes(self) -> float:
        """Bytes each chip sends: every slice but its own."""
        return (self.chips - 1) / self.chips * self.output_tensor().nbytes
