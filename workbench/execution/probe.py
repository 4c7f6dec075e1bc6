"""Probe the execution engine's own costs, for ``workbench calibrate``.

The cost model of a software-scheduled host needs three figures that only the engine can give:

* ``tile_issue_s``: the time to issue one tile step from Python (one K-step: two slices, a
  matmul call, the accumulate; or one output tile's epilogue and store). Timed as the adapter's
  tiled GEMM at 64^3 with 8x8x8 tiles (the arithmetic is negligible) divided by its
  ``tiles x (K-steps + 1)`` steps.
* ``kernel_launch_s``: the fixed cost of one :func:`~workbench.execution.execute` call (input
  preparation, fused-step lookup, output rounding), timed on a one-tile 8x8x8 GEMM kernel, less
  its two issued steps.
* ``vector_flops_per_s``: the effective rate of the engine's row and elementwise kernels under
  the library's FLOP convention (``Kernel.flops`` per second), the median over five calibration
  kernels (layernorm, rmsnorm, softmax, a GELU and an add-ReLU chain) run as one tile each after
  their fixed costs are taken off. NumPy runs one pass per ufunc, so the rate folds the passes
  per FLOP of these kernels into one figure; it is not an ALU peak.

These are calibration micro-benchmarks: their shapes are not the validation suite's.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.execution.attention import attention_fused
from workbench.execution.backend import Backend, resolve_backend, sync
from workbench.execution.conv import im2col_tile, window_view
from workbench.execution.run import execute, make_inputs, tiled_gemm
from workbench.hw._measure import now
from workbench.hw.schema import Hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.models.vector import elementwise_chain, row_op
from workbench.options import MapOptions
from workbench.scheduling.tiling import Tiling

__all__ = ["VECTOR_PROBES", "probe_engine"]

_F = "fp32"


def _best_time(fn: Callable[[], object], bk: Backend, repeats: int) -> float:
    """Best wall time of ``fn`` over ``repeats`` runs after one warm-up, seconds.

    The best, not the median: other processes on the machine only ever add time.
    """
    fn()
    times = []
    for _ in range(repeats):
        sync(bk)
        t0 = now()
        fn()
        sync(bk)
        times.append(now() - t0)
    return min(times)


def _issue_s(bk: Backend, repeats: int) -> float:
    a = bk.xp.asarray(np.random.default_rng(0).standard_normal((64, 64), dtype=np.float32))
    tiny = Tiling(tile_m=8, tile_n=8, tile_k=8)
    t = _best_time(lambda: tiled_gemm(a, a, tiny, backend=bk), bk, repeats)
    return t / (64 * (8 + 1))


def _one_tile(graph: Graph, hw: Hardware) -> list[tuple[Any, Tiling]]:
    """Each kernel of ``graph`` with a tiling that covers it in one tile."""
    out = []
    for km in map_model(graph, hw, MapOptions(dtype=_F)).kernels:
        k = km.kernel
        if k.gemm is not None:
            g = k.gemm
            tiling = Tiling(tile_m=g.m, tile_n=g.n, tile_k=g.k)
        else:
            rows = k.rows
            assert rows is not None
            tiling = Tiling(tile_m=rows.rows, tile_n=rows.cols, tile_k=1)
        out.append((k, tiling))
    return out


def _launch_s(hw: Hardware, bk: Backend, issue: float, repeats: int) -> float:
    graph = Graph(
        name="probe",
        ops=(
            O.Linear(
                name="fc", inputs=("x",), tokens=(8,), in_features=8, out_features=8, dtype=_F
            ),
        ),
    )
    ((kernel, tiling),) = _one_tile(graph, hw)
    inputs = make_inputs(kernel, 0, bk, graph=graph)
    t = _best_time(lambda: execute((kernel, tiling), inputs, graph=graph, backend=bk), bk, repeats)
    return max(t - 2 * issue, 0.1 * t)


def _row(kind: str, rows: int, cols: int) -> Graph:
    return Graph(name=kind, ops=(row_op(kind, rows, cols, _F),))


def _chain(rows: int, cols: int, kinds: tuple[str, ...]) -> Graph:
    return Graph(name="chain", ops=elementwise_chain(rows, cols, kinds, _F))


#: The calibration kernels of the vector rate: (name, graph builder). Not the suite's shapes.
VECTOR_PROBES: tuple[tuple[str, Callable[[], Graph]], ...] = (
    ("layernorm 96x1536", lambda: _row("layernorm", 96, 1536)),
    ("rmsnorm 192x640", lambda: _row("rmsnorm", 192, 640)),
    ("softmax 160x512", lambda: _row("softmax", 160, 512)),
    ("gelu 320x320", lambda: _chain(320, 320, ("gelu",))),
    ("add+relu 224x448", lambda: _chain(224, 448, ("add", "relu"))),
    ("silu*y 96x1280", lambda: _chain(96, 1280, ("silu", "mul"))),
)
#: Probe name's first word -> vector class of the cost model.
VECTOR_CLASS = {
    "layernorm": "layernorm",
    "rmsnorm": "rmsnorm",
    "softmax": "softmax",
    "gelu": "elementwise",
    "add+relu": "elementwise",
    "silu*y": "elementwise",
}


def _vector_rates(
    hw: Hardware, bk: Backend, launch: float, issue: float, repeats: int
) -> dict[str, float]:
    rates = {}
    for name, build in VECTOR_PROBES:
        graph = build()
        for kernel, tiling in _one_tile(graph, hw):
            inputs = make_inputs(kernel, 0, bk, graph=graph)
            run = functools.partial(execute, (kernel, tiling), inputs, graph=graph, backend=bk)
            t = _best_time(run, bk, repeats)
            rates[name] = kernel.flops / max(t - launch - issue, 0.1 * t)
    return rates


#: Row lengths (elements) of the row-kernel probes, each over ROW_ELEMENTS elements.
ROW_LENGTHS = (128, 512, 2048, 8192)
#: Elements of each row-kernel probe (4 MiB of float32: an activation past a core's L2 on
#: typical hosts, as the transpose probes).
ROW_ELEMENTS = 1 << 20


def _row_rates(
    hw: Hardware, bk: Backend, launch: float, issue: float, repeats: int
) -> dict[str, tuple[tuple[int, float], ...]]:
    """Per row class, FLOP/s by row length: ROW_ELEMENTS elements as rows of each length.

    One tile each; launch and one issued step are taken off before dividing the kernel's FLOPs.
    """
    out = {}
    for kind in ("layernorm", "rmsnorm", "softmax"):
        table = []
        for cols in ROW_LENGTHS:
            graph = _row(kind, ROW_ELEMENTS // cols, cols)
            ((kernel, tiling),) = _one_tile(graph, hw)
            inputs = make_inputs(kernel, 0, bk, graph=graph)
            run = functools.partial(execute, (kernel, tiling), inputs, graph=graph, backend=bk)
            t = _best_time(run, bk, repeats)
            table.append((cols, kernel.flops / max(t - launch - issue, 0.5 * t)))
        out[kind] = tuple(table)
    return out


def _class_rates(rates: dict[str, float]) -> dict[str, float]:
    """Per-class rates (the cost model's :func:`~workbench.cost.host.vector_class` names)."""
    by_class: dict[str, list[float]] = {}
    for name, rate in rates.items():
        by_class.setdefault(VECTOR_CLASS[name.split()[0]], []).append(rate)
    return {cls: statistics.median(v) for cls, v in by_class.items()}


def _rand(bk: Backend, *shape: int) -> Any:
    return bk.xp.asarray(np.random.default_rng(1).standard_normal(shape, dtype=np.float32))


def _attention_figures(bk: Backend, repeats: int) -> dict[str, float]:
    """Fused-attention block-step and query-tile costs, seconds.

    One head, head dim 8, 8x8 tiles (arithmetic negligible): ``A`` 64 queries x 64 keys (8 query
    tiles, 64 blocks), ``B`` 64 x 8 (8 tiles, 8 blocks), ``C`` 8 x 8 (1 tile, 1 block). Block
    step = (A - B) / 56; query tile = (B - C) / 7 less a block step.
    """

    def fused(lq: int, lk: int) -> float:
        q, k = _rand(bk, 1, 1, lq, 8), _rand(bk, 1, 1, lk, 8)
        run = functools.partial(attention_fused, q, k, k, q_tile=8, kv_tile=8, backend=bk)
        return _best_time(run, bk, repeats)

    a, b, c = fused(64, 64), fused(64, 8), fused(8, 8)
    block = max((a - b) / 56, 0.0)
    return {"block": block, "qtile": max((b - c) / 7 - block, 0.0)}


def _conv_setup_s(hw: Hardware, bk: Backend, launch: float, issue: float, repeats: int) -> float:
    """execute() of a one-tile 1x1 conv over 2x2x8 (padding 1) less launch and two steps, s."""
    graph = Graph(
        name="probe",
        ops=(
            O.Conv2d(
                name="conv", inputs=("img",), batch=1, in_channels=8, height=2, width=2,
                out_channels=8, kernel_h=1, kernel_w=1, stride=1, padding=1, dtype=_F,
                layout="NHWC",
            ),
        ),
    )  # fmt: skip
    kernel = map_model(graph, hw, MapOptions(dtype=_F)).kernels[-1].kernel
    g = kernel.gemm
    assert g is not None
    tiling = Tiling(tile_m=g.m, tile_n=g.n, tile_k=g.k)
    inputs = make_inputs(kernel, 0, bk, graph=graph)
    t = _best_time(lambda: execute((kernel, tiling), inputs, graph=graph, backend=bk), bk, repeats)
    return max(t - launch - 2 * issue, 0.0)


#: Source row lengths (elements) of the transpose probes: a geometric ladder of widths.
TRANSPOSE_WIDTHS = (16, 32, 64, 128, 192, 256, 512, 1024)
#: Elements of the transpose probes (float32): 4, 8 and 16 MiB, so that with their results
#: they sit within, near and past a 32 MiB L3; a transpose's rate falls as its footprint
#: leaves a cache.
TRANSPOSE_ELEMENTS = (1 << 20, 1 << 21, 1 << 22)


def _layout_kernel(hw: Hardware, width: int, elements: int) -> Any:
    """The layout kernel the mapper inserts before a 1x1 NHWC conv fed an NCHW input."""
    key = (width, elements, hw.sram.capacity_bytes, hw.matrix_engine.native_tile_m)
    if key not in _LAYOUT_KERNELS:
        h = max(1, elements // (8 * width))
        graph = Graph(
            name="probe",
            ops=(
                O.Conv2d(
                    name="conv", inputs=("img",), batch=1, in_channels=8, height=h,
                    width=width, out_channels=8, kernel_h=1, kernel_w=1, stride=1, padding=0,
                    dtype=_F, layout="NCHW",
                ),
            ),
        )  # fmt: skip
        kms = map_model(graph, hw, MapOptions(dtype=_F)).kernels
        _LAYOUT_KERNELS[key] = next(k for k in kms if k.kernel.kind == "layout")
    return _LAYOUT_KERNELS[key]


_LAYOUT_KERNELS: dict[tuple[int, ...], Any] = {}


def _transpose_rates(
    hw: Hardware, bk: Backend, launch: float, issue: float, repeats: int
) -> tuple[tuple[int, int, float], ...]:
    """Elements/s of the engine's layout-transform kernel by row length and size.

    Each probe is the layout kernel the mapper inserts before a 1x1 NHWC conv fed an NCHW
    input of ``elements`` elements and row length (width) ``w``, run as one tile (the engine
    transposes a tile in cache-sized blocks, so the tile's size does not change the rate); its
    launch and one issued step are taken off before dividing. The values moved do not matter
    to a copy, so the input is a constant array.
    """
    out = []
    for w in TRANSPOSE_WIDTHS:
        for elements in TRANSPOSE_ELEMENTS:
            km = _layout_kernel(hw, w, elements)
            rows = km.kernel.rows
            assert rows is not None
            inputs = {"x": bk.xp.ones((rows.rows, rows.cols), dtype=bk.xp.float32)}
            whole = Tiling(tile_m=rows.rows, tile_n=rows.cols, tile_k=1)
            run = functools.partial(execute, (km.kernel, whole), inputs, backend=bk)
            t = _best_time(run, bk, repeats)
            n = rows.rows * rows.cols  # NOTE: within a row of the nominal size; rate per element
            out.append((w, elements, n / max(t - launch - issue, 0.5 * t)))
    return tuple(out)


def _gather_rate(bk: Backend, repeats: int) -> float:
    """im2col bytes/s: the engine's per-tile gather of 128 pixels of a 3x3 conv over 20x20x24."""
    view = window_view(_rand(bk, 1, 20, 20, 24), (3, 3), (1, 1), (1, 1), bk.xp)
    t = _best_time(lambda: im2col_tile(view, 0, 128, bk.xp), bk, repeats)
    return 128 * 9 * 24 * 4 / t


def probe_engine(
    hw: Hardware, quick: bool = False, *, backend: Backend | str | None = None
) -> dict[str, Any]:
    """Measure the engine's tile issue, kernel launch and vector figures (module docstring).

    Args:
        hw: The host profile measured so far (used to lower the calibration kernels).
        quick: Fewer repeats.
        backend: Backend, backend name or None (automatic).

    Returns:
        ``tile_issue_s`` and ``kernel_launch_s`` (seconds), ``vector_flops_per_s`` (FLOP/s) and
        ``notes`` (one line per figure saying how it was measured), as
        :func:`workbench.hw.calibrate.calibrate` takes them.
    """
    bk = resolve_backend(backend)
    repeats = 5 if quick else 15
    issue = _issue_s(bk, repeats)
    launch = _launch_s(hw, bk, issue, repeats)
    rates = _vector_rates(hw, bk, launch, issue, repeats)
    vector = statistics.median(rates.values())
    per = ", ".join(f"{k} {v / 1e9:.3g}" for k, v in rates.items())
    classes = _class_rates(rates)
    by_length = _row_rates(hw, bk, launch, issue, max(3, repeats // 2))
    att = _attention_figures(bk, repeats)
    gather = _gather_rate(bk, repeats)
    conv_setup = _conv_setup_s(hw, bk, launch, issue, repeats)
    transpose = _transpose_rates(hw, bk, launch, issue, repeats)
    per_class = ", ".join(f"{k} {v / 1e9:.3g}" for k, v in classes.items())
    return {
        "tile_issue_s": issue,
        "kernel_launch_s": launch,
        "vector_flops_per_s": vector,
        "kernel_flops_per_s": classes,
        "row_rates": by_length,
        "gather_bytes_per_s": gather,
        "attention_block_issue_s": att["block"],
        "attention_qtile_issue_s": att["qtile"],
        "conv_setup_s": conv_setup,
        "transpose_rates": transpose,
        "notes": (
            f"vector rate per class GFLOP/s ({per_class}): median of that class's probes",
            "row kernels' GFLOP/s by row length ("
            + "; ".join(
                f"{k} " + ", ".join(f"{n}: {r / 1e9:.3g}" for n, r in v)
                for k, v in by_length.items()
            )
            + f"): {ROW_ELEMENTS} elements as rows of each length, one tile (the online "
            "softmax inside fused attention uses softmax at its key-block length)",
            f"attention block step {att['block'] * 1e6:.3g} us, query tile "
            f"{att['qtile'] * 1e6:.3g} us: attention_fused, 1 head, d 8, 8x8 tiles at "
            "64x64, 64x8 and 8x8 (queries x keys): (A - B) / 56 blocks and (B - C) / 7 tiles "
            "less a block",
            f"im2col gather {gather / 1e9:.3g} GB/s: the engine's gather of 128 pixels of a "
            "3x3 conv over a 20x20x24 NHWC input (bytes written / best time)",
            f"conv set-up {conv_setup * 1e6:.3g} us: execute() of a one-tile 1x1 conv over "
            "2x2x8 (padding 1) less the kernel launch and two issued steps",
            "transpose Gelem/s by row length x elements ("
            + ", ".join(f"{w}x{n}: {r / 1e9:.3g}" for w, n, r in transpose)
            + "): the engine's layout-transform kernel, one tile, less launch and one step",
            f"tile issue {issue * 1e6:.3g} us: the engine's tiled GEMM at 64^3 with 8x8x8 "
            f"tiles ({bk.name}), best of {repeats} / (64 tiles x (8 K-steps + 1 store))",
            f"kernel launch {launch * 1e6:.3g} us: execute() of a one-tile 8x8x8 GEMM kernel "
            "less two issued steps",
            f"vector rate {vector / 1e9:.3g} GFLOP/s: median effective rate (Kernel.flops / "
            f"time less launch and issue) of the engine's row kernels, one tile each ({per})",
        ),
    }
