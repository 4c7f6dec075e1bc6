"""The graphs a training step costs beyond the forward: backward GEMMs and unfused attention."""

from __future__ import annotations

import math
from typing import Any

from workbench.ir import Elementwise, Graph, Linear, Softmax
from workbench.ir.ops_gemm import Attention, MatMul

__all__ = ["backward_gemms", "unfused_attention"]


def backward_gemms(ops: list[Linear | MatMul]) -> Graph:
    """The two backward GEMMs of every forward GEMM, named ``<op>.dgrad`` and ``<op>.wgrad``."""
    out: list[Linear | MatMul] = []
    for op in ops:
        a, b = f"{op.name}.dy", f"{op.name}.x_t"
        if isinstance(op, Linear):
            m, k, n = math.prod(op.tokens), op.in_features, op.out_features
            t = op.layer_type
            out.append(Linear(name=f"{op.name}.dgrad", inputs=(a,), tokens=(m,), in_features=n,
                              out_features=k, dtype=op.dtype, layer_type=t))  # fmt: skip
            out.append(Linear(name=f"{op.name}.wgrad", inputs=(b,), tokens=(k,), in_features=m,
                              out_features=n, dtype=op.dtype, layer_type=t))  # fmt: skip
        else:
            out.append(MatMul(name=f"{op.name}.dgrad", inputs=(a, f"{op.name}.w_t"),
                              batch=op.batch, m=op.m, n=op.k, k=op.n, dtype=op.dtype))  # fmt: skip
            out.append(MatMul(name=f"{op.name}.wgrad", inputs=(b, a), batch=op.batch, m=op.k,
                              n=op.n, k=op.m, dtype=op.dtype))  # fmt: skip
    return Graph(name="backward", ops=tuple(out))


def unfused_attention(att: Attention) -> Graph:
    """Attention with its scores in memory: every (query, key) pair, the mask applied after.

    Loop nest (per batch x head)::

        s = q @ k^T            # MatMul s x kv x d, written out
        p = softmax(s + mask)  # one fused scale-mask-softmax kernel, read and written
        p = p * dropout_mask   # elementwise, read and written
        o = p @ v              # MatMul s x d x kv
    """
    bh, n = att.batch * att.heads, att.name
    shape = (bh, att.q_len, att.kv_len)
    kw: dict[str, Any] = {"dtype": att.dtype, "layer_type": "attention"}
    ops = (
        MatMul(
            name=f"{n}.scores",
            inputs=(f"{n}.q", f"{n}.k_t"),
            batch=bh,
            m=att.q_len,
            n=att.kv_len,
            k=att.head_dim,
            **kw,
        ),
        Softmax(name=f"{n}.softmax", inputs=(f"{n}.scores",), shape=shape, **kw),
        Elementwise(
            name=f"{n}.dropout", inputs=(f"{n}.softmax", f"{n}.keep"), op="mul", shape=shape, **kw
        ),
        MatMul(
            name=f"{n}.context",
            inputs=(f"{n}.dropout", f"{n}.v"),
            batch=bh,
            m=att.q_len,
            n=att.head_dim,
            k=att.kv_len,
            **kw,
        ),
    )
    return Graph(name="unfused_attention", ops=ops)
