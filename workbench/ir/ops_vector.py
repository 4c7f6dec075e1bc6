"""Vector operators: norms, softmax, elementwise, reduce, gather, pool, layout and quantize."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from workbench.errors import GraphError
from workbench.ir.dtypes import DTYPES, bytes_for, canonical
from workbench.ir.ops_base import (
    _BINARY,
    ELEMENTWISE_FLOPS,
    LAYER_TYPES,
    LAYERNORM_FLOPS,
    RMSNORM_FLOPS,
    SOFTMAX_FLOPS,
    Op,
    Tensor,
    _positive,
)

__all__ = [
    "Dequantize",
    "Elementwise",
    "Embedding",
    "LayerNorm",
    "Pool",
    "Quantize",
    "RMSNorm",
    "Reduce",
    "Softmax",
    "Transpose",
]


# ---------------------------------------------------------------------------------------------
# Vector ops
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class _RowOp(Op):
    """An op over the last dimension of ``shape`` (rows x cols)."""

    shape: tuple[int, ...]
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape",)

    @property
    def rows(self) -> int:
        """Number of independent rows (product of all but the last dimension)."""
        return math.prod(self.shape[:-1])

    @property
    def cols(self) -> int:
        """Length of the reduced (last) dimension."""
        return self.shape[-1]

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,) * self.n_inputs

    def output_shape(self) -> tuple[int, ...]:
        return self.shape


@dataclass(frozen=True, slots=True, kw_only=True)
class Softmax(_RowOp):
    """Softmax over the last dimension (5 FLOPs per element)."""

    layer_type: str = "attention"

    @property
    def vector_flops(self) -> int:
        return SOFTMAX_FLOPS * math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerNorm(_RowOp):
    """Layer normalisation over the last dimension, with gamma and beta (8 FLOPs per element)."""

    layer_type: str = "norm"

    def weight_tensors(self) -> tuple[Tensor, ...]:
        return (Tensor(name=f"{self.name}.gamma_beta", shape=(2, self.cols), dtype=self.dtype),)

    @property
    def vector_flops(self) -> int:
        return LAYERNORM_FLOPS * math.prod(self.shape)

    @property
    def params(self) -> int:
        return 2 * self.cols


@dataclass(frozen=True, slots=True, kw_only=True)
class RMSNorm(_RowOp):
    """Root-mean-square normalisation over the last dimension, with gamma (5 FLOPs/element)."""

    layer_type: str = "norm"

    def weight_tensors(self) -> tuple[Tensor, ...]:
        return (Tensor(name=f"{self.name}.gamma", shape=(self.cols,), dtype=self.dtype),)

    @property
    def vector_flops(self) -> int:
        return RMSNORM_FLOPS * math.prod(self.shape)

    @property
    def params(self) -> int:
        return self.cols


@dataclass(frozen=True, slots=True, kw_only=True)
class Elementwise(Op):
    """A unary or binary elementwise op (GELU, SiLU, ReLU, residual add, bias, RoPE, scale ...).

    Binary kinds (``add``, ``mul``, ``swiglu`` ...) take two inputs of the same shape; ``bias``
    adds a parameter vector along ``channel_axis``; ``affine`` multiplies by one and adds another
    (inference batch norm: gamma and beta, 2 parameters per channel); the rest are unary.

    Attributes:
        op: The kind, a key of :data:`ELEMENTWISE_FLOPS`.
        shape: Shape of the output (and of every input).
        channel_axis: Axis the ``bias``/``affine`` parameters run along (1 for NCHW).
    """

    op: str
    shape: tuple[int, ...]
    channel_axis: int = -1
    n_inputs: ClassVar[int] = -1  # checked in _validate (depends on the kind)

    def __post_init__(self) -> None:
        if self.op not in ELEMENTWISE_FLOPS:
            raise GraphError(
                f"op {self.name!r}: unknown elementwise kind {self.op!r} "
                f"(known: {', '.join(ELEMENTWISE_FLOPS)})"
            )
        want = 2 if self.op in _BINARY else 1
        if len(self.inputs) != want:
            raise GraphError(
                f"op {self.name!r}: {self.op} expects {want} input(s), got {len(self.inputs)}"
            )
        _positive(self.name, shape=self.shape)
        if not -len(self.shape) <= self.channel_axis < len(self.shape):
            raise GraphError(
                f"op {self.name!r}: channel_axis {self.channel_axis} out of range for {self.shape}"
            )
        if self.dtype not in DTYPES:
            object.__setattr__(self, "dtype", canonical(self.dtype, where=f"op {self.name!r}"))
        if self.layer_type not in LAYER_TYPES:
            raise GraphError(f"op {self.name!r}: unknown layer_type {self.layer_type!r}")

    @property
    def arity(self) -> int:
        """Number of activation inputs (1 or 2)."""
        return 2 if self.op in _BINARY else 1

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,) * self.arity

    def input_dtypes(self) -> tuple[str, ...]:
        return (self.dtype,) * self.arity

    def output_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def channels(self) -> int:
        """Length of the parameter vector of ``bias``/``affine`` (size of ``channel_axis``)."""
        return self.shape[self.channel_axis]

    def weight_tensors(self) -> tuple[Tensor, ...]:
        if self.op == "bias":
            return (Tensor(name=f"{self.name}.bias", shape=(self.channels,), dtype=self.dtype),)
        if self.op == "affine":
            shape = (2, self.channels)
            return (Tensor(name=f"{self.name}.scale_shift", shape=shape, dtype=self.dtype),)
        return ()

    @property
    def vector_flops(self) -> int:
        return ELEMENTWISE_FLOPS[self.op] * math.prod(self.shape)

    @property
    def params(self) -> int:
        if self.op == "bias":
            return self.channels
        return 2 * self.channels if self.op == "affine" else 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Reduce(Op):
    """Reduction (sum, mean or max) over one axis, which is removed from the output.

    Attributes:
        shape: Input shape.
        axis: Axis reduced (negative counts from the end).
        op: ``"sum"``, ``"mean"`` or ``"max"``.
    """

    shape: tuple[int, ...]
    axis: int = -1
    op: str = "sum"
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape",)

    def _validate(self) -> None:
        if not -len(self.shape) <= self.axis < len(self.shape):
            raise GraphError(f"op {self.name!r}: axis {self.axis} out of range for {self.shape}")
        if self.op not in ("sum", "mean", "max"):
            raise GraphError(f"op {self.name!r}: reduce op must be sum, mean or max")

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        axis = self.axis % len(self.shape)
        out = self.shape[:axis] + self.shape[axis + 1 :]
        return out or (1,)

    @property
    def vector_flops(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class Embedding(Op):
    """Gather rows of a ``vocab x dim`` table for integer token ids (a graph input).

    Only the gathered rows are read, not the whole table.

    Attributes:
        tokens: Shape of the id tensor (e.g. ``(batch, seq)``).
        vocab: Rows of the table.
        dim: Width of each row.
    """

    tokens: tuple[int, ...]
    vocab: int
    dim: int
    layer_type: str = "embedding"
    n_inputs: ClassVar[int] = 0
    _positive_dims: ClassVar[tuple[str, ...]] = ("tokens", "vocab", "dim")

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return ()

    def output_shape(self) -> tuple[int, ...]:
        return (*self.tokens, self.dim)

    @property
    def bytes_read(self) -> int:
        ids = 4 * math.prod(self.tokens)  # int32 token ids
        return ids + bytes_for(math.prod(self.tokens) * self.dim, self.dtype)

    @property
    def params(self) -> int:
        return self.vocab * self.dim


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool(Op):
    """Max or average pooling over square windows; ``global_avg`` pools the whole plane.

    Attributes:
        batch, channels, height, width: Input sizes.
        kernel, stride, padding: Window (ignored for ``global_avg``).
        op: ``"max"``, ``"avg"`` or ``"global_avg"``.
        layout: ``"NCHW"`` or ``"NHWC"``.
    """

    batch: int
    channels: int
    height: int
    width: int
    kernel: int = 2
    stride: int = 2
    padding: int = 0
    op: str = "max"
    layout: str = "NCHW"
    layer_type: str = "conv"
    _positive_dims: ClassVar[tuple[str, ...]] = (
        "batch",
        "channels",
        "height",
        "width",
        "kernel",
        "stride",
    )

    def _validate(self) -> None:
        if self.op not in ("max", "avg", "global_avg"):
            raise GraphError(f"op {self.name!r}: pool op must be max, avg or global_avg")
        if self.layout not in ("NCHW", "NHWC"):
            raise GraphError(f"op {self.name!r}: layout must be NCHW or NHWC")
        if self.out_hw[0] <= 0:
            raise GraphError(f"op {self.name!r}: window does not fit the input")

    @property
    def out_hw(self) -> tuple[int, int]:
        """Output (height, width)."""
        if self.op == "global_avg":
            return (1, 1)
        h = (self.height + 2 * self.padding - self.kernel) // self.stride + 1
        w = (self.width + 2 * self.padding - self.kernel) // self.stride + 1
        return (h, w)

    def _shape(self, h: int, w: int) -> tuple[int, ...]:
        if self.layout == "NCHW":
            return (self.batch, self.channels, h, w)
        return (self.batch, h, w, self.channels)

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self._shape(self.height, self.width),)

    def output_shape(self) -> tuple[int, ...]:
        return self._shape(*self.out_hw)

    @property
    def vector_flops(self) -> int:
        if self.op == "global_avg":
            return self.batch * self.channels * self.height * self.width
        h, w = self.out_hw
        return self.batch * self.channels * h * w * self.kernel * self.kernel


@dataclass(frozen=True, slots=True, kw_only=True)
class Transpose(Op):
    """Permute dimensions (a data-layout change such as NCHW -> NHWC): no FLOPs, all bytes.

    Attributes:
        shape: Input shape.
        perm: Output dimension i is input dimension ``perm[i]``.
    """

    shape: tuple[int, ...]
    perm: tuple[int, ...]
    layer_type: str = "layout"
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape",)

    def _validate(self) -> None:
        if sorted(self.perm) != list(range(len(self.shape))):
            raise GraphError(
                f"op {self.name!r}: perm {self.perm} is not a permutation of {len(self.shape)} axes"
            )

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[p] for p in self.perm)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rescale(Op):
    """A format conversion with a scale over ``shape`` (2 FLOPs/element), ``dtype`` on one side.

    The other side's format is the field :attr:`_format_field` names, canonicalised as ``dtype``.
    """

    shape: tuple[int, ...]
    _positive_dims: ClassVar[tuple[str, ...]] = ("shape",)
    _format_field: ClassVar[str] = ""

    def _validate(self) -> None:
        fmt = getattr(self, self._format_field)
        if fmt not in DTYPES:
            where = f"op {self.name!r}"
            object.__setattr__(self, self._format_field, canonical(fmt, where=where))

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def vector_flops(self) -> int:
        return 2 * math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class Quantize(_Rescale):
    """Convert ``dtype`` activations to a narrower format ``to`` with a scale (2 FLOPs/element)."""

    to: str
    _format_field: ClassVar[str] = "to"

    @property
    def output_dtype(self) -> str:
        return self.to


@dataclass(frozen=True, slots=True, kw_only=True)
class Dequantize(_Rescale):
    """Convert ``source`` values back to ``dtype`` with a scale (2 FLOPs/element)."""

    source: str
    _format_field: ClassVar[str] = "source"

    def input_dtypes(self) -> tuple[str, ...]:
        return (self.source,)
