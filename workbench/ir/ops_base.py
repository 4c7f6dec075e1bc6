"""Operators of the graph: what each computes, how many FLOPs, how many bytes.

Conventions (used by every op here and by everything downstream):

* **FLOPs**: a multiply-add counts as 2 FLOPs; every other arithmetic operation (add, max, exp,
  divide, compare, rsqrt) counts as 1. :attr:`Op.flops` is every FLOP the op performs;
  :attr:`Op.matmul_flops` is only the multiply-add part done by GEMM-like work (the "model FLOPs"
  of the PaLM paper, used as the MFU numerator).
* **Bytes**: :attr:`Op.bytes_read` is every activation input, weight and state tensor read once at
  its storage dtype; :attr:`Op.bytes_written` is every tensor written once. This is the compulsory
  (minimum) traffic of the op run alone; the mapper adds re-reads from tiling and removes traffic
  that fusion keeps on chip.
* Each op has exactly one output tensor, named after the op. Its activation inputs are named in
  :attr:`Op.inputs` (names of other ops' outputs or of graph inputs); weights and caches belong to
  the op itself (:meth:`Op.weight_tensors`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import ClassVar

from workbench.errors import GraphError
from workbench.ir.dtypes import DTYPES, bytes_for, canonical

__all__ = [
    "ELEMENTWISE_FLOPS",
    "LAYERNORM_FLOPS",
    "LAYER_TYPES",
    "RMSNORM_FLOPS",
    "SOFTMAX_FLOPS",
    "Op",
    "Tensor",
]

LAYER_TYPES = (
    "attention",
    "mlp",
    "conv",
    "norm",
    "elementwise",
    "embedding",
    "collective",
    "layout",
)

#: FLOPs per output element of each elementwise kind (see the module docstring's convention).
ELEMENTWISE_FLOPS: dict[str, int] = {
    "identity": 0,
    "relu": 1,
    "gelu": 8,  # tanh approximation: x^3, 2 mul, add, tanh(~3), add, mul
    "silu": 4,  # exp, add, div, mul
    "sigmoid": 3,
    "tanh": 3,
    "exp": 1,
    "add": 1,  # residual add (binary)
    "sub": 1,
    "mul": 1,  # binary product (e.g. SwiGLU gate * up)
    "div": 1,
    "swiglu": 5,  # silu(a) * b (binary)
    "bias": 1,  # add a per-channel parameter vector
    "affine": 2,  # per-channel scale and shift (inference batch norm): mul + add
    "scale": 1,  # multiply by a scalar
    "rope": 3,  # rotary embedding: 2 mul + 1 add per element
    "clip": 2,
}
_BINARY = frozenset({"add", "sub", "mul", "div", "swiglu"})
SOFTMAX_FLOPS = 5  # max, subtract, exp, sum, divide per element
LAYERNORM_FLOPS = 8  # mean, subtract, square, sum, normalise, rsqrt share, gamma, beta
RMSNORM_FLOPS = 5  # square, sum, rsqrt share, normalise, gamma


@dataclass(frozen=True, slots=True, kw_only=True)
class Tensor:
    """A tensor's name, shape and storage dtype.

    >>> Tensor(name="x", shape=(2, 4), dtype="bf16").nbytes
    16
    """

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Storage size in bytes."""
        return bytes_for(self.numel, self.dtype)


#: Most elements one tensor of an op may have: 2^62, so that element and tile counts stay inside
#: the tile search's 64-bit integers (a backstop against corrupt input; models/footprint.py
#: refuses any tensor past 1 PiB first, naming the flag to change).
MAX_ELEMENTS = 2**62


