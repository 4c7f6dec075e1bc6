"""GEMM-like operators: MatMul, Linear, Conv2d and Attention (see :mod:`workbench.ir.ops_base`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from workbench.errors import GraphError
from workbench.ir.dtypes import DTYPES, bytes_for, canonical
from workbench.ir.ops_base import SOFTMAX_FLOPS, Op, Tensor

__all__ = ["Attention", "Conv2d", "Linear", "MatMul"]


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
    _positive_dims: ClassVar[tuple[str, ...]] = ("batch", "m", "n", "k")

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
    _positive_dims: ClassVar[tuple[str, ...]] = ("tokens", "in_features", "out_features")

    def _validate(self) -> None:
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
    _positive_dims: ClassVar[tuple[str, ...]] = (
        "batch",
        "in_channels",
        "height",
        "width",
        "out_channels",
        "kernel_h",
        "kernel_w",
        "stride",
        "dilation",
        "groups",
    )

    def _validate(self) -> None:
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

    def input_read_fraction(self, layout: str) -> float:
        """Share of the input tensor's bytes a conv stored in ``layout`` reads, in (0, 1].

        Windows at least as wide as the stride (a 3 x 3 or 7 x 7 conv at stride 1 or 2) touch
        every pixel: 1. A window narrower than the stride (ResNet's 1 x 1 stride-2 downsample)
        samples ``out_h x kernel_h`` rows and ``out_w x kernel_w`` columns of the input. In
        NHWC each sampled pixel's channels are contiguous, so only those pixels are read (a
        quarter of the input at stride 2); in NCHW the sampled elements of a row share their
        32-byte sectors with the skipped ones, so the sampled rows are read whole.

        >>> c = Conv2d(name="d", inputs=("x",), batch=1, in_channels=256, height=56, width=56,
        ...     out_channels=512, kernel_h=1, kernel_w=1, stride=2)
        >>> c.input_read_fraction("NHWC"), c.input_read_fraction("NCHW")
        (0.25, 0.5)
        """
        rows = min(self.height, self.out_h * self.kernel_h)
        cols = min(self.width, self.out_w * self.kernel_w)
        if self.dilation > 1 or (rows == self.height and cols == self.width):
            return 1.0  # NOTE: dilated windows are left at the whole input (conservative)
        if layout == "NHWC":
            return rows * cols / (self.height * self.width)
        return rows / self.height

    @property
    def im2col_expansion(self) -> float:
        """Elements of the implicit-GEMM A matrix per input element it reads, >= 1.

        ``P Q R S / (H W)``: each input pixel feeds up to ``R S`` output pixels' windows (9 for a
        3 x 3 stride-1 conv, 2.25 at stride 2, 12.25 for ResNet's 7 x 7 stride-2 stem). A
        strided 1 x 1 conv reads only the pixels it samples (each pixel's channels contiguous),
        so its A matrix is no expansion of what it reads: 1.

        >>> Conv2d(name="c", inputs=("x",), batch=1, in_channels=64, height=56, width=56,
        ...     out_channels=64, kernel_h=3, kernel_w=3, padding=1).im2col_expansion
        9.0
        """
        window = self.out_h * self.out_w * self.kernel_h * self.kernel_w
        return max(1.0, window / (self.height * self.width))

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
    _positive_dims: ClassVar[tuple[str, ...]] = (
        "batch",
        "heads",
        "kv_heads",
        "q_len",
        "kv_len",
        "head_dim",
    )

    def _validate(self) -> None:
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
