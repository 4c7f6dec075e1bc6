"""Random inputs of the right shapes for a mapped kernel (see :func:`make_inputs`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench.execution._steps import Step, fused_steps
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.errors import ExecutionError
from workbench.ir.graph import Graph
from workbench.ir.ops import Conv2d, Elementwise, Linear, MatMul, Op
from workbench.lowering.kernel import Kernel

__all__ = ["conv_op", "head_op", "kernel_steps", "make_inputs", "output_view"]


def head_op(kernel: Kernel, graph: Graph | None) -> Op | None:
    """The graph op that defines ``kernel`` (None without a graph or for inserted kernels)."""
    if graph is None or not kernel.ops:
        return None
    return graph.op(kernel.ops[0])


def conv_op(kernel: Kernel, graph: Graph | None) -> Conv2d:
    """The Conv2d behind a conv kernel (its stride, padding and channels live only there)."""
    op = head_op(kernel, graph)
    if not isinstance(op, Conv2d):
        raise ExecutionError(
            f"kernel {kernel.name!r}: a conv kernel needs the graph (pass graph=) to know its "
            "stride, padding and channels"
        )
    return op


def kernel_steps(kernel: Kernel, graph: Graph | None) -> tuple[Step, ...]:
    """The fused elementwise steps of ``kernel`` (empty without a graph)."""
    if graph is None or not kernel.ops or kernel.name.endswith((".qk", ".softmax", ".pv")):
        return ()
    if kernel.kind == "elementwise":
        return fused_steps(graph, kernel.ops, head=None)
    return fused_steps(graph, kernel.ops[1:], head=graph.op(kernel.ops[0]))


def output_view(kernel: Kernel) -> tuple[int, ...]:
    """Shape of the kernel's output as the executor sees it: (M, N), (B, m, n) or (R, C)."""
    if kernel.gemm is not None and kernel.kind == "gemm":
        g = kernel.gemm
        return (g.m, g.n) if g.batch == 1 else (g.batch, g.m, g.n)
    if kernel.rows is not None:
        return (kernel.rows.rows, kernel.rows.cols)
    raise ExecutionError(f"kernel {kernel.name!r}: kind {kernel.kind} has no 2-D output view")


