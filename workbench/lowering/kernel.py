"""Kernels: the unit of work the mapper schedules, costs and (later) executes.

A :class:`Kernel` is one launch on the accelerator. It holds the ops it fuses, the engine it runs
on (and why), its format and layout, the problem it solves (a GEMM, a fused attention, a row-wise
vector pass, a collective) and its compulsory off-chip traffic after fusion. Kernels are frozen;
:meth:`Kernel.signature` drops the names so identical layers share a schedule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from workbench.ir.dtypes import DTYPES

__all__ = ["AttentionProblem", "GemmProblem", "Kernel", "RowProblem", "elem_bytes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmProblem:
    """``batch`` independent ``C[m, n] = A[m, k] @ B[k, n]`` products.

    Attributes:
        batch: Independent products (batch x heads for attention GEMMs, groups for grouped conv).
        m, n, k: Sizes in elements.
        a_bytes, b_bytes, c_bytes: Storage bytes per element of A, B and C (0.5 for int4).
        b_is_weight: B is a weight shared across the batch (read once, not per batch entry).
        epilogue_bytes: Extra off-chip bytes the fused epilogue reads (residual, bias, gate).
        b_k_major: B is stored contiguous along K (weights as frameworks store them, K^T in
            Q K^T); False for an activation stored row-major along N (V in P V, a MatMul's B).
        a_expansion: Elements of the (implicit, im2col) A matrix per element of the tensor it
            is gathered from: R*S/stride^2-ish for a conv, 1 for a plain GEMM. Off-chip memory
            serves each input element once (the halo is re-read from on-chip levels).
        b_dequant_ops: Vector-unit instructions per B element to dequantize a weight-only
            format to the compute format inside the main loop (unpack, convert, scale); 0 = B
            is stored in the compute format.
    """

    batch: int
    m: int
    n: int
    k: int
    a_bytes: float
    b_bytes: float
    c_bytes: float
    b_is_weight: bool = True
    epilogue_bytes: int = 0
    a_expansion: float = 1.0
    b_k_major: bool = True
    b_dequant_ops: float = 0.0

    @property
    def strides_aligned(self) -> bool:
        """Both operands' row strides are multiples of 16 bytes (what TMA bulk copies need).

        >>> GemmProblem(batch=1, m=4096, n=4096, k=11008, a_bytes=2, b_bytes=2, c_bytes=2
        ...     ).strides_aligned, GemmProblem(batch=1, m=4096, n=4096, k=10922, a_bytes=2,
        ...     b_bytes=2, c_bytes=2).strides_aligned
        (True, False)
        """
        b_stride = (self.k if self.b_k_major else self.n) * self.b_bytes
        return (self.k * self.a_bytes) % 16 == 0 and b_stride % 16 == 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionProblem:
    """Scaled dot-product attention for ``batch x heads`` (query, key) matrices.

    Attributes:
        batch, heads, kv_heads, q_len, kv_len, head_dim: Sizes.
        causal: Causal mask (query i sees keys up to ``kv_len - q_len + i``).
        elem_bytes: Bytes per element of Q, O (and K, V when no cache).
        kv_bytes: Bytes per element of K and V.
        kv_group_shared: The query heads of a GQA group share each K/V read (packed into one
            work item, or reading the same cache lines). False: the kernel reads its KV head
            from off-chip memory once per query head (``MapOptions.gqa_kv_sharing``).
    """

    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    causal: bool
    elem_bytes: float
    kv_bytes: float
    kv_group_shared: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class RowProblem:
    """A vector pass over ``rows`` independent rows of ``cols`` elements.

    Attributes:
        rows, cols: Sizes in elements.
        reduce: Each row needs a reduction (norm, softmax, reduce) before it can be written,
            so a row that does not fit SRAM takes a second pass over memory.
        operands: Row-sized tensors live at once per row (inputs + output), for SRAM sizing.
        elem_bytes: Bytes per element.
    """

    rows: int
    cols: int
    reduce: bool
    operands: int
    elem_bytes: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Kernel:
    """One launch: ops, engine, format, layout, problem and compulsory traffic.

    Attributes:
        name: Kernel name (the name of its first op, or a derived name for split/inserted ones).
        ops: Names of the graph ops it runs (several when fused).
        kind: ``gemm``, ``conv``, ``attention``, ``row``, ``elementwise``, ``layout``,
            ``gather`` or ``collective``.
        layer_type: Layer type for per-layer-type metrics.
        engine: ``matrix``, ``vector`` or ``interconnect``.
        engine_reason: Why that engine (e.g. no fp8 on this matrix engine).
        dtype: Compute and activation storage format.
        weight_dtype: Weight storage format when it differs (weight-only quantisation).
        engine_dtype: Format the engine computes in when it differs from ``dtype`` (int4
            operands unpacked to the int8 tensor cores of an engine without int4 MMA); None =
            ``dtype``. Its peak is the kernel's (and MFU's) denominator.
        layout: Activation layout the kernel reads (``NHWC``, ``NCHW``, ``row-major``).
        gemm, attention, rows: The problem (exactly one is set, none for collectives).
        flops: All FLOPs the kernel's ops perform (multiply-add = 2), unpadded.
        matmul_flops: The multiply-add part (model FLOPs).
        vector_flops: FLOPs on the vector unit (epilogues, softmax, dequantize ...).
        bytes_read, bytes_written: Compulsory off-chip traffic after fusion, bytes.
        saved_bytes: Off-chip bytes fusion avoided (intermediates not written and re-read).
        fusion: Fusion rules applied to build this kernel.
        notes: Decisions and refusals worth showing (e.g. fusion refused: would overflow SRAM).
        barriers: Device-wide syncs after the kernel (the per-layer debugging barrier): the
            device drains and the next launch is exposed (cost/model.py). Grid barriers
            inside the kernel (split rows, split-K) are the schedule's (Tiling.barriers).
        cached_input_bytes: Bytes of its input that the previous kernel just wrote and a
            shared cache still holds: read from the cache, not from off-chip memory.
        link_bytes: Bytes each chip sends over its links (collectives).
        chips: Chips taking part (collectives).
    """

    name: str
    ops: tuple[str, ...]
    kind: str
    layer_type: str
    engine: str
    engine_reason: str
    dtype: str
    weight_dtype: str | None = None
    engine_dtype: str | None = None
    layout: str = "row-major"
    gemm: GemmProblem | None = None
    attention: AttentionProblem | None = None
    rows: RowProblem | None = None
    flops: int = 0
    matmul_flops: int = 0
    vector_flops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    saved_bytes: int = 0
    fusion: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    barriers: int = 0
    cached_input_bytes: int = 0
    link_bytes: float = 0.0
    chips: int = 1

    @property
    def bytes(self) -> int:
        """Compulsory off-chip bytes moved (read + written)."""
        return self.bytes_read + self.bytes_written

    @property
    def compute_dtype(self) -> str:
        """The format the engine runs: :attr:`engine_dtype` when set, else :attr:`dtype`."""
        return self.engine_dtype or self.dtype

    @property
    def intensity(self) -> float:
        """Arithmetic intensity on compulsory traffic, FLOP/byte."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def signature(self) -> Kernel:
        """The kernel without its names: equal for identical layers (a cache key)."""
        return dataclasses.replace(self, name="", ops=(), notes=())


def elem_bytes(dtype: str) -> float:
    """Storage bytes per element of ``dtype`` (0.5 for int4).

    >>> elem_bytes("bf16"), elem_bytes("int4")
    (2.0, 0.5)
    """
    return DTYPES[dtype].bits / 8
