"""Predicted vs measured on this machine: map a suite of kernels, run them, compare.

Every kernel of every suite graph is mapped on the host profile (the best of three quick
``workbench calibrate`` runs with the engine probe, or the profile given) and run tile by tile
exactly as mapped on the backend. The full suite's kernels take 1-16 ms each on a 2-core x86
host (most 1-4 ms: long against timer and call jitter); the report flags any kernel measured
under 1 ms.

Calibration is interleaved with measurement so both see the same machine state. Without a
given profile, the run makes ``rounds`` passes over the suite; before each kernel (and after
the last) a light calibration re-measures every rate the host model uses (matmul call rates,
copy bandwidth per cache level, the engine's issue, launch, vector, attention, gather and
transpose figures; :func:`workbench.hw.calibrate.calibrate` with ``light=True``, about 0.4 s of
CPU on a 2-core x86 host),
and each kernel is predicted on the best of the two probes either side of it (other
processes only add time), with the tiling that ran forced. The kernel is then run once untimed
(the probe evicted its data) and timed ``repeats`` times; the round keeps its best sample. The
round's error is ``100 (predicted - measured) / measured``; a kernel's figure is the median of
its rounds' absolute errors with their interquartile range, and the suite's figure the median
over kernels, printed with the spread of the rounds' own medians. With a given profile every
round predicts on it.

On NumPy with one BLAS thread (the default) every timing, the probes' and the kernels', is
this thread's CPU time (``time.thread_time``): on a machine shared with other processes the
time they hold the core is not the kernel's, while the cache and memory-bandwidth contention
they cause (which slows the kernel as it runs) is kept, and the probes see the same. With
more BLAS threads or on a GPU, wall time. NumPy's freed temporaries stay in the heap during
the run (:func:`workbench.execution.threads.kept_heap`), so no timing pays page faults that
depend on what ran before. Calibration and measurement run with the same BLAS
thread count (:mod:`workbench.execution.threads`).

A conv whose graph declares another layout than the mapping chose (an NCHW input where the
engine prefers NHWC) is timed as mapped: on an input already in the kernel's layout, because
the transform is a kernel of its own (``<conv>.to_nhwc``), timed and predicted separately.

The measured bottleneck class comes from the measurement and the calibrated micro-benchmark
figures, never from the cost model's choices. With ``fixed`` = the profile's kernel launch plus
the fixed cost of the steps the execution issued (tile steps x ``tile_issue_s``; fused attention:
engine blocks and query tiles at their calibrated costs), ``work`` = measured - fixed, and
``moving`` = the kernel's bytes at the copy rate of the level its footprint fits in (the
suite's kernels run warm, so bytes come from that level, not DRAM):

* ``overhead`` when ``fixed >= work``;
* otherwise ``bandwidth`` when ``moving >= work / 2``, else ``compute``.

Each comparison is a ratio of measured figures whose noise on a shared host is tens of percent,
so a ratio within a factor :data:`CLASS_MARGIN` of its threshold cannot separate the two
classes: both are accepted (``measured_bottleneck`` reads ``a|b``, the first the one the
threshold picks). A kernel's class is wrong when the predicted class's family
(``bandwidth:<level>`` counts as ``bandwidth``) is not among the accepted ones.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from workbench.cost.host import home_level
from workbench.cost.model import Cost
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.errors import ExecutionError
from workbench.execution.measure import measure
from workbench.execution.run import execute, make_inputs
from workbench.execution.threads import DEFAULT_BLAS_THREADS, blas_threads, kept_heap
from workbench.execution.trace import Trace
from workbench.hw._measure import cpu_clock
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.mapper import KernelMapping, map_model
from workbench.options import MapOptions, TileOverride
from workbench.scheduling.tiling import Tiling
from workbench.tuning._report import KernelCheck, ValidationReport, family, iqr, pct_error
from workbench.tuning._suite import suite
from workbench.tuning.autotune import progress_bar

__all__ = ["KernelCheck", "ValidationReport", "host_profile", "measured_class", "validate"]


#: Ratio to a class threshold within which the measurement cannot separate the two classes.
CLASS_MARGIN = 1.3


@functools.cache
def host_profile(rounds: int = 3) -> Hardware:
    """This host measured by ``calibrate(quick=True)`` with the engine probe, best of ``rounds``.

    Cached once per process. Call it inside the same
    :func:`~workbench.execution.threads.blas_threads` block as the measurements it is compared
    with.
    """
    from workbench.execution.probe import probe_engine
    from workbench.hw.calibrate import calibrate

    return best_of(
        [calibrate(quick=True, progress=False, engine=probe_engine) for _ in range(rounds)]
    )


def _fixed_s(km: KernelMapping, hw: Hardware, calls: int, events: int) -> float:
    """Fixed software cost of one execution: launch plus issued steps, seconds."""
    oh = hw.overheads
    if km.kernel.kind == "attention" and oh.attention_block_issue_s > 0:
        t = km.tiling
        p = km.kernel.attention
        assert p is not None
        q_tiles = -(-p.q_len // t.tile_m)
        return (
            oh.kernel_launch_s
            + events * oh.attention_block_issue_s
            + (q_tiles * oh.attention_qtile_issue_s)
        )
    g = km.kernel.gemm
    if g is not None and km.kernel.kind == "gemm":
        # K-step calls plus one store per (m, n) tile; batch entries share a call
        steps = calls + km.tiling.tiles // max(g.batch, 1)
    elif g is not None and km.kernel.kind == "conv":
        steps = calls * (-(-g.k // km.tiling.tile_k) + 1)
        return oh.kernel_launch_s + oh.conv_setup_s + steps * oh.tile_issue_s
    else:
        steps = calls * max(1, km.tiling.passes)
    return oh.kernel_launch_s + steps * oh.tile_issue_s


def measured_class(kernel: Kernel, hw: Hardware, measured_s: float, fixed_s: float) -> str:
    """The bottleneck class(es) of a measurement (see the module docstring).

    Args:
        kernel: The kernel measured.
        hw: The calibrated host profile.
        measured_s: Its measured time, seconds.
        fixed_s: Fixed software cost of the execution (launch and issued steps), seconds.

    Returns:
        ``overhead``, ``bandwidth`` or ``compute``, or two of them joined by ``|`` when the
        measurement sits within :data:`CLASS_MARGIN` of the threshold between them.
    """
    work = max(measured_s - fixed_s, 0.0)
    moving = kernel.bytes / home_level(kernel, hw).bandwidth_bytes_per_s
    work_cls = "bandwidth" if moving >= 0.5 * work else "compute"
    ratio = moving / (0.5 * work) if work > 0 else float("inf")
    if 1 / CLASS_MARGIN <= ratio <= CLASS_MARGIN:
        work_cls = "bandwidth|compute" if work_cls == "bandwidth" else "compute|bandwidth"
    fixed_ratio = fixed_s / work if work > 0 else float("inf")
    if fixed_ratio >= CLASS_MARGIN:
        return "overhead"
    if fixed_ratio >= 1:
        return f"overhead|{work_cls.split('|')[0]}"
    if fixed_ratio >= 1 / CLASS_MARGIN:
        return f"{work_cls.split('|')[0]}|overhead"
    return work_cls


def validate(
    hw: Hardware | None = None,
    *,
    backend: Backend | str | None = None,
    quick: bool = False,
    repeats: int = 10,
    rounds: int = 3,
    progress: bool = True,
    threads: int | None = DEFAULT_BLAS_THREADS,
) -> ValidationReport:
    """Predict and measure the suite on ``hw`` (default: this host, probed between kernels).

    Args:
        hw: Hardware profile of this machine (a calibrated host profile); None re-measures the
            host's rates next to every kernel (module docstring).
        backend: Backend, backend name or None (automatic).
        quick: The small smoke-test suite (:func:`workbench.tuning._suite.suite`) instead of
            the full one.
        repeats: Timed runs per kernel per round (the round keeps the best).
        rounds: Passes over the suite; each kernel's figure is the median of its rounds.
        progress: Show a progress bar when the suite takes over a second.
        threads: BLAS threads for calibration and measurement (None: as the library set them).

    Returns:
        The :class:`ValidationReport`.
    """
    if repeats < 1 or rounds < 1:
        raise ExecutionError(f"validate: repeats {repeats} and rounds {rounds} must be >= 1")
    cases = suite(quick)
    bk = resolve_backend(backend)
    # NOTE: one-threaded NumPy: time in the thread's CPU time (module docstring).
    cpu = bk.name == "numpy" and threads == 1
    clock = time.thread_time if cpu else time.perf_counter
    with blas_threads(threads), cpu_clock(cpu), kept_heap(bk.name == "numpy"):
        probing = hw is None
        # NOTE: the tilings are chosen on the best of three quick calibrations, so that load
        # during one of them does not change which kernels the run times.
        # The quick smoke test calibrates once and re-measures the rates per round, not per
        # kernel (a calibration costs ~2 s of CPU; the full run's per-kernel probes dominate).
        per_kernel = probing and not quick
        calibrations = 1 if quick else 3
        base: Hardware = (
            best_of([_calibrate(light=False) for _ in range(calibrations)]) if hw is None else hw
        )
        runs = []
        for case, build, options in cases:
            graph = build()
            kernels = map_model(graph, base, options).kernels
            for km in kernels:
                name = case if len(kernels) == 1 else f"{case}: {km.kernel.name}"
                runs.append(_Run(name, graph, km, bk, options, clock))
        probes: list[Hardware] = []
        with progress_bar(rounds * len(runs), "validate", progress, unit="kernel") as bar:
            for _ in range(rounds):
                if not probing:
                    before = base
                elif quick and probes:  # the last round's closing probe opens this one
                    before = probes[-1]
                else:
                    before = base if quick else _calibrate(light=True)
                    probes.append(before)
                timed = []
                for run in runs:
                    timed.append((run, *run.time(repeats)))
                    if per_kernel or run is runs[-1]:
                        after = _calibrate(light=True) if probing else base
                        probes.append(after)
                        near = best_of([before, after]) if probing else base
                        for done, best, samples in timed:
                            cost = done.predict(near) if probing else done.km.cost
                            done.record(cost, best, samples)
                        timed.clear()
                        before = after
                    bar.update()
        merged = best_of(probes) if probing else base
        rates = (_RATES_PER_ROUND if quick else _RATES_PROBED) if probing else _RATES_GIVEN
        checks = tuple(run.check(merged, rates) for run in runs)
    return ValidationReport(
        hardware=base.name,
        backend=bk.name,
        blas_threads=threads,
        tile_issue_s=base.overheads.tile_issue_s,
        rounds=rounds,
        repeats=repeats,
        cases=len(cases),
        rates=rates,
        timer=_TIMER_CPU if cpu else _TIMER_WALL,
        kernels=checks,
    )


_RATES_PROBED = (
    "re-measured next to each kernel: best of the light calibrations just before and just "
    "after it in its round"
)
_RATES_PER_ROUND = (
    "re-measured once per round (quick): best of the light calibrations at the round's start "
    "and end"
)
_RATES_GIVEN = "the given profile, every round"
_TIMER_CPU = (
    "thread CPU time (time.thread_time): the time other processes hold the core is left out, "
    "their cache and memory contention is not"
)
_TIMER_WALL = "wall time (time.perf_counter)"


def _calibrate(*, light: bool) -> Hardware:
    from workbench.execution.probe import probe_engine
    from workbench.hw.calibrate import calibrate

    return calibrate(quick=True, light=light, progress=False, engine=probe_engine)


def best_of(profiles: list[Hardware]) -> Hardware:
    """:func:`workbench.hw.calibrate.best_of` (imported late: hw.calibrate imports NumPy BLAS)."""
    from workbench.hw.calibrate import best_of as merge

    return merge(profiles)


def _same_tiling(a: Tiling, b: Tiling) -> bool:
    keys = ("tile_m", "tile_n", "tile_k", "split_k", "raster", "passes")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def _repredict(km: KernelMapping, graph: Any, hw: Hardware, options: MapOptions) -> Cost:
    """The cost of the tiling that ran, predicted on ``hw`` (the merged profile).

    The tiling is forced; when the search cannot be made to return the same tiling, the cost
    predicted on the first round's profile (that chose it) is kept.
    """
    t = km.tiling
    forced = TileOverride(
        pattern=km.kernel.name, m=t.tile_m, n=t.tile_n, k=t.tile_k, split_k=t.split_k,
        stages=t.stages,
    )  # fmt: skip
    opts = replace(options, tiles=(forced, *options.tiles))
    for other in map_model(graph, hw, opts).kernels:
        if other.kernel.name == km.kernel.name and _same_tiling(other.tiling, t):
            return other.cost
    return km.cost


def _as_mapped(graph: Any, km: KernelMapping) -> Any:
    """The graph to execute ``km`` on: a conv reads its input in the layout the mapping chose.

    The mapper puts a layout-transform kernel before a conv whose input is in another layout
    than the engine prefers; the conv kernel itself then reads the transformed input. The
    engine, given the graph as declared, would transform inside the conv call; timing the
    conv kernel as mapped needs the op declared in the kernel's layout.
    """
    k = km.kernel
    if k.kind != "conv" or k.layout not in ("NCHW", "NHWC"):
        return graph
    ops = tuple(
        replace(op, layout=k.layout)
        if op.name in k.ops and getattr(op, "layout", k.layout) != k.layout
        else op
        for op in graph.ops
    )
    return graph if ops == graph.ops else replace(graph, ops=ops)


class _Run:
    """One suite kernel prepared for timing: inputs made, executed once (tiles counted)."""

    def __init__(
        self,
        name: str,
        graph: Any,
        km: KernelMapping,
        bk: Backend,
        options: MapOptions,
        clock: Callable[[], float],
    ) -> None:
        self.name, self.graph, self.km, self.bk, self.options = name, graph, km, bk, options
        self.clock = clock
        self.exec_graph = _as_mapped(graph, km)
        self.inputs = make_inputs(km.kernel, 0, bk, graph=self.exec_graph)
        trace = Trace()
        ran = execute(km, self.inputs, graph=self.exec_graph, backend=bk, trace=trace)
        self.calls, self.events = ran.tiles, len(trace)
        self.rounds: list[tuple[Cost, float]] = []
        self.samples: list[float] = []

    def time(self, repeats: int) -> tuple[float, tuple[float, ...]]:
        """Best and all of ``repeats`` timed runs after one untimed run, seconds."""
        m = measure(
            self.km.kernel,
            self.km.tiling,
            backend=self.bk,
            graph=self.exec_graph,
            inputs=self.inputs,
            warmup=1,
            repeats=repeats,
            clock=self.clock,
            threads=None,  # NOTE: validate() pins the threads around the whole run
        )
        return min(m.samples), m.samples

    def predict(self, hw: Hardware) -> Cost:
        """The cost of the tiling that ran, on ``hw``."""
        return _repredict(self.km, self.graph, hw, self.options)

    def record(self, cost: Cost, best: float, samples: tuple[float, ...]) -> None:
        """Keep one round's prediction and best sample (and every sample)."""
        self.rounds.append((cost, best))
        self.samples.extend(samples)

    def check(self, hw: Hardware, rates: str) -> KernelCheck:
        """The kernel's record over its rounds; the class is judged on ``hw``."""
        k = self.km.kernel
        errors = tuple(pct_error(c.total_s, best) for c, best in self.rounds)
        abs_errors = [abs(e) for e in errors]
        measured = float(statistics.median(best for _, best in self.rounds))
        predicted = float(statistics.median(c.total_s for c, _ in self.rounds))
        meas_cls = measured_class(k, hw, measured, _fixed_s(self.km, hw, self.calls, self.events))
        p10, med, p90 = np.percentile(self.samples, (10, 50, 90))
        cls = self.rounds[len(self.rounds) // 2][0].bottleneck
        return KernelCheck(
            name=self.name,
            kind=k.kind,
            tile=self.km.tiling.shape,
            tiles=self.calls,
            predicted_s=predicted,
            measured_s=measured,
            measured_best_s=min(self.samples),
            round_errors_pct=errors,
            abs_pct_error=float(statistics.median(abs_errors)),
            error_iqr_pct=iqr(abs_errors),
            sample_spread=float((p90 - p10) / med) if med > 0 else 0.0,
            rates=rates,
            predicted_bottleneck=cls,
            measured_bottleneck=meas_cls,
            class_match=family(cls) in meas_cls.split("|"),
        )
