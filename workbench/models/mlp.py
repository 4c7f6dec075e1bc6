"""Multilayer perceptrons: Linear layers with biases and an activation between them."""

from __future__ import annotations

import itertools

from workbench.errors import WorkbenchError
from workbench.ir import Graph
from workbench.models._blocks import Stack

__all__ = ["mlp_graph"]


def mlp_graph(
    batch: int = 1,
    sizes: tuple[int, ...] = (784, 1024, 1024, 10),
    activation: str = "relu",
    dtype: str = "bf16",
) -> Graph:
    """Build ``len(sizes) - 1`` biased Linear layers with ``activation`` between them.

    Args:
        batch: Rows of the input.
        sizes: Feature widths, input first (elements).
        activation: Elementwise kind after every layer but the last (``relu``, ``gelu``...).
        dtype: Activation and weight dtype.

    Returns:
        The graph (ops ``fc{i}`` and ``act{i}``).

    >>> mlp_graph(sizes=(4, 3, 2)).params
    23
    """
    if len(sizes) < 2:
        raise WorkbenchError(f"mlp: sizes needs at least 2 widths, got {tuple(sizes)!r}")
    for value in (batch, *sizes):
        if not isinstance(value, int) or value <= 0:
            raise WorkbenchError(f"mlp: batch and sizes must be positive integers, got {value!r}")
    st = Stack(dtype=dtype, ops=[])
    x = "input"
    for i, (k, n) in enumerate(itertools.pairwise(sizes)):
        x = st.linear(f"fc{i}", x, (batch,), k, n, bias=True, layer_type="mlp")
        if i < len(sizes) - 2:
            x = st.ew(f"act{i}", activation, (x,), (batch, n), "mlp")
    meta = (("model", "mlp"), ("phase", "inference"), ("batch", batch), ("dtype", dtype))
    name = "mlp " + "x".join(map(str, sizes)) + f" b{batch}"
    return Graph(name=name, ops=tuple(st.ops), meta=meta)
