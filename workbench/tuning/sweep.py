"""Where the best plan changes across batch size and sequence length."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.cost.search import rank
from workbench.execution.backend import Backend
from workbench.execution.errors import ExecutionError
from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel
from workbench.mapper import KernelMapping, map_model
from workbench.options import MapOptions
from workbench.tuning.autotune import autotune, progress_bar

__all__ = ["SweepRow", "sweep_best_plan"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow:
    """The best plan at one (batch, seq).

    Attributes:
        batch, seq: The workload point.
        kernel: Kernel name.
        best_tile: The chosen tile, ``MxNxK`` (measured winner when measured, else the model's).
        predicted_s: Cost-model time of the model's best tiling, seconds.
        measured_s: Median time of the measured winner, seconds (None when not measured).
        changed: The best tile differs from the previous row's.
    """

    batch: int
    seq: int
    kernel: str
    best_tile: str
    predicted_s: float
    measured_s: float | None
    changed: bool


def _pick(item: Graph | Kernel, hw: Hardware, options: MapOptions, name: str | None):
    """The kernel (with its graph) to follow: by name, else the slowest predicted kernel."""
    if isinstance(item, Kernel):
        return item, None
    mapping = map_model(item, hw, options)
    pool: Sequence[KernelMapping] = [
        k for k in mapping.kernels if k.kernel.kind not in ("collective",)
    ]
    if name is not None:
        pool = [k for k in pool if k.kernel.name == name]
        if not pool:
            raise ExecutionError(f"sweep: no kernel named {name!r} in {item.name!r}")
    return max(pool, key=lambda k: k.cost.total_s).kernel, item


def sweep_best_plan(
    build: Callable[[int, int], Graph | Kernel] | str,
    batches: Sequence[int],
    seqs: Sequence[int],
    hw: Hardware,
    options: MapOptions | None = None,
    *,
    kernel_name: str | None = None,
    backend: Backend | str | None = None,
    measured: bool = False,
    k: int = 3,
    repeats: int = 3,
    progress: bool = True,
) -> tuple[SweepRow, ...]:
    """Best tiling of one kernel at every (batch, seq), predicted and optionally measured.

    Args:
        build: A model preset name, or ``f(batch, seq)`` returning a Graph or a Kernel.
        batches: Batch sizes.
        seqs: Sequence lengths, tokens.
        hw: Hardware profile.
        options: Mapping options.
        kernel_name: The kernel to follow in each graph (default: the slowest predicted).
        backend: Backend for measurement.
        measured: Autotune each point on the backend (top-``k``, ``repeats`` runs each).
        k: Candidates per point when measured.
        repeats: Timed runs per candidate.
        progress: Show a progress bar when the sweep takes over a second.

    Returns:
        One :class:`SweepRow` per point, batches outer, seqs inner.
    """
    options = options or MapOptions()
    if isinstance(build, str):
        from workbench.models import build_graph

        preset = build

        def build(b: int, s: int) -> Graph:
            return build_graph(preset, batch=b, seq=s, dtype=options.dtype or "bf16")

    rows: list[SweepRow] = []
    points = [(b, s) for b in batches for s in seqs]
    with progress_bar(len(points), "sweep", progress) as bar:
        for b, s in points:
            kernel, graph = _pick(build(b, s), hw, options, kernel_name)
            result = (
                autotune(
                    kernel,
                    hw,
                    options,
                    k=k if measured else 1,
                    backend=backend,
                    repeats=repeats,
                    progress=False,
                    graph=graph,
                )
                if measured
                else None
            )
            tiling, cost = rank(kernel, hw, options, k=1)[0]
            tile = result.best_tiling.shape if result else tiling.shape
            prev = rows[-1].best_tile if rows else tile
            rows.append(
                SweepRow(
                    batch=b,
                    seq=s,
                    kernel=kernel.name,
                    best_tile=tile,
                    predicted_s=cost.total_s,
                    measured_s=result.best_s if result else None,
                    changed=tile != prev,
                )
            )
            bar.update()
    return tuple(rows)