def _positive(op: str, **dims: int | tuple[int, ...]) -> None:
    for key, value in dims.items():
        values = value if isinstance(value, tuple) else (value,)
        if not values or any((not isinstance(v, int)) or v <= 0 for v in values):
            raise GraphError(f"op {op!r}: {key} must be positive integers, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Op(ABC):
    """Base of every operator.

    Attributes:
        name: Unique op name; also the name of its output tensor.
        inputs: Names of the activation tensors it reads, in the order of :meth:`input_tensors`.
        dtype: Storage and compute format of activations (see :mod:`workbench.ir.dtypes`).
        layer_type: One of :data:`LAYER_TYPES`, used for per-layer-type metrics.
    """

    name: str
    inputs: tuple[str, ...] = ()
    dtype: str = "bf16"
    layer_type: str = "elementwise"

    n_inputs: ClassVar[int] = 1
    _sig: ClassVar[tuple[str, ...]] = ()
    #: Dimensions (fields) that must be positive integers, every entry of a tuple one;
    #: checked before :meth:`_validate`.
    _positive_dims: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            object.__setattr__(self, "dtype", canonical(self.dtype, where=f"op {self.name!r}"))
        if self.layer_type not in LAYER_TYPES:
            raise GraphError(
                f"op {self.name!r}: unknown layer_type {self.layer_type!r} "
                f"(known: {', '.join(LAYER_TYPES)})"
            )
        if len(self.inputs) != self.n_inputs:
            raise GraphError(
                f"op {self.name!r}: expects {self.n_inputs} input(s), got {len(self.inputs)}"
            )
        _positive(self.name, **{d: getattr(self, d) for d in self._positive_dims})
        self._validate()
        self._check_size()

    def _check_size(self) -> None:
        """Refuse an op whose tensors overflow the cost arithmetic (see :data:`MAX_ELEMENTS`)."""
        shapes = (*self.input_shapes(), self.output_shape())
        shapes += tuple(t.shape for t in self.weight_tensors())
        big = max((math.prod(s) for s in shapes), default=0)
        if big > MAX_ELEMENTS:
            raise GraphError(
                f"op {self.name!r}: a tensor of {big:.3g} elements is beyond what the cost "
                f"arithmetic handles (at most 2^62 = {MAX_ELEMENTS:.3g})"
            )

    def _validate(self) -> None:  # noqa: B027 (optional hook, not abstract)
        """Check the op's own dimensions (subclasses)."""

    # --- tensors -------------------------------------------------------------------------
    @abstractmethod
    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Shapes the op expects for each of :attr:`inputs`."""

    @abstractmethod
    def output_shape(self) -> tuple[int, ...]:
        """Shape of the output tensor."""

    @property
    def output_dtype(self) -> str:
        """Storage dtype of the output tensor."""
        return self.dtype

    def input_dtypes(self) -> tuple[str, ...]:
        """Storage dtype of each activation input."""
        return (self.dtype,) * self.n_inputs

    def input_tensors(self) -> tuple[Tensor, ...]:
        """Activation inputs with the shapes and dtypes this op expects."""
        return tuple(
            Tensor(name=n, shape=s, dtype=d)
            for n, s, d in zip(self.inputs, self.input_shapes(), self.input_dtypes(), strict=True)
        )

    def weight_tensors(self) -> tuple[Tensor, ...]:
        """Parameters and state (weights, bias, KV cache) the op reads."""
        return ()

    def output_tensor(self) -> Tensor:
        """The op's one output tensor (named after the op)."""
        return Tensor(name=self.name, shape=self.output_shape(), dtype=self.output_dtype)

    # --- costs ---------------------------------------------------------------------------
    @property
    def flops(self) -> int:
        """All FLOPs (multiply-add = 2)."""
        return self.matmul_flops + self.vector_flops

    @property
    def matmul_flops(self) -> int:
        """FLOPs of multiply-add (GEMM-like) work: the model FLOPs used for MFU."""
        return 0

    @property
    def vector_flops(self) -> int:
        """FLOPs of non-GEMM work (activations, softmax, norms, bias)."""
        return 0

    @property
    def params(self) -> int:
        """Number of trainable parameters the op owns."""
        return 0

    @property
    def bytes_read(self) -> int:
        """Compulsory bytes read: activations, weights and state, each once."""
        acts = sum(t.nbytes for t in self.input_tensors())
        return acts + sum(t.nbytes for t in self.weight_tensors())

    @property
    def bytes_written(self) -> int:
        """Compulsory bytes written: the output (and any state appended)."""
        return self.output_tensor().nbytes

    @property
    def kind(self) -> str:
        """The op's class name (``"Linear"``, ``"Attention"`` ...)."""
        return type(self).__name__

    def signature(self) -> tuple[object, ...]:
        """Everything that determines the op's cost, without its name or edges.

        Identical layers (the 32 decoder blocks of Llama-2-7B) share a signature, so the mapper
        maps each distinct signature once.
        """
        sig = type(self)._sig
        if not sig:
            sig = tuple(
                f.name for f in fields(self) if f.name not in ("name", "inputs", "layer_type")
            )
            type(self)._sig = sig
        return (type(self).__name__, *(getattr(self, f) for f in sig))
