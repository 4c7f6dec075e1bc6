"""Measured pairs: two traces aligned by what they ran, not by the names of their kernels.

Across GPU generations or library versions the same operator runs different kernels
(``volta_sgemm_128x64_nn`` on a V100, ``cutlass_80_tensorop_s1688gemm_...`` on an A100), so two
runs are aligned by the operator that launched each kernel (its ``cpu_op`` with its recorded
shapes, :attr:`RecordedOp.signature`) and the kernel's category. Every figure is per
steady-state iteration (the warm-up step left out). :func:`pair_document` also says where the
two runs differ in what they run (GPU, world size, rank, sharding: the same kernel template with
other template arguments, data types, shapes) and compares the
step times step by step (:func:`workbench.evidence.compare.compare_runs`, paired when both have
several steps).
"""

from __future__ import annotations

from typing import Any

from workbench._doc import pick
from workbench.errors import WorkbenchError, printable
from workbench.evidence.compare import Shift, compare_runs
from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import CATEGORIES, MeasuredRun
from workbench.review.join._templates import template_differences
from workbench.review.join.trace_summary import _cut, by_category_s

__all__ = ["align_by_operator", "differences", "pair_document"]

_NO_OP = "(no operator recorded)"
_SAME_TAGS = ("device", "world_size", "rank", "backend", "compute_capability")


def align_by_operator(
    run: MeasuredRun, recorded: RecordedOps, *, modules: bool = False
) -> dict[tuple[str, str], tuple[float, frozenset[str]]]:
    """Per ``(category, operator name)``: kernel time per steady iteration and its signatures.

    The time is in seconds; the signatures (shapes, types) are those of the calls that launched
    the kernels, so a row can say whether both runs ran the operator on the same shapes. With
    ``modules``, the operator is named inside its module (``Module Hierarchy``, when the profiler
    ran with ``with_modules=True``): ``model.mlp.0 / aten::addmm``.
    """
    steady = {it.index for it in run.steady_iterations}
    out: dict[tuple[str, str], float] = {}
    sigs: dict[tuple[str, str], set[str]] = {}
    for k in run.kernels:
        if k.iteration not in steady:
            continue
        op = recorded.op_of(k.correlation)
        name = _NO_OP
        if op is not None:
            name = f"{op.module} / {op.name}" if modules and op.module else op.name
        key = (k.category, name)
        out[key] = out.get(key, 0.0) + k.duration_s
        sigs.setdefault(key, set()).add(op.signature if op is not None else _NO_OP)
    n = max(len(steady), 1)
    return {key: (t / n, frozenset(sigs[key])) for key, t in out.items()}


def differences(
    a: MeasuredRun, ops_a: RecordedOps, b: MeasuredRun, ops_b: RecordedOps
) -> list[str]:
    """Where the two runs differ in what they run, one line each (empty when they do not)."""
    lines = []
    for tag in _SAME_TAGS:
        va, vb = a.tag(tag), b.tag(tag)
        if va != vb:
            lines.append(f"{tag} differs: {printable(va)} vs {printable(vb)}")
    types_a = {t for op in ops_a.ops for t in op.input_types if t and t != "Scalar"}
    types_b = {t for op in ops_b.ops for t in op.input_types if t and t != "Scalar"}
    if types_a != types_b and types_a and types_b:
        only_a, only_b = sorted(types_a - types_b), sorted(types_b - types_a)
        lines.append(
            f"data types differ: only in the first {printable(', '.join(only_a) or '-')}; only in "
            f"the second {printable(', '.join(only_b) or '-')}"
        )
    names_a, names_b = {op.name for op in ops_a.ops}, {op.name for op in ops_b.ops}
    if names_a and names_b and names_a != names_b:
        only_a, only_b = sorted(names_a - names_b), sorted(names_b - names_a)
        lines.append(
            f"operators differ: {len(only_a)} only in the first "
            f"({_cut(', '.join(only_a[:3]) or '-', 90)}), {len(only_b)} only in the second "
            f"({_cut(', '.join(only_b[:3]) or '-', 90)})"
        )
    if ops_a.shapes_recorded and ops_b.shapes_recorded:
        sig_a = {op.signature for op in ops_a.ops}
        sig_b = {op.signature for op in ops_b.ops}
        names = {op.name for op in ops_a.ops} & {op.name for op in ops_b.ops}
        new_a = {s for s in sig_a - sig_b if s.split("(")[0] in names}
        new_b = {s for s in sig_b - sig_a if s.split("(")[0] in names}
        if new_a or new_b:
            example = sorted(new_b or new_a)[0]
            lines.append(
                f"shapes differ: {len(new_a)} operator calls only in the first, {len(new_b)} "
                f"only in the second (e.g. {_cut(example, 80)})"
            )
    elif ops_a.shapes_recorded != ops_b.shapes_recorded:
        lines.append("only one of the traces recorded shapes: operators aligned by name alone")
    sharded = template_differences(a, ops_a, b, ops_b)
    if sharded:
        first = sharded[0]
        lines.append(
            f"sharding differs (kernel template arguments): {len(sharded)} kernel template(s) "
            "launched by the same operator run with other arguments, e.g. "
            f"{printable(first.describe())} under {_cut(first.operator, 60)}"
        )
    return lines


