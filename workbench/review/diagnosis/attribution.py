"""Attribution of a time delta: the diff table, the declared change, counterfactual shares.

* :func:`diff_table`: one row per aligned kernel group (see
  :func:`~workbench.review.diagnosis.first_failing.align`) and per layer type, sorted by time
  delta, plus an *unexplained remainder* row: the model's delta minus the kernels' (overlap, chips,
  anything the kernel list does not carry). Measured kernel times are used when every kernel has
  one.
* :func:`~workbench.review.diagnosis.changes.declared_changes` (re-exported): the declared
  change, option by option and hardware-profile figure by figure (full values, never hashes alone).
* :func:`counterfactual`: for runs the model can re-map, revert each declared change alone on the
  candidate, re-map, and report each change's share ``t(candidate) - t(candidate without it)``
  and the interaction remainder ``total - sum(shares)``. Only a model can do this cheaply; the
  shares are predicted even when the records were measured (the method line says so).
* :func:`model_drift`: before those predicted shares are read for a measured pair, how far the
  model's baseline is from the measured one, per kernel kind; where it misses by more than
  :data:`DRIFT_LIMIT`, the attribution cannot speak for that kind (as a replay tool refuses a
  counterfactual whose simulated baseline misses the measured one).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.mapper import map_model
from workbench.options import MapOptions, TileOverride
from workbench.review.diagnosis.changes import SET_LABELS, Change, declared_changes, profile_diff
from workbench.review.diagnosis.families import natural_key
from workbench.review.diagnosis.first_failing import align, time_field
from workbench.review.records.reproduce import graph_for, hardware_for, options_for
from workbench.review.records.store import RunRecord

__all__ = [
    "DRIFT_LIMIT",
    "Attribution",
    "Change",
    "ChangeShare",
    "DiffRow",
    "DriftRow",
    "attribution_rows",
    "counterfactual",
    "declared_changes",
    "diff_table",
    "model_drift",
    "profile_diff",
    "reverted_mappings",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRow:
    """One row of the diff table (seconds).

    Attributes:
        name: Kernel (anchor) name, layer type, or ``(unexplained remainder)``.
        level: ``kernel``, ``layer_type`` or ``remainder``.
        baseline_s, candidate_s: Time on each side, seconds.
        delta_s: ``candidate_s - baseline_s``, seconds.
        share: ``delta_s`` over the model's total delta (0 when the total is 0).
        mechanism: The group's mechanism class (kernel rows), else None.
        mechanisms: Every mechanism that applies to the group (kernel rows), first one first.
    """

    name: str
    level: str
    baseline_s: float
    candidate_s: float
    delta_s: float
    share: float
    mechanism: str | None = None
    mechanisms: tuple[str, ...] = ()


def _snap(value: float, scale: float) -> float:
    """``value``, or 0.0 when it is floating-point dust next to ``scale`` (seconds)."""
    return 0.0 if abs(value) <= 1e-9 * max(abs(scale), 1e-12) else value


def _share(part: float, total: float) -> float:
    return part / total + 0.0 if total else 0.0  # + 0.0: no "-0.0%"


def diff_table(base: RunRecord, cand: RunRecord) -> tuple[DiffRow, ...]:
    """Kernel rows, layer-type rows and the unexplained remainder, each sorted by delta.

    Args:
        base: Baseline run.
        cand: Candidate run.

    Returns:
        Kernel rows (largest delta first), then layer-type rows, then the remainder row.
    """
    field = time_field(base, cand)
    total = cand.model.time_s - base.model.time_s
    kernels = []
    for g in align(base, cand):
        bt = sum(getattr(k, field) for k in g.baseline)
        ct = sum(getattr(k, field) for k in g.candidate)
        kernels.append(
            DiffRow(
                name=g.anchor,
                level="kernel",
                baseline_s=bt,
                candidate_s=ct,
                delta_s=ct - bt,
                share=_share(ct - bt, total),
                mechanism=g.mechanism,
                mechanisms=tuple(dict.fromkeys(m for m, _, _ in g.mechanisms)),
            )
        )
    by_type: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for side, run in enumerate((base, cand)):
        for k in run.kernels:
            by_type[k.layer_type][side] += getattr(k, field)
    types = [
        DiffRow(
            name=t,
            level="layer_type",
            baseline_s=b,
            candidate_s=c,
            delta_s=c - b,
            share=_share(c - b, total),
        )
        for t, (b, c) in by_type.items()
    ]
    explained = sum(r.delta_s for r in kernels)
    remainder = DiffRow(
        name="(unexplained remainder)",
        level="remainder",
        baseline_s=base.model.time_s - sum(r.baseline_s for r in kernels),
        candidate_s=cand.model.time_s - sum(r.candidate_s for r in kernels),
        delta_s=total - explained,
        share=_share(total - explained, total),
    )
    order = lambda r: (-r.delta_s, natural_key(r.name))  # noqa: E731
    return (*sorted(kernels, key=order), *sorted(types, key=order), remainder)


# --- counterfactual -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeShare:
    """One change's counterfactual share.

    Attributes:
        change: What was reverted (for the hardware, the whole profile).
        reverted_s: Candidate time with only this change reverted, seconds.
        share_s: ``t(candidate) - reverted_s``, seconds.
        share: ``share_s`` over the total delta.
    """

    change: Change
    reverted_s: float
    share_s: float
    share: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribution:
    """Counterfactual attribution of the delta between two re-mapped runs (seconds).

    Attributes:
        baseline_s, candidate_s: Re-mapped times, seconds.
        total_s: ``candidate_s - baseline_s``.
        shares: One per declared change, largest first.
        interaction_s: ``total_s - sum(shares)``: what only the changes together explain.
        method: One line on how the shares were computed.
    """

    baseline_s: float
    candidate_s: float
    total_s: float
    shares: tuple[ChangeShare, ...]
    interaction_s: float
    method: str

    @property
    def interaction_share(self) -> float:
        """The interaction remainder over the total delta."""
        return _share(self.interaction_s, self.total_s)


_Inputs = tuple[Graph, Hardware, MapOptions]
_Revert = Callable[[_Inputs], _Inputs]


#: Graph facts an option sets (the run's format, tensor parallel): reverting the option restores
#: the baseline's graph too, and they are no workload change of their own.
_OPTION_META = {"dtype": "dtype", "chips": "tensor_parallel"}


#: Relative miss of the model's baseline (predicted / measured - 1) beyond which a kernel kind's
#: counterfactual share rests on the model alone. An assumption (no published figure sets it):
#: a quarter, above the 20% every corpus category's cross-validated error is held to.
DRIFT_LIMIT = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftRow:
    """The model's baseline against the measured one for one kernel kind.

    Attributes:
        kind: Kernel kind (``gemm``, ``attention``, ``norm`` ...).
        predicted_s: Predicted time of its kernels, seconds.
        measured_s: Measured time of the same kernels, seconds.
    """

    kind: str
    predicted_s: float
    measured_s: float

    @property
    def drift(self) -> float:
        """``predicted / measured - 1`` (negative: the model is optimistic)."""
        return self.predicted_s / self.measured_s - 1.0

    @property
    def large(self) -> bool:
        """Whether the miss exceeds :data:`DRIFT_LIMIT`."""
        return abs(self.drift) > DRIFT_LIMIT


def model_drift(base: RunRecord) -> tuple[DriftRow, ...]:
    """Per kernel kind, the model's predicted baseline against the measured one (most time first).

    Empty unless the baseline's kernels carry both a prediction and a measurement (a trace read
    with its model: ``workbench run --from-trace T --model M``).
    """
    pred: dict[str, float] = defaultdict(float)
    meas: dict[str, float] = defaultdict(float)
    for k in base.kernels:
        if k.measured_s is not None and k.measured_s > 0 and k.predicted_s > 0:
            pred[k.kind] += k.predicted_s
            meas[k.kind] += k.measured_s
    rows = [DriftRow(kind=c, predicted_s=pred[c], measured_s=meas[c]) for c in meas]
    return tuple(sorted(rows, key=lambda r: (-r.measured_s, r.kind)))


def _meta_rest(g: Graph) -> dict[str, Any]:
    return {k: v for k, v in g.meta_dict().items() if k not in _OPTION_META.values()}


def _option_reverts(
    base: RunRecord, cand: RunRecord, base_graph: Graph | None = None
) -> list[tuple[Change, _Revert]]:
    ob, oc = options_for(base), options_for(cand)
    out: list[tuple[Change, _Revert]] = []

    def toggle(field: str, item: Any) -> _Revert:
        def fn(x: _Inputs) -> _Inputs:
            cur = tuple(getattr(x[2], field))
            new = tuple(v for v in cur if v != item) if item in cur else (*cur, item)
            changes: dict[str, Any] = {field: new}
            return x[0], x[1], dataclasses.replace(x[2], **changes)

        return fn

    def setter(field: str) -> _Revert:
        def fn(x: _Inputs) -> _Inputs:
            graph = x[0]
            if field in _OPTION_META and base_graph is not None:
                graph = base_graph
            changes = {field: getattr(ob, field)}
            if field == "launch":
                changes["launch_host_s"] = ob.launch_host_s
            return graph, x[1], dataclasses.replace(x[2], **changes)

        return fn

    group_of = {"launch": "runtime", "barrier_per_layer": "runtime", "chips": "runtime"}
    group_of["launch_host_s"] = "runtime"
    # NOTE: the software stack's figures are runtime tags (RuntimeTags.stack and its figures)
    group_of |= dict.fromkeys(("step_overhead_s", "attention_kernel", "gqa_kv_sharing"), "runtime")
    for f in dataclasses.fields(MapOptions):
        va, vb = getattr(ob, f.name), getattr(oc, f.name)
        if va == vb or (f.name == "launch_host_s" and ob.launch != oc.launch):
            continue  # NOTE: the host time per eager launch rides with a launch-mode change
        group = group_of.get(f.name, "compiler")
        if f.name in ("disabled_fusion", "dtype_overrides", "tiles"):
            for item in sorted(set(va) ^ set(vb), key=str):
                shown = _show(item)
                change = Change(
                    group=group,
                    name=f"{SET_LABELS[f.name]} {shown}",
                    before="present" if item in va else "absent",
                    after="present" if item in vb else "absent",
                )
                out.append((change, toggle(f.name, item)))
        else:
            change = Change(group=group, name=f.name, before=str(va), after=str(vb))
            out.append((change, setter(f.name)))
    return out


def _show(item: Any) -> str:
    if isinstance(item, TileOverride):
        return f"{item.pattern}={item.m}x{item.n}x{item.k}"
    if isinstance(item, tuple):
        return "=".join(str(v) for v in item)
    return str(item)


def _steps(base: RunRecord, cand: RunRecord):
    """``(candidate inputs, baseline inputs, [(change, revert)])`` or None if not re-mappable."""
    hb, hc = hardware_for(base), hardware_for(cand)
    gb, gc = graph_for(base), graph_for(cand)
    if hb is None or hc is None or gb is None or gc is None:
        return None
    same_slice = _meta_rest(gb) == _meta_rest(gc)
    steps = _option_reverts(base, cand, gb if same_slice else None)
    if base.tags.hardware.hardware_hash != cand.tags.hardware.hardware_hash:
        n = len(profile_diff(hb, hc))
        change = Change(
            group="hardware",
            name="hardware profile",
            before=hb.name,
            after=f"{hc.name} ({n} figure(s) differ)",
        )
        steps.append((change, lambda x: (x[0], hb, x[2])))
    if not same_slice:
        w0, w1 = base.tags.workload, cand.tags.workload
        change = Change(
            group="workload",
            name="workload slice",
            before=f"b{w0.batch} s{w0.seq} c{w0.context}",
            after=f"b{w1.batch} s{w1.seq} c{w1.context}",
        )
        steps.append((change, lambda x: (gb, x[1], x[2])))
    cand_inputs: _Inputs = (gc, hc, options_for(cand))
    base_inputs: _Inputs = (gb, hb, options_for(base))
    return cand_inputs, base_inputs, steps


def reverted_mappings(base: RunRecord, cand: RunRecord) -> list[tuple[Change, Any]]:
    """The candidate re-mapped with each declared change reverted alone (empty if impossible).

    Returns:
        ``(change, ModelMapping)`` pairs, in declaration order.
    """
    found = _steps(base, cand)
    if found is None:
        return []
    inputs, _, steps = found
    return [(change, map_model(*revert(inputs))) for change, revert in steps]


def counterfactual(base: RunRecord, cand: RunRecord) -> Attribution | None:
    """Each declared change's share of the delta, by reverting it alone (None if not re-mappable).

    Args:
        base: Baseline run (preset model; profile embedded or loadable).
        cand: Candidate run, same model.

    Returns:
        The :class:`Attribution`, or None when either run cannot be re-mapped or nothing
        declared changed.
    """
    found = _steps(base, cand)
    if found is None or not found[2]:
        return None
    inputs, base_inputs, steps = found
    t_cand = map_model(*inputs).time_s
    t_base = map_model(*base_inputs).time_s
    total = t_cand - t_base
    shares = []
    for change, revert in steps:
        t = map_model(*revert(inputs)).time_s
        shares.append(
            ChangeShare(
                change=change, reverted_s=t, share_s=t_cand - t, share=_share(t_cand - t, total)
            )
        )
    shares.sort(key=lambda s: -s.share_s)
    return Attribution(
        baseline_s=t_base,
        candidate_s=t_cand,
        total_s=total,
        shares=tuple(shares),
        interaction_s=_snap(total - sum(s.share_s for s in shares), total),
        method=(
            f"each of {len(shares)} declared change(s) reverted alone on the candidate and "
            "re-mapped with the cost model (predicted times, also for measured runs)"
        ),
    )


def attribution_rows(att: Attribution) -> list[dict[str, Any]]:
    """Rows for a table: each change's share, then the interaction remainder (seconds)."""
    rows = [
        {
            "change": s.change.line(),
            "reverted_s": s.reverted_s,
            "share_s": s.share_s,
            "share": s.share,
        }
        for s in att.shares
    ]
    rows.append(
        {
            "change": "(interaction remainder)",
            "reverted_s": None,
            "share_s": att.interaction_s,
            "share": att.interaction_share,
        }
    )
    return rows
