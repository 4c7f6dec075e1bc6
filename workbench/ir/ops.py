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
from dataclasses import dataclass, fields
from typing import ClassVar

from workbench.errors import GraphError
from workbench.ir.dtypes import DTYPES, bytes_for, canonical

__all__ = [
    "ELEMENTWISE_FLOPS",
    "LAYER_TYPES",
    "AllGather",
    "AllReduce",
    "Attention",
    "Conv2d",
    "Dequantize",
    "Elementwise",
    "Embedding",
    "LayerNorm",
    "Linear",
    "MatMul",
    "Op",
    "Pool",
    "Quantize",
    "RMSNorm",
    "Reduce",
    "Softmax",
    "Tensor",
    "Transpose",
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


def _positive(op: str, **dims: int | tuple[int, ...]) -> None:
    for key, value in dims.items():
        values = value if isinstance(value, tuple) else (value,)
        if not values or any((not isinstance(v, int)) or v <= 0 for v in values):
            raise GraphError(f"op {op!r}: {key} must be positive integers, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
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
        self._validate()

    def _validate(self) -> None:
        """Check the op's own dimensions (subclasses)."""

    # --- tensors -------------------------------------------------------------------------
    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Shapes the op expects for each of :attr:`inputs`."""
        raise NotImplementedError

    def output_shape(self) -> tuple[int, ...]:
        """Shape of the output tensor."""
        raise NotImplementedError

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


# ---------------------------------------------------------------------------------------------
# GEMM-like ops
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class MatMul(Op):
    """Batched matrix product of two activations: ``out[b] = a[b] @ w[b]``.

    Loop nest::

        for b, m, n: for k: out[b, m, n] += a[b, m, k] * w[b, k, n]

    Attributes:
        batch, m, n, k: Problem sizes (elements).
    """

    batch: int = 1
    m: int
    n: int
    k: int
    layer_type: str = "mlp"
    n_inputs: ClassVar[int] = 2

    def _validate(self) -> None:
        _positive(self.name, batch=self.batch, m=self.m, n=self.n, k=self.k)

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return ((self.batch, self.m, self.k), (self.batch, self.k, self.n))

    def output_shape(self) -> tuple[int, ...]:
        return (self.batch, self.m, self.n)

    @property
    def matmul_flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k


@dataclass(frozen=True, slots=True, kw_only=True)
class Linear(Op):
    """Fully connected layer ``y = x @ W (+ b)`` with a weight owned by the op.

    Attributes:
        tokens: Leading dimensions of the input (e.g. ``(batch, seq)``); their product is M.
        in_features: K.
        out_features: N.
        bias: Whether a bias vector of N is added (fused into the GEMM by default).
        weight_dtype: Storage format of W (e.g. ``"int4"`` for weight-only quantisation);
            ``None`` means the activation dtype.
        tied_weight: W is owned by another op (tied input/output embeddings): it is read
            as usual but not counted in :attr:`params`.
    """

    tokens: tuple[int, ...]
    in_features: int
    out_features: int
    bias: bool = False
    weight_dtype: str | None = None
    tied_weight: bool = False
    layer_type: str = "mlp"

    def _validate(self) -> None:
        _positive(
            self.name,
            tokens=self.tokens,
            in_features=self.in_features,
            out_features=self.out_features,
        )
        if self.weight_dtype is not None and self.weight_dtype not in DTYPES:
            object.__setattr__(
                self, "weight_dtype", canonical(self.weight_dtype, where=f"op {self.name!r}")
            )

    @property
    def m(self) -> int:
        """Rows of the GEMM: the product of :attr:`tokens`."""
        return math.prod(self.tokens)

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return ((*self.tokens, self.in_features),)

    def output_shape(self) -> tuple[int, ...]:
        return (*self.tokens, self.out_features)

    def weight_tensors(self) -> tuple[Tensor, ...]:
        wd = self.weight_dtype or self.dtype
        w = Tensor(
            name=f"{self.name}.weight", shape=(self.in_features, self.out_features), dtype=wd
        )
        if not self.bias:
            return (w,)
        return (w, Tensor(name=f"{self.name}.bias", shape=(self.out_features,), dtype=self.dtype))

    @property
    def matmul_flops(self) -> int:
        return 2 * self.m * self.in_features * self.out_features

    @property
    def vector_flops(self) -> int:
        return self.m * self.out_features if self.bias else 0

    @property
    def params(self) -> int:
        weight = 0 if self.tied_weight else self.in_features * self.out_features
        return weight + (self.out_features if self.bias else 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Conv2d(Op):
    """2-D convolution (grouped and depthwise included), lowered later as an implicit GEMM.

    Loop nest (per group ``g``)::

        for n, k, p, q: for c in group, r, s:
            h, w = p*stride + r*dil - pad, q*stride + s*dil - pad
            out[n, k, p, q] += x[n, c, h, w] * w[k, c, r, s]

    Attributes:
        batch, in_channels, height, width: Input N, C, H, W.
        out_channels: K.
        kernel_h, kernel_w: R, S.
        stride, padding, dilation: Same in both spatial dimensions.
        groups: 1 for a dense conv, ``in_channels`` for depthwise.
        bias: Whether a per-channel bias is added.
        layout: Activation layout, ``"NCHW"`` or ``"NHWC"``.
    """

    batch: int
    in_channels: int
    height: int
    width: int
    out_channels: int
    kernel_h: int
    kernel_w: int
    stride: int = 1
    padding: int = 0
    dilation: int = 1
    groups: int = 1
    bias: bool = False
    layout: str = "NCHW"
    layer_type: str = "conv"

    def _validate(self) -> None:
        _positive(
            self.name,
            batch=self.batch,
            in_channels=self.in_channels,
            height=self.height,
            width=self.width,
            out_channels=self.out_channels,
            kernel_h=self.kernel_h,
            kernel_w=self.kernel_w,
            stride=self.stride,
            dilation=self.dilation,
            groups=self.groups,
        )
        if self.padding < 0:
            raise GraphError(f"op {self.name!r}: padding must be >= 0, got {self.padding}")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise GraphError(
                f"op {self.name!r}: groups={self.groups} must divide in_channels="
                f"{self.in_channels} and out_channels={self.out_channels}"
            )
        if self.layout not in ("NCHW", "NHWC"):
            raise GraphError(f"op {self.name!r}: layout must be NCHW or NHWC, got {self.layout!r}")
        if self.out_h <= 0 or self.out_w <= 0:
            raise GraphError(
                f"op {self.name!r}: kernel {self.kernel_h}x{self.kernel_w} does not fit input "
                f"{self.height}x{self.width} with padding {self.padding}"
            )

    @property
    def out_h(self) -> int:
        """Output height P."""
        span = self.dilation * (self.kernel_h - 1) + 1
        return (self.height + 2 * self.padding - span) // self.stride + 1

    @property
    def out_w(self) -> int:
        """Output width Q."""
        span = self.dilation * (self.kernel_w - 1) + 1
        return (self.width + 2 * self.padding - span) // self.stride + 1

    def _shape(self, c: int, h: int, w: int) -> tuple[int, ...]:
        if self.layout == "NCHW":
            return (self.batch, c, h, w)
        return (self.batch, h, w, c)

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self._shape(self.in_channels, self.height, self.width),)

    def output_shape(self) -> tuple[int, ...]:
        return self._shape(self.out_channels, self.out_h, self.out_w)

    def weight_tensors(self) -> tuple[Tensor, ...]:
        cg = self.in_channels // self.groups
        w = Tensor(
            name=f"{self.name}.weight",
            shape=(self.out_channels, cg, self.kernel_h, self.kernel_w),
            dtype=self.dtype,
        )
        if not self.bias:
            return (w,)
        return (w, Tensor(name=f"{self.name}.bias", shape=(self.out_channels,), dtype=self.dtype))

    @property
    def gemm_mnk(self) -> tuple[int, int, int]:
        """Implicit-GEMM sizes per group: M = N*P*Q, N = K/groups, K = C/groups*R*S."""
        cg = self.in_channels // self.groups
        return (
            self.batch * self.out_h * self.out_w,
            self.out_channels // self.groups,
            cg * self.kernel_h * self.kernel_w,
        )

    @property
    def macs(self) -> int:
        """Multiply-accumulates (the usual 'GMACs' figure of CNN papers)."""
        m, n, k = self.gemm_mnk
        return m * n * k * self.groups

    @property
    def matmul_flops(self) -> int:
        return 2 * self.macs

    @property
    def vector_flops(self) -> int:
        return self.batch * self.out_channels * self.out_h * self.out_w if self.bias else 0

    @property
    def params(self) -> int:
        cg = self.in_channels // self.groups
        w = self.out_channels * cg * self.kernel_h * self.kernel_w
        return w + (self.out_channels if self.bias else 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Attention(Op):
    """Scaled dot-product attention, MHA/GQA/MQA, with an optional KV cache.

    Inputs are ``q`` (batch, q_len, heads*head_dim) and the *new* tokens' ``k`` and ``v``
    (batch, q_len, kv_heads*head_dim) when ``kv_cache`` is set, or the full
    (batch, kv_len, kv_heads*head_dim) keys and values otherwise. With a cache, the op reads the
    ``kv_len - q_len`` past tokens from the cache and appends the ``q_len`` new ones; so decode
    with a cache (q_len=1, kv_len=context+1) and prefill (q_len=kv_len=seq) are both exact.

    Query i (0-based) sits at position ``kv_len - q_len + i``; with ``causal`` it attends to keys
    at positions <= its own, so it sees ``kv_len - q_len + i + 1`` keys.

    Loop nest::

        for b, h, i: for j in visible(i):
            s[j] = q[b, i, h] . k[b, j, h // group]          # 2*head_dim FLOPs
        p = softmax(s * scale);  out[b, i, h] = sum_j p[j] * v[b, j, h // group]

    Attributes:
        batch, heads, kv_heads, q_len, kv_len, head_dim: Sizes; ``heads % kv_heads == 0``.
        causal: Apply a causal mask.
        kv_cache: Read past keys/values from a cache and append the new ones.
        kv_dtype: Storage format of the cache (``None``: the activation dtype).
    """

    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    causal: bool = True
    kv_cache: bool = False
    kv_dtype: str | None = None
    layer_type: str = "attention"
    n_inputs: ClassVar[int] = 3

    def _validate(self) -> None:
        _positive(
            self.name,
            batch=self.batch,
            heads=self.heads,
            kv_heads=self.kv_heads,
            q_len=self.q_len,
            kv_len=self.kv_len,
            head_dim=self.head_dim,
        )
        if self.heads % self.kv_heads:
            raise GraphError(
                f"op {self.name!r}: heads={self.heads} must be a multiple of kv_heads="
                f"{self.kv_heads}"
            )
        if self.kv_len < self.q_len and (self.kv_cache or self.causal):
            raise GraphError(
                f"op {self.name!r}: kv_len={self.kv_len} must be >= q_len={self.q_len}"
            )
        if self.kv_dtype is not None and self.kv_dtype not in DTYPES:
            object.__setattr__(self, "kv_dtype", canonical(self.kv_dtype, where=self.name))

    @property
    def score_pairs(self) -> int:
        """(query, key) pairs actually computed per (batch, head), after the causal mask."""
        q, kv = self.q_len, self.kv_len
        if not self.causal:
            return q * kv
        return q * (kv - q) + q * (q + 1) // 2

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        kv_rows = self.q_len if self.kv_cache else self.kv_len
        kv = (self.batch, kv_rows, self.kv_heads * self.head_dim)
        return ((self.batch, self.q_len, self.heads * self.head_dim), kv, kv)

    def output_shape(self) -> tuple[int, ...]:
        return (self.batch, self.q_len, self.heads * self.head_dim)

    def weight_tensors(self) -> tuple[Tensor, ...]:
        past = self.kv_len - self.q_len
        if not self.kv_cache or past == 0:
            return ()
        shape = (2, self.batch, past, self.kv_heads * self.head_dim)
        return (Tensor(name=f"{self.name}.kv_cache", shape=shape, dtype=self.cache_dtype),)

    @property
    def cache_dtype(self) -> str:
        """Storage format of the KV cache."""
        return self.kv_dtype or self.dtype

    @property
    def matmul_flops(self) -> int:
        return 4 * self.batch * self.heads * self.head_dim * self.score_pairs

    @property
    def vector_flops(self) -> int:
        # scale + softmax per score
        return (SOFTMAX_FLOPS + 1) * self.batch * self.heads * self.score_pairs

    @property
    def bytes_written(self) -> int:
        out = self.output_tensor().nbytes
        if not self.kv_cache:
            return out
        append = 2 * self.batch * self.q_len * self.kv_heads * self.head_dim
        return out + bytes_for(append, self.cache_dtype)


# ---------------------------------------------------------------------------------------------
# Vector ops
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class _RowOp(Op):
    """An op over the last dimension of ``shape`` (rows x cols)."""

    shape: tuple[int, ...]

    def _validate(self) -> None:
        _positive(self.name, shape=self.shape)

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

    def _validate(self) -> None:
        _positive(self.name, shape=self.shape)
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

    def _validate(self) -> None:
        _positive(self.name, tokens=self.tokens, vocab=self.vocab, dim=self.dim)

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

    def _validate(self) -> None:
        _positive(
            self.name,
            batch=self.batch,
            channels=self.channels,
            height=self.height,
            width=self.width,
            kernel=self.kernel,
            stride=self.stride,
        )
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

    def _validate(self) -> None:
        _positive(self.name, shape=self.shape)
        if sorted(self.perm) != list(range(len(self.shape))):
            raise GraphError(
                f"op {self.name!r}: perm {self.perm} is not a permutation of {len(self.shape)} axes"
            )

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[p] for p in self.perm)


@dataclass(frozen=True, slots=True, kw_only=True)
class Quantize(Op):
    """Convert ``dtype`` activations to a narrower format ``to`` with a scale (2 FLOPs/element)."""

    shape: tuple[int, ...]
    to: str

    def _validate(self) -> None:
        _positive(self.name, shape=self.shape)
        if self.to not in DTYPES:
            object.__setattr__(self, "to", canonical(self.to, where=f"op {self.name!r}"))

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)

    def output_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def output_dtype(self) -> str:
        return self.to

    @property
    def vector_flops(self) -> int:
        return 2 * math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dequantize(Op):
    """Convert ``source`` values back to ``dtype`` with a scale (2 FLOPs/element)."""

    shape: tuple[int, ...]
    source: str

    def _validate(self) -> None:
        _positive(self.name, shape=self.shape)
        if self.source not in DTYPES:
            object.__setattr__(self, "source", canonical(self.source, where=f"op {self.name!r}"))

    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.shape,)

    def input_dtypes(self) -> tuple[str, ...]:
        return (self.source,)

    def output_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def vector_flops(self) -> int:
        return 2 * math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Collective(Op):
    shape: tuple[int, ...]
    chips: int
    layer_type: str = "collective"

    def _validate(self) -> None:
        _positive(self.name, shape=self.shape, chips=self.chips)

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