def pair_document(
    a: MeasuredRun, ops_a: RecordedOps, b: MeasuredRun, ops_b: RecordedOps, *, top: int = 15
) -> dict[str, Any]:
    """Two runs side by side: step shift, roll-up by category, rows by operator, differences.

    Args:
        a: The baseline run.
        ops_a: Its operators.
        b: The candidate run.
        ops_b: Its operators.
        top: Operator rows kept (largest change first).

    Returns:
        A JSON-safe dict: ``step`` (medians, relative change, the paired/unpaired shift),
        ``by_category`` (per iteration, both runs), ``by_operator``, ``differences`` and
        ``template_differences`` (kernel templates each run instantiated with other arguments).
    """
    median_a, median_b = a.median_iteration_s(), b.median_iteration_s()
    step: dict[str, Any] = {
        "baseline_median_s": median_a,
        "candidate_median_s": median_b,
        "relative": median_b / median_a - 1.0 if median_a > 0 else None,
        "shift": None,
    }
    try:
        step["shift"] = shift_doc(compare_runs(a, b))
    except WorkbenchError as exc:
        step["note"] = str(exc)
    cat_a, cat_b = by_category_s(a), by_category_s(b)
    modules = any(op.module for op in ops_a.ops) and any(op.module for op in ops_b.ops)
    rows_a = align_by_operator(a, ops_a, modules=modules)
    rows_b = align_by_operator(b, ops_b, modules=modules)
    keys = sorted(set(rows_a) | set(rows_b))
    empty: tuple[float, frozenset[str]] = (0.0, frozenset())
    rows: list[dict[str, Any]] = []
    for c, op in keys:
        (ta, sa), (tb, sb) = rows_a.get((c, op), empty), rows_b.get((c, op), empty)
        rows.append(
            {
                "category": c,
                "operator": op,
                "baseline_s": ta,
                "candidate_s": tb,
                "delta_s": tb - ta,
                "shapes": "same" if sa == sb else ("differ" if sa and sb else "one side only"),
                "baseline_signatures": sorted(sa)[:20],
                "candidate_signatures": sorted(sb)[:20],
            }
        )
    rows.sort(key=lambda r: (-abs(r["delta_s"]), r["operator"]))
    return {
        "baseline": a.source,
        "candidate": b.source,
        "step": step,
        "by_category": [
            {"category": c, "baseline_s": cat_a[c], "candidate_s": cat_b[c]}
            for c in CATEGORIES
            if cat_a[c] > 0 or cat_b[c] > 0
        ],
        "by_operator": rows[:top],
        "differences": differences(a, ops_a, b, ops_b),
        "template_differences": [
            {
                "operator": d.operator,
                "template": d.template,
                "baseline": [list(args) for args in d.baseline],
                "candidate": [list(args) for args in d.candidate],
            }
            for d in template_differences(a, ops_a, b, ops_b)
        ],
    }


def shift_doc(s: Shift) -> dict[str, Any]:
    """A step-time shift as JSON (seconds; ``trace --against`` and triage print the same)."""
    names = ("method", "estimate_s", "low_s", "high_s", "coverage", "beyond_noise", "pairs")
    return pick(s, *names, "positive", "sign_p")
