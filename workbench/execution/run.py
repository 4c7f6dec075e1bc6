"""The adapter from the mapper to the engine: run a mapped kernel tile by tile, as mapped.

``execute`` takes a :class:`~workbench.mapper.KernelMapping` (or a ``(Kernel, Tiling)`` pair)
and runs it with the decisions of its :class:`~workbench.scheduling.tiling.Tiling`:

* ``gemm``: output tiles ``tile_m x tile_n`` visited in ``raster`` order, K-steps of ``tile_k``,
  ``split_k`` slices summed, then the fused epilogue (the kernel's ops after its head) per tile,
  at the kernel's dtype. Batched GEMMs run every batch entry of a tile in one call.
  Unfused attention kernels ``<op>.qk`` (scaled Q K^T), ``<op>.pv`` are batched GEMMs.
* ``conv``: implicit GEMM with the mapped tiles; when the kernel's layout differs from the conv
  op's declared layout, the input is transformed first (as the mapper's inserted kernel does).
* ``attention``: flash-style with query tile ``tile_m`` and KV tile ``tile_n``.
* ``row`` (norm, softmax, reduce, ``<op>.softmax``): ``tile_m`` rows per tile, statistics over
  column chunks of ``tile_n`` (one chunk when the row fits), then the fused steps per tile.
* ``elementwise``: the fused chain per tile of ``tile_m`` rows; ``layout``: tiled transpose;
  ``gather``: row gather. ``collective``: refused with the reason.

Without the graph (``graph=None``) a kernel runs by its kind and name: no fused epilogue, norms
guessed from the name; a conv needs the graph for its stride and padding.
"""

from __future__ import annotations

from typing import Any

from workbench._doc import pick
from workbench.execution._inputs import make_inputs, output_view
from workbench.execution._result import ExecutionResult
from workbench.execution._run_matrix import run_attention, run_conv, run_gemm, tiled_gemm
from workbench.execution._run_vector import run_gather, run_layout, run_rows
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.errors import ExecutionError
from workbench.execution.trace import Trace
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = ["ExecutionResult", "execute", "make_inputs", "tiled_gemm"]


_RUNNERS = {
    "gemm": run_gemm,
    "conv": run_conv,
    "attention": run_attention,
    "row": run_rows,
    "elementwise": run_rows,
    "layout": run_layout,
    "gather": run_gather,
}


def _unpack(item: Any) -> tuple[Kernel, Tiling]:
    if isinstance(item, tuple) and len(item) == 2:
        kernel, tiling = item
    else:
        kernel, tiling = getattr(item, "kernel", None), getattr(item, "tiling", None)
    if not isinstance(kernel, Kernel) or not isinstance(tiling, Tiling):
        raise ExecutionError("execute: expected a KernelMapping or a (Kernel, Tiling) pair")
    return kernel, tiling


def execute(
    item: Any,
    inputs: dict[str, Any] | None = None,
    *,
    graph: Graph | None = None,
    backend: Backend | str | None = None,
    trace: Trace | None = None,
    seed: int = 0,
) -> ExecutionResult:
    """Run a mapped kernel tile by tile exactly as its tiling says (see the module docstring).

    Args:
        item: A :class:`~workbench.mapper.KernelMapping` or a ``(Kernel, Tiling)`` pair.
        inputs: Arrays keyed as :func:`make_inputs` names them; None makes random ones.
        graph: The graph the kernel came from (fused epilogues, conv shapes, op types).
        backend: Backend, backend name or None (automatic).
        trace: Recorder for one event per tile, or None.
        seed: Seed for random inputs.

    Returns:
        The :class:`ExecutionResult`.

    Raises:
        ExecutionError: The kernel cannot be executed (a collective, an op the adapter does not
            run, a conv without its graph), with the reason.
    """
    kernel, tiling = _unpack(item)
    bk = resolve_backend(backend)
    runner = _RUNNERS.get(kernel.kind)
    if runner is None:
        raise ExecutionError(
            f"kernel {kernel.name!r}: a {kernel.kind} kernel moves data between chips; "
            "one process cannot execute it"
        )
    if min(tiling.tile_m, tiling.tile_n, tiling.tile_k) <= 0:
        raise ExecutionError(f"kernel {kernel.name!r}: tiling {tiling.shape} is not positive")
    if inputs is None:
        inputs = make_inputs(kernel, seed, bk, graph=graph)
    if kernel.kind in ("row", "elementwise", "layout", "gather") and "x" in inputs:
        view = output_view(kernel)
        inputs = {**inputs, "x": inputs["x"].reshape(view)}
    run = runner(kernel, tiling, inputs, graph, bk, trace)
    return ExecutionResult(
        kernel=kernel.name,
        kind=kernel.kind,
        backend=bk.name,
        tile=tiling.shape,
        trace=trace,
        **pick(run, "output", "tiles", "method", "notes"),
    )
