"""A measured run reduced for its run record: kernel time per category per step, operators per name.

These reductions feed :func:`workbench.review.join.from_trace.record_from_trace`; the roll-up that
judges two such records lives in :mod:`workbench.review.diagnosis.rollup`.
"""

from __future__ import annotations

from collections import defaultdict

from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import CATEGORIES, MeasuredRun

__all__ = ["MAX_ROW_OPERATORS", "NO_OPERATOR", "category_steps", "operators_by_name"]

NO_OPERATOR = "(no operator recorded)"
#: Operators a record row keeps per kernel name (the most time first).
MAX_ROW_OPERATORS = 3


def category_steps(run: MeasuredRun) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Per category, the kernel time each steady-state step launched, s (every step listed).

    Args:
        run: The measured run.

    Returns:
        ``(category, per-step seconds)`` for every category with any time, in
        :data:`~workbench.evidence.CATEGORIES` order; empty without steady steps.
    """
    steps = [it.index for it in run.steady_iterations]
    where = {index: i for i, index in enumerate(steps)}
    sums: dict[str, list[float]] = {}
    for k in run.kernels:
        i = where.get(k.iteration) if k.iteration is not None else None
        if i is not None:
            sums.setdefault(k.category, [0.0] * len(steps))[i] += k.duration_s
    return tuple((c, tuple(sums[c])) for c in CATEGORIES if c in sums)


def operators_by_name(run: MeasuredRun, operators: RecordedOps) -> dict[str, tuple[str, ...]]:
    """Per kernel name, the operators that launched it, the most time first (at most 3)."""
    counted = {it.index for it in run.iterations}
    time: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for k in run.kernels:
        if k.iteration in counted or not run.steps_annotated:
            op = operators.op_of(k.correlation)
            time[k.name][op.name if op is not None else NO_OPERATOR] += k.duration_s
    return {
        name: tuple(sorted(by, key=lambda o: (-by[o], o))[:MAX_ROW_OPERATORS])
        for name, by in time.items()
    }