def _channel_vector(values: np.ndarray, shape: tuple[int, ...], axis: int, view: tuple[int, ...]):
    """Per-channel parameters shaped to broadcast against ``view`` (see _steps docstring)."""
    axis %= len(shape)
    if axis == len(shape) - 1:
        return values
    if len(view) != 2:
        full = np.broadcast_to(
            values.reshape([-1 if i == axis else 1 for i in range(len(shape))]), shape
        )
        return np.ascontiguousarray(full).reshape(view)
    inner = math.prod(shape[axis + 1 : -1])
    rows = np.arange(view[0])
    return values[(rows // inner) % shape[axis]].reshape(-1, 1)


def _step_operands(
    graph: Graph, steps: tuple[Step, ...], view: tuple[int, ...], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for st in steps:
        for name in st.operands:
            base, _, param = name.rpartition(".")
            is_tensor = graph.producer(name) is not None or any(
                t.name == name for t in graph.inputs
            )
            if param in ("bias", "scale", "shift") and base and not is_tensor:
                op = graph.op(base)
                if isinstance(op, Linear):
                    out[name] = rng.standard_normal(op.out_features, dtype=np.float32)
                    continue
                assert isinstance(op, Elementwise)
                vec = rng.standard_normal(op.channels, dtype=np.float32)
                if param == "scale":
                    vec = 1.0 + 0.1 * vec
                out[name] = _channel_vector(vec, op.shape, op.channel_axis, view)
                continue
            out[name] = rng.standard_normal(view, dtype=np.float32)
    return out


def _gemm_inputs(kernel: Kernel, rng: np.random.Generator, graph: Graph | None):
    g = kernel.gemm
    assert g is not None
    a_shape = (g.m, g.k) if g.batch == 1 else (g.batch, g.m, g.k)
    shared_b = g.batch == 1 or (g.b_is_weight and not isinstance(head_op(kernel, graph), MatMul))
    b_shape = (g.k, g.n) if shared_b else (g.batch, g.k, g.n)
    a = rng.standard_normal(a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32) / np.float32(math.sqrt(g.k))
    return {"a": a, "b": b}


def _conv_inputs(kernel: Kernel, rng: np.random.Generator, graph: Graph | None):
    op = conv_op(kernel, graph)
    x = rng.standard_normal(op.input_shapes()[0], dtype=np.float32)
    cg = op.in_channels // op.groups
    w_shape = (op.out_channels, cg, op.kernel_h, op.kernel_w)
    fan_in = cg * op.kernel_h * op.kernel_w
    w = rng.standard_normal(w_shape, dtype=np.float32) / np.float32(math.sqrt(fan_in))
    out = {"x": x, "w": w}
    if op.bias:
        out["bias"] = rng.standard_normal(op.out_channels, dtype=np.float32)
    return out


def _attention_inputs(kernel: Kernel, rng: np.random.Generator):
    p = kernel.attention
    assert p is not None
    q = rng.standard_normal((p.batch, p.heads, p.q_len, p.head_dim), dtype=np.float32)
    kv = (p.batch, p.kv_heads, p.kv_len, p.head_dim)
    return {
        "q": q,
        "k": rng.standard_normal(kv, dtype=np.float32),
        "v": rng.standard_normal(kv, dtype=np.float32),
    }


def _row_inputs(kernel: Kernel, rng: np.random.Generator, graph: Graph | None):
    view = output_view(kernel)
    out = {"x": rng.standard_normal(view, dtype=np.float32)}
    cols = view[-1]
    head = head_op(kernel, graph)
    if kernel.kind == "row" and head is not None and head.kind in ("LayerNorm", "RMSNorm"):
        out["gamma"] = 1.0 + 0.1 * rng.standard_normal(cols, dtype=np.float32)
        if head.kind == "LayerNorm":
            out["beta"] = 0.1 * rng.standard_normal(cols, dtype=np.float32)
    return out


def make_inputs(
    kernel: Kernel,
    seed: int = 0,
    backend: Backend | str | None = None,
    *,
    graph: Graph | None = None,
) -> dict[str, Any]:
    """Random float32 inputs of the right shapes for ``kernel``, on ``backend``.

    Keys: GEMM ``a`` (M, K) or (B, m, k) and ``b`` (K, N) or (B, k, n); conv ``x`` (in the conv
    op's declared layout), ``w`` (K, C/groups, R, S), ``bias``; attention ``q`` (B, H, Lq, D),
    ``k`` and ``v`` (B, Hkv, Lkv, D); row, elementwise and layout kernels ``x`` (rows, cols),
    norms ``gamma``/``beta``; plus one entry per operand a fused step reads (named as in the
    graph: ``"<tensor>"``, ``"<op>.bias"``, ``"<op>.scale"``, ``"<op>.shift"``).

    Args:
        kernel: The kernel.
        seed: Seed of the generator (same seed, same inputs).
        backend: Backend, backend name or None (automatic).
        graph: The graph the kernel came from (needed for conv shapes and fused operands).

    Returns:
        Name -> array of the backend's array module.

    Raises:
        ExecutionError: The kernel cannot be executed (collective) or needs the graph.
    """
    bk = resolve_backend(backend)
    rng = np.random.default_rng(seed)
    if kernel.kind == "collective":
        raise ExecutionError(
            f"kernel {kernel.name!r}: a collective moves data between chips; one process "
            "cannot execute it"
        )
    if kernel.kind == "conv":
        host = _conv_inputs(kernel, rng, graph)
    elif kernel.attention is not None:
        host = _attention_inputs(kernel, rng)
    elif kernel.gemm is not None:
        host = _gemm_inputs(kernel, rng, graph)
    else:
        host = _row_inputs(kernel, rng, graph)
    if graph is not None and kernel.kind != "conv" and kernel.attention is None:
        host.update(_step_operands(graph, kernel_steps(kernel, graph), output_view(kernel), rng))
    elif kernel.kind == "conv" and graph is not None:
        op = conv_op(kernel, graph)
        host.update(_step_operands(graph, kernel_steps(kernel, graph), op.output_shape(), rng))
    return {name: bk.xp.asarray(v) for name, v in host.items()}
