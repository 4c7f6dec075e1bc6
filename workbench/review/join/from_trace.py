"""Measured runs as run records: a profiler trace (via :mod:`workbench.evidence`) -> RunRecord.

``record_from_trace(run, mapping)`` turns a :class:`~workbench.evidence.MeasuredRun` into a
:class:`~workbench.review.records.store.RunRecord` that triage and the review pack read like any
other:

* the model time is the **median iteration** over the trace's ``ProfilerStep#N`` repeats, with
  its distribution-free 95 % interval (``model.time_interval_s``); the measurement says how many
  repeats there were (triage refuses to sign off a measured run without repeats);
* with the run's model and hardware (a ``mapping``), measured kernels are matched to the mapping
  sheet's kernels (:func:`match_trace`), so every sheet row carries its predicted and measured
  time side by side (:func:`workbench.review.join.matching.match_kernels`: by execution order and
  kind, with a confidence); measured kernels that match no sheet row are kept as their own rows
  (``layer_type`` ``unmatched``, no prediction), never dropped;
* without a mapping, the tags say what the trace says (device, driver, CUDA, framework) and
  ``unknown`` for everything else, never a guess.

Per-kernel measured time is the kernel's summed duration per iteration (mean over the repeats).
The measurement also keeps each kernel category's time per steady-state step
(``category_steps_s``), and, given the trace's operators, a row without a mapping names the
operators that launched it: triage rolls an unmapped measured pair up by category and operator
(:mod:`workbench.review.diagnosis.rollup`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
from collections import defaultdict
from dataclasses import dataclass

from workbench import __version__
from workbench.evidence import MeasuredRun, TraceError
from workbench.evidence.operators import RecordedOps
from workbench.mapper import ModelMapping
from workbench.review.join.categories import category_steps, operators_by_name
from workbench.review.records._consistency import consistency_problems
from workbench.review.records._sanity import physical_problems
from workbench.review.records.store import (
    SCHEMA_VERSION,
    KernelResult,
    Measurement,
    RunRecord,
    record_from_mapping,
)
from workbench.review.records.tags import (
    CompilerTags,
    HardwareTags,
    RunTags,
    RuntimeTags,
    WorkloadTags,
)

__all__ = ["TraceMatch", "match_trace", "record_from_trace", "trace_command"]

_VERSION_TAGS = ("driver", "cuda", "framework")
#: Measured kernels a record keeps by name (the rest are summed per category), so a trace of
#: 10**5 distinct names still writes a record of a few MiB that ``load_record`` reads back.
MAX_RECORD_KERNELS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceMatch:
    """Measured kernels matched to a mapping sheet (seconds per iteration).

    Attributes:
        measured_s: ``sheet kernel -> measured seconds per iteration``.
        confidence: ``sheet kernel -> confidence and reason of the match``.
        unmatched: ``(measured kernel name, seconds per iteration, category)`` not matched.
    """

    measured_s: dict[str, float]
    confidence: dict[str, str]
    unmatched: tuple[tuple[str, float, str], ...]


def _per_iteration(run: MeasuredRun) -> tuple[dict[str, float], dict[str, str]]:
    counted = {it.index for it in run.iterations}
    n = max(len(counted), 1)
    total: dict[str, float] = defaultdict(float)
    category: dict[str, str] = {}
    for k in run.kernels:
        if k.iteration in counted or not run.steps_annotated:
            total[k.name] += k.duration_s
            category.setdefault(k.name, k.category)
    return {name: t / n for name, t in total.items()}, category


def match_trace(run: MeasuredRun, mapping: ModelMapping) -> TraceMatch:
    """Match the run's kernels to ``mapping``'s sheet kernels.

    Uses :func:`workbench.review.join.matching.match_kernels` (order-preserving alignment by kind,
    on the median iteration; measured times are medians over the repeats). Unmatched measured
    kernels of the aligned iteration are summed by name.

    Raises:
        MatchRefused: The trace does not run the sheet's model (summary match score below
            :data:`workbench.review.join._match_score.MIN_MATCH_SCORE`; the line gives score and
            why).
    """
    from workbench.review.join._match_score import require_match
    from workbench.review.join.matching import match_kernels

    m = match_kernels(run, mapping)
    if m.score is not None:
        require_match(m.score, run.source, str(mapping.graph.meta_dict().get("model") or
                                                mapping.graph.name))  # fmt: skip
    measured = {
        r.name: r.measured_s for r in m.sheet_rows if r.measured_s is not None and r.measured_s > 0
    }
    confidence = {
        r.name: f"{r.confidence:.1f} ({r.reason}; measured as {r.measured_name})"
        for r in m.sheet_rows
        if r.name in measured and r.confidence is not None
    }
    totals: dict[str, float] = defaultdict(float)
    category: dict[str, str] = {}
    for u in m.unmatched_measured:
        totals[u.name] += u.duration_s
        category.setdefault(u.name, u.category)
    unmatched = tuple((n, t, category[n]) for n, t in totals.items() if t > 0)
    return TraceMatch(measured_s=measured, confidence=confidence, unmatched=unmatched)


def _unmatched_kernel(
    name: str, seconds: float, category: str, ops: tuple[str, ...] = ()
) -> KernelResult:
    return KernelResult(
        name=name,
        ops=ops,
        kind=category,
        layer_type="unmatched",
        engine="unknown",
        dtype="unknown",
        layout="unknown",
        fusion=(),
        tile="",
        stages=0,
        sram_bytes=0,
        sram_capacity_bytes=0,
        spill_bytes=0.0,
        traffic=(),
        bottleneck="unknown",
        evidence="measured kernel with no mapping-sheet row (no prediction)",
        flops=0,
        model_flops=0,
        predicted_s=0.0,
        compute_s=0.0,
        stall_s=0.0,
        launch_s=0.0,
        sync_s=0.0,
        barriers=0,
        measured_s=seconds,
        notes=("unmatched measured kernel",),
    )


def _bounded(
    rows: list[tuple[str, float, str]],
    keep: int = MAX_RECORD_KERNELS,
    ops: dict[str, tuple[str, ...]] | None = None,
):
    """Record rows of ``(name, s per iteration, category)``, at most ``keep`` of them by name.

    The ``keep`` longest keep their names (in input order) and, from ``ops``, the operators that
    launched them; the rest are summed into one row per category, ``(N more kernels, category
    C)``, so the record stays bounded.
    """
    keep = max(keep, 0)
    ops = ops or {}
    if len(rows) <= keep:
        return tuple(_unmatched_kernel(*r, ops.get(r[0], ())) for r in rows)
    order = sorted(range(len(rows)), key=lambda i: -rows[i][1])
    kept = set(order[:keep])
    rest: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for i in order[keep:]:
        rest[rows[i][2]][0] += 1
        rest[rows[i][2]][1] += rows[i][1]
    out = [_unmatched_kernel(*rows[i], ops.get(rows[i][0], ())) for i in sorted(kept)]
    out += [
        _unmatched_kernel(f"({int(n)} more kernels, category {cat})", t, cat)
        for cat, (n, t) in rest.items()
    ]
    return tuple(out)


def trace_command(run: MeasuredRun, mapping: ModelMapping | None) -> str:
    """The ``workbench run --from-trace`` command that rebuilds this record."""
    argv = ["workbench", "run", "--from-trace", run.source]
    if mapping is not None:
        meta = mapping.graph.meta_dict()
        argv += ["--model", str(meta.get("model") or mapping.graph.name)]
        argv += ["--hardware", mapping.hardware.name, "--phase", mapping.phase]
        argv += ["--batch", str(meta.get("batch") or 1)]
        if meta.get("seq"):
            argv += ["--seq", str(meta["seq"])]
        if meta.get("context") and mapping.phase == "decode":
            argv += ["--context", str(meta["context"])]
    return shlex.join([*argv, "--record", "run.json"])


def _measurement(run: MeasuredRun, unmatched: int) -> Measurement:
    n = run.repeats
    window = "ProfilerStep# iterations" if run.steps_annotated else "unannotated: one window"
    interval = ""
    if len(run.steady_iterations) >= 2:
        lo, hi = run.interval95_s()
        interval = f", interval {lo:.6g}..{hi:.6g} s ({run.interval_coverage():.0%} coverage)"
    names = tuple(dict.fromkeys(k.name for k in run.kernels))
    if len(names) > MAX_RECORD_KERNELS:
        names = (*names[:MAX_RECORD_KERNELS], f"(and {len(names) - MAX_RECORD_KERNELS} more)")
    return Measurement(
        method=(
            f"{run.format} trace {run.source}: {n} repeat(s) ({window}); median iteration "
            f"{run.median_iteration_s():.6g} s{interval}; kernel {run.kernel_time_s:.6g} s, "
            f"idle/launch gaps {run.gap_s:.6g} s, copies {run.copy_s:.6g} s per iteration; "
            f"{unmatched} measured kernel(s) unmatched to the sheet"
        ),
        backend=f"trace:{run.format}",
        kernels=names,
        shapes=(),
        repeats=n,
        wall_s=sum(it.wall_s for it in run.iterations),
        category_steps_s=category_steps(run) if run.steps_annotated else (),
        window_rule=run.window_rule,
        warnings=run.warnings,
    )


def _bare_tags(run: MeasuredRun) -> RunTags:
    device = run.tag("device")
    facts = tuple(sorted(run.tags))
    ranks = {k.rank for k in run.kernels if k.rank is not None}
    return RunTags(
        compiler=CompilerTags(
            workbench_version=__version__,
            git_commit="unknown",
            fusion_enabled=(),
            fusion_disabled=(),
            search="unknown",
            tiles=(),
            layout="unknown",
            layout_propagation=False,
            dtype=None,
            weight_dtype=None,
            dtype_overrides=(),
        ),
        runtime=RuntimeTags(
            backend=f"trace:{run.format}",
            backend_versions=tuple((t, run.tag(t)) for t in _VERSION_TAGS),
            launch="unknown",
            barrier_per_layer=False,
            chips=max(len(ranks), 1),
        ),
        hardware=HardwareTags(
            profile=device,
            hardware_hash=hashlib.sha256(repr(facts).encode()).hexdigest(),
            host=facts,
        ),
        workload=WorkloadTags(
            model="unknown", phase="unknown", batch=1, seq=None, context=None, dtype="unknown"
        ),
    )


def record_from_trace(
    run: MeasuredRun,
    mapping: ModelMapping | None = None,
    *,
    operators: RecordedOps | None = None,
) -> RunRecord:
    """The run record of a measured run (see the module docstring).

    Args:
        run: The measured run (from :func:`workbench.evidence.read_trace`).
        mapping: The run's model mapped on its hardware profile, to match kernels against and
            to compute MFU; None when unknown.
        operators: The trace's operators (:func:`workbench.evidence.operators.read_operators`):
            without a mapping, each kernel row names the operators that launched it (``ops``),
            so triage can roll a measured pair up by operator.

    Returns:
        The :class:`RunRecord` (``measurement`` set, ``model.time_s`` the median iteration).
    """
    t = run.median_iteration_s()
    interval = run.interval95_s() if len(run.steady_iterations) >= 2 else ()
    if mapping is None:
        per, category = _per_iteration(run)
        names = operators_by_name(run, operators) if operators is not None else None
        kernels = _bounded([(n, s, category[n]) for n, s in per.items()], ops=names)
        by_type: dict[str, float] = defaultdict(float)
        for k in kernels:
            by_type[k.kind] += k.measured_s or 0.0
        return _checked(
            RunRecord(
                schema_version=SCHEMA_VERSION,
                tags=_bare_tags(run),
                kernels=kernels,
                model=dataclasses.replace(
                    _model(t, interval, run, tuple(by_type.items())), kernel_count=len(kernels)
                ),
                measurement=_measurement(run, len(kernels)),
                command=trace_command(run, None),
            ),
            run,
        )
    match = match_trace(run, mapping)
    rec = record_from_mapping(
        mapping,
        measured=match.measured_s,
        backend_versions=tuple((n, run.tag(n)) for n in _VERSION_TAGS),
        host=tuple(sorted(run.tags)),
        command=trace_command(run, mapping),
    )
    rec = dataclasses.replace(
        rec,
        tags=dataclasses.replace(
            rec.tags,
            runtime=dataclasses.replace(rec.tags.runtime, backend=f"trace:{run.format}"),
        ),
    )
    kernels = tuple(
        dataclasses.replace(k, notes=(*k.notes, f"matched: {match.confidence[k.name]}"))
        if k.name in match.confidence
        else k
        for k in rec.kernels
    )
    kernels += _bounded(list(match.unmatched), MAX_RECORD_KERNELS - len(kernels))
    by_type = defaultdict(float)
    for k in kernels:
        if k.measured_s is not None:
            by_type[k.layer_type] += k.measured_s
    scale = mapping.time_s / t
    model = dataclasses.replace(
        _model(t, interval, run, tuple(by_type.items())),
        mfu=mapping.mfu * scale,
        hfu=mapping.hfu * scale,
        tokens_per_s=mapping.items_per_step / t,
        model_flops=int(mapping.model_flops),
        peak_flops=float(mapping.peak_flops),
        offchip_level=mapping.hardware.offchip.name,
        # NOTE: MBU is on the profile's *sustained* bandwidth, which a real run can beat; such a
        # run has no MBU on that scale (None), rather than being refused as impossible.
        mbu=mapping.mbu * scale if mapping.mbu * scale <= 1 else None,
        kernel_count=len(kernels),
    )
    return _checked(
        dataclasses.replace(
            rec,
            kernels=kernels,
            model=model,
            measurement=_measurement(run, len(match.unmatched)),
        ),
        run,
    )


def _checked(record: RunRecord, run: MeasuredRun) -> RunRecord:
    """Refuse a record the trace makes physically impossible (e.g. faster than the peak)."""
    problems = physical_problems(record) + consistency_problems(record)
    if problems:
        hint = ""
        if max(record.model.mfu, record.model.hfu or 0) > 1:
            hint = " (the trace ran faster than the profile's peak allows: wrong --hardware?)"
        raise TraceError(f"{run.source}: {problems[0]}{hint}")
    return record


def _model(t, interval, run: MeasuredRun, by_type):
    from workbench.review.records.store import ModelResult

    return ModelResult(
        time_s=t,
        mfu=0.0,
        tokens_per_s=0.0,
        model_flops=0,
        peak_flops=0.0,
        offchip_level="unknown",
        stall_fraction_by_layer_type=(),
        time_by_layer_type=tuple(by_type),
        measured_time_s=run.kernel_time_s,
        time_interval_s=tuple(interval),
        step_times_s=tuple(it.wall_s for it in run.steady_iterations) if run.repeats >= 2 else (),
    )
