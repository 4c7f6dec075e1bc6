"""An expected time beside every measured kernel: the trace's own graph mapped on its hardware.

The join of measurement and model (it sits above the mapper, as DESIGN.md says):

1. the trace's operators with their shapes (:func:`workbench.evidence.operators.read_operators`)
   become a graph (:func:`workbench.models.from_trace.graph_from_trace`), one op per distinct call;
2. the graph is mapped on the trace's hardware with every fusion rule off (eager PyTorch runs one
   operator per launch), so each op is costed alone: its expected device time is the execution
   time of its kernels (``Cost.exec_s``, launch overhead left out: a trace's kernel durations
   exclude it);
3. each measured kernel is put beside its operator call's expected time. An operator that
   launched several kernels (a GEMM and its split-K reduction) shares its expected time among
   them in proportion to their measured times, so the operator's total is what was predicted.

Per kernel row (kernel name x operator signature), over the steady-state iterations (the
warm-up step left out), per iteration: measured time, expected time, efficiency = expected /
measured (1 = runs as fast as the model says the hardware can), and the time lost against
expectation, ``measured - expected`` (never below 0). Rows are sorted by time lost.

What-if: the same graph re-mapped on another profile gives the expected time of the same
workload there (:func:`what_if`), each op in the format it ran in here; where the other
profile's matrix engine lacks that format the mapper says so and costs the op on the vector unit
(TF32 GEMMs of an A100 trace on a V100: its CUDA cores, as PyTorch would run them in fp32).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import MeasuredRun
from workbench.hw.schema import Hardware
from workbench.mapper import ModelMapping, map_model
from workbench.models.from_trace import TraceGraph, graph_from_trace
from workbench.options import FUSION_RULES, MapOptions

__all__ = [
    "BEYOND_BOUND",
    "IMPOSSIBLE",
    "IMPOSSIBLE_RATIO",
    "MAX_SIGNATURES",
    "ExpectedKernel",
    "ExpectedReport",
    "WhatIf",
    "expect",
    "trace_graph",
    "what_if",
]

#: Mapping options for a trace's graph: every op alone, as eager PyTorch launches them.
EAGER = MapOptions(disabled_fusion=tuple(FUSION_RULES))
#: How many times faster than expected a kernel may be measured before its shapes are not
#: believed (see :func:`_drop_impossible`).
IMPOSSIBLE_RATIO = 10.0
#: The reason such kernels are counted under in the report's ``skipped``.
IMPOSSIBLE = "kernel rows whose shapes cannot have run in the measured time (expected > 10x)"
#: Most distinct operator signatures given an expectation: the ones with the most kernel time.
#: Each is mapped once (a few ms per kernel, twice with ``--on``), linear in the signatures; the
#: bound keeps a trace of thousands of distinct shapes to seconds (500 mapped in ~2-5 s on one
#: core); the rest is said so and its time counted as unmodelled.
MAX_SIGNATURES = 500
#: The reason the calls past that bound are counted under in the report's ``skipped``.
BEYOND_BOUND = (
    f"calls beyond the {MAX_SIGNATURES} operator signatures with the most kernel time "
    "(not mapped, to bound the time taken)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedKernel:
    """One measured kernel (by name, per operator signature) beside its expected time.

    Attributes:
        name: The kernel's name as the trace recorded it.
        category: The kernel's category (:data:`workbench.evidence.CATEGORIES`).
        operator: The launching operator's signature (``aten::addmm(512:float, ...)``).
        calls: Launches per iteration.
        measured_s: Measured time per iteration, s.
        expected_s: Expected time per iteration on the profile, s.
        bottleneck: The expected bottleneck class (``compute``, ``bandwidth:hbm``...).
        format: The format the model costs it in (``fp32`` SIMT, ``tf32`` tensor cores...).
    """

    name: str
    category: str
    operator: str
    calls: float
    measured_s: float
    expected_s: float
    bottleneck: str
    format: str

    @property
    def efficiency(self) -> float:
        """Expected / measured (1 = as fast as the hardware should run it; 0 when unmeasured)."""
        return self.expected_s / self.measured_s if self.measured_s > 0 else 0.0

    @property
    def lost_s(self) -> float:
        """Time per iteration beyond expectation, s (0 when faster than expected)."""
        return max(self.measured_s - self.expected_s, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedReport:
    """Every modelled kernel beside its expectation, and what could not be modelled.

    Attributes:
        hardware: The profile the graph was mapped on.
        rows: Modelled kernels, most time lost first.
        unmodelled_s: ``(category, seconds per iteration)`` of kernels with no expectation.
        skipped: ``(reason, calls)`` of operator calls the graph left out, and the kernel rows
            dropped because their shapes cannot have run in the measured time (:data:`IMPOSSIBLE`).
        mapping: The mapping of the trace's graph on :attr:`hardware`.
        trace_graph: The graph and its link to the trace.
        dropped: Operator signatures of the rows dropped as impossible (a what-if leaves them
            out too).
    """

    hardware: str
    rows: tuple[ExpectedKernel, ...]
    unmodelled_s: tuple[tuple[str, float], ...]
    skipped: tuple[tuple[str, int], ...]
    mapping: ModelMapping
    trace_graph: TraceGraph
    dropped: frozenset[str] = frozenset()

    @property
    def measured_s(self) -> float:
        """Measured time per iteration of the modelled kernels, s."""
        return sum(r.measured_s for r in self.rows)

    @property
    def expected_s(self) -> float:
        """Expected time per iteration of the modelled kernels, s."""
        return sum(r.expected_s for r in self.rows)

    @property
    def coverage(self) -> float:
        """Share of the steady-state kernel time that has an expectation (0..1)."""
        rest = sum(s for _, s in self.unmodelled_s)
        total = self.measured_s + rest
        return self.measured_s / total if total > 0 else 0.0

    def top(self, n: int = 5) -> tuple[ExpectedKernel, ...]:
        """The ``n`` kernels that lose the most time against expectation."""
        return self.rows[:n]


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIf:
    """The trace's workload (its modelled part) expected on another profile.

    Attributes:
        hardware: The other profile.
        expected_s: Expected time per iteration of the modelled kernels there, s.
        by_operator: ``(operator signature, expected s per iteration)``, largest first.
    """

    hardware: str
    expected_s: float
    by_operator: tuple[tuple[str, float], ...]


def expect(run: MeasuredRun, recorded: RecordedOps, hw: Hardware) -> ExpectedReport:
    """Put an expected time beside every measured kernel of ``run`` (see the module doc).

    Args:
        run: The measured run.
        recorded: Its operators with shapes (from the same trace).
        hw: The profile to expect on (normally the trace's own GPU).

    Returns:
        The report: rows sorted by time lost, the unmodelled rest by category.

    Raises:
        GraphError: The trace has no shapes, or none the graph models.
    """
    tg = trace_graph(run, recorded)
    mapping = map_model(tg.graph, hw, EAGER)
    per_call = _expected_per_op(mapping)
    steady = {it.index for it in run.steady_iterations}
    n = max(len(steady), 1)
    measured: dict[tuple[str, str, str], float] = {}
    launches: dict[tuple[str, str, str], int] = {}
    op_time: dict[int, float] = {}
    call_of: dict[tuple[str, str, str], set[int]] = {}
    unmodelled: dict[str, float] = {}
    for k in run.kernels:
        if k.iteration not in steady or k.kind != "kernel":
            continue
        index = recorded.by_correlation.get(k.correlation) if k.correlation is not None else None
        op = tg.op_of_call.get(index) if index is not None else None
        if index is None or op is None:
            unmodelled[k.category] = unmodelled.get(k.category, 0.0) + k.duration_s
            continue
        key = (k.name, recorded.ops[index].signature, op)
        measured[key] = measured.get(key, 0.0) + k.duration_s
        launches[key] = launches.get(key, 0) + 1
        op_time[index] = op_time.get(index, 0.0) + k.duration_s
        call_of.setdefault(key, set()).add(index)
    category = {k.name: k.category for k in run.kernels}
    rows = []
    for key, m in measured.items():
        name, signature, op = key
        # NOTE: each call's expected time is shared among its kernels by measured share.
        share = per_call[op][0] * _calls_share(m, op_time, call_of[key])
        rows.append(
            ExpectedKernel(
                name=name,
                category=category[name],
                operator=signature,
                calls=launches[key] / n,
                measured_s=m / n,
                expected_s=share / n,
                bottleneck=per_call[op][1],
                format=tg.graph.op(op).dtype,
            )
        )
    kept, dropped = _drop_impossible(rows, unmodelled, n)
    skipped = (*tg.skipped, (IMPOSSIBLE, len(dropped))) if dropped else tg.skipped
    rows = kept
    rows.sort(key=lambda r: (-r.lost_s, -r.measured_s, r.name))
    return ExpectedReport(
        hardware=hw.name,
        rows=tuple(rows),
        unmodelled_s=tuple(
            sorted(((c, s / n) for c, s in unmodelled.items()), key=lambda x: -x[1])
        ),
        skipped=skipped,
        dropped=frozenset(r.operator for r in dropped),
        mapping=mapping,
        trace_graph=tg,
    )


def _drop_impossible(
    rows: list[ExpectedKernel], unmodelled: dict[str, float], n: int
) -> tuple[list[ExpectedKernel], list[ExpectedKernel]]:
    """Rows whose recorded shapes could not have run in the measured time, moved to the rest.

    A kernel measured more than :data:`IMPOSSIBLE_RATIO` times faster than its operator's
    expected time is not a fast kernel: its shapes are not the work it did (a mislinked or
    corrupt record). On HTA's real DLRM traces no kernel beats its expectation by more than
    1.8x. Its measured time goes to ``unmodelled`` (per-iteration ``n`` undone), by category.
    """
    kept: list[ExpectedKernel] = []
    dropped: list[ExpectedKernel] = []
    for r in rows:
        if r.expected_s > IMPOSSIBLE_RATIO * r.measured_s:
            unmodelled[r.category] = unmodelled.get(r.category, 0.0) + r.measured_s * n
            dropped.append(r)
        else:
            kept.append(r)
    return kept, dropped


def what_if(
    report: ExpectedReport, run: MeasuredRun, recorded: RecordedOps, hw: Hardware
) -> WhatIf:
    """The modelled part of the trace's workload, re-mapped on ``hw`` (the same calls per step).

    Args:
        report: The report of :func:`expect` (its graph is re-used).
        run: The measured run (for the number of calls of each op per iteration).
        recorded: Its operators.
        hw: The other profile.

    Returns:
        The expected time per iteration there, total and by operator.
    """
    mapping = map_model(report.trace_graph.graph, hw, EAGER)
    per_call = _expected_per_op(mapping)
    steady = {it.index for it in run.steady_iterations}
    calls: dict[str, set[int]] = {}
    for k in run.kernels:
        if k.iteration not in steady or k.correlation is None:
            continue
        index = recorded.by_correlation.get(k.correlation)
        op = report.trace_graph.op_of_call.get(index) if index is not None else None
        if op is not None and index is not None:
            calls.setdefault(op, set()).add(index)
    n = max(len(steady), 1)
    by_sig: dict[str, float] = {}
    for op, indices in calls.items():
        sig = recorded.ops[next(iter(indices))].signature
        if sig in report.dropped:
            continue
        by_sig[sig] = by_sig.get(sig, 0.0) + per_call[op][0] * len(indices) / n
    ranked = tuple(sorted(by_sig.items(), key=lambda kv: -kv[1]))
    return WhatIf(hardware=hw.name, expected_s=sum(by_sig.values()), by_operator=ranked)


def trace_graph(run: MeasuredRun, recorded: RecordedOps) -> TraceGraph:
    """The graph of ``run``'s operator calls (:func:`graph_from_trace`), kernels linked."""
    names: dict[int, list[str]] = {}
    time_of: dict[str, float] = {}
    for k in run.kernels:
        index = recorded.by_correlation.get(k.correlation) if k.correlation is not None else None
        if index is not None and k.kind == "kernel":
            names.setdefault(index, []).append(k.name)
            sig = recorded.ops[index].signature
            time_of[sig] = time_of.get(sig, 0.0) + k.duration_s
    beyond = 0
    if len(time_of) > MAX_SIGNATURES:  # NOTE: bound the mapping (see MAX_SIGNATURES)
        ranked = sorted(time_of, key=lambda sig: (-time_of[sig], sig))
        kept = set(ranked[:MAX_SIGNATURES])
        left = [i for i in names if recorded.ops[i].signature not in kept]
        beyond = len(left)
        for i in left:
            del names[i]
    world = run.tag("world_size")
    tg = graph_from_trace(
        recorded.ops,
        names,
        source=run.source,
        device=run.tag("device"),
        world_size=int(world) if world.isdigit() and len(world) <= 6 else None,
    )
    if beyond:
        tg = replace(tg, skipped=(*tg.skipped, (BEYOND_BOUND, beyond)))
    return tg


def _expected_per_op(mapping: ModelMapping) -> dict[str, tuple[float, str]]:
    """Graph op name -> (expected device time per call, s; bottleneck of its largest kernel)."""
    out: dict[str, tuple[float, str]] = {}
    biggest: dict[str, float] = {}
    for km in mapping.kernels:
        for op in km.kernel.ops:
            t, cls = out.get(op, (0.0, ""))
            if km.cost.exec_s >= biggest.get(op, -1.0):
                biggest[op], cls = km.cost.exec_s, km.cost.bottleneck
            out[op] = (t + km.cost.exec_s / len(km.kernel.ops), cls)
    return out


def _calls_share(measured_s: float, op_time: Mapping[int, float], calls: set[int]) -> float:
    """Calls of the op that this row's kernels account for, weighted by their measured share."""
    total = sum(op_time[i] for i in calls)
    return len(calls) * measured_s / total if total > 0 else 0.0
