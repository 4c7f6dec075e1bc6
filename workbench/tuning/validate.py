"""Predicted vs measured on this machine: map a suite of small kernels, run them, compare.

Every kernel of every suite graph is mapped on the host profile (``workbench calibrate`` with
the engine probe, or the profile given), run tile by tile exactly as mapped on the backend and
timed: ``rounds`` passes over the whole suite, each timing every kernel ``repeats`` times, so a
kernel's samples are spread over the run. Without a given profile each round starts with a quick
calibration, so calibration and measurement share the machine's load over the run; the
prediction of each kernel's executed tiling is then made on the rounds' merged profile
(:func:`workbench.hw.calibrate.best_of`). ``measured_s`` is the best
sample, as calibration keeps each micro-benchmark's best (other processes on a shared machine
only add time, and the prediction is built from best-case figures); the median is reported
beside it. The error of one kernel is ``|predicted - measured| / measured``. Calibration and
measurement run with the same BLAS thread count (:mod:`workbench.execution.threads`).

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
from dataclasses import dataclass, replace
from typing import Any

from workbench.cost.host import home_level
from workbench.cost.model import Cost
from workbench.execution.backend import Backend, resolve_backend
from workbench.execution.errors import ExecutionError
from workbench.execution.measure import measure
from workbench.execution.run import execute, make_inputs
from workbench.execution.threads import DEFAULT_BLAS_THREADS, blas_threads
from workbench.execution.trace import Trace
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.mapper import KernelMapping, map_model
from workbench.options import MapOptions, TileOverride
from workbench.scheduling.tiling import Tiling
from workbench.tuning._suite import suite
from workbench.tuning.autotune import progress_bar

__all__ = ["KernelCheck", "ValidationReport", "host_profile", "measured_class", "validate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelCheck:
    """One kernel predicted and measured (seconds).

    Attributes:
        name: Suite case (and kernel when a case has several).
        kind: Kernel kind.
        tile: Tiling that ran, ``MxNxK``.
        tiles: Tile calls executed (GEMM: K-steps).
        predicted_s: Cost-model total, seconds.
        measured_s: Best measured time over every round, seconds (module docstring).
        measured_median_s: Median of the samples, seconds.
        abs_pct_error: ``100 |predicted - measured| / measured``.
        predicted_bottleneck: The cost model's class.
        measured_bottleneck: The class from the measurement (module docstring); ``a|b`` when
            the measurement cannot separate two classes.
        class_match: The predicted class's family is among the measured ones.
    """

    name: str
    kind: str
    tile: str
    tiles: int
    predicted_s: float
    measured_s: float
    measured_median_s: float
    abs_pct_error: float
    predicted_bottleneck: str
    measured_bottleneck: str
    class_match: bool

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {f: getattr(self, f) for f in self.__slots__}


def _pct(pred: float, meas: float) -> float:
    return 100.0 * abs(pred - meas) / meas if meas > 0 else float("inf")


def _family(cls: str) -> str:
    return cls.split(":")[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    """The suite's result.

    Attributes:
        hardware: Profile name.
        backend: Backend name.
        blas_threads: BLAS threads of the run (None: left as the library set it).
        tile_issue_s: The profile's per-step issue time, seconds.
        kernels: One :class:`KernelCheck` per kernel.
    """

    hardware: str
    backend: str
    blas_threads: int | None
    tile_issue_s: float
    kernels: tuple[KernelCheck, ...]

    @property
    def median_abs_pct_error(self) -> float:
        """Median of the kernels' absolute percentage errors."""
        return float(statistics.median(k.abs_pct_error for k in self.kernels))

    @property
    def class_mismatches(self) -> tuple[str, ...]:
        """Names of the kernels whose predicted class family is not the measured one."""
        return tuple(k.name for k in self.kernels if not k.class_match)

    def by_kind(self) -> dict[str, float]:
        """Median absolute percentage error per kernel kind."""
        kinds = sorted({k.kind for k in self.kernels})
        return {
            kind: float(statistics.median(k.abs_pct_error for k in self.kernels if k.kind == kind))
            for kind in kinds
        }

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the ``workbench validate --format json`` object."""
        return {
            "median_abs_pct_error": self.median_abs_pct_error,
            "median_abs_pct_error_by_kind": self.by_kind(),
            "class_mismatches": list(self.class_mismatches),
            "backend": self.backend,
            "hardware": self.hardware,
            "blas_threads": self.blas_threads,
            "tile_issue_s": self.tile_issue_s,
            "kernels": [k.as_dict() for k in self.kernels],
        }

    def table(self) -> str:
        """A fixed-width text table, one kernel per line, medians at the end."""
        head = (
            f"{'kernel':44} {'kind':11} {'tile':13} {'tiles':>6} {'predicted':>11} "
            f"{'measured':>11} {'error':>8}  predicted / measured class"
        )
        lines = [head, "-" * len(head)]
        for k in self.kernels:
            mark = "" if k.class_match else "  <- class differs"
            lines.append(
                f"{k.name[:44]:44} {k.kind:11} {k.tile:13} {k.tiles:6d} "
                f"{k.predicted_s * 1e3:9.4f}ms {k.measured_s * 1e3:9.4f}ms "
                f"{k.abs_pct_error:7.0f}%  {k.predicted_bottleneck} / {k.measured_bottleneck}"
                f"{mark}"
            )
        per_kind = ", ".join(f"{kind} {e:.0f}%" for kind, e in self.by_kind().items())
        lines.append(f"median abs error by kind: {per_kind}")
        lines.append(
            f"median abs error {self.median_abs_pct_error:.1f}% over {len(self.kernels)} "
            f"kernels ({self.backend}, {self.hardware}, BLAS threads {self.blas_threads}); "
            f"class mismatches: {len(self.class_mismatches)}"
        )
        return "\n".join(lines)


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
    from workbench.hw.calibrate import best_of, calibrate

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
    repeats: int = 5,
    rounds: int = 3,
    progress: bool = True,
    threads: int | None = DEFAULT_BLAS_THREADS,
) -> ValidationReport:
    """Predict and measure the suite on ``hw`` (default: this host, calibrated quickly).

    Args:
        hw: Hardware profile of this machine (a calibrated host profile).
        backend: Backend, backend name or None (automatic).
        quick: Six tiny kernels instead of the full suite (for tests).
        repeats: Timed runs per kernel per round.
        rounds: Passes over the suite (and calibration rounds when ``hw`` is None); the best
            sample of all is kept.
        progress: Show a progress bar when the suite takes over a second.
        threads: BLAS threads for calibration and measurement (None: as the library set them).

    Returns:
        The :class:`ValidationReport`.
    """
    if repeats < 1 or rounds < 1:
        raise ExecutionError(f"validate: repeats {repeats} and rounds {rounds} must be >= 1")
    with blas_threads(threads):
        profiles = [hw] if hw is not None else [_calibrate()]
        bk = resolve_backend(backend)
        runs = []
        for case, build, options in suite(quick):
            graph = build()
            kernels = map_model(graph, profiles[0], options).kernels
            for km in kernels:
                name = case if len(kernels) == 1 else f"{case}: {km.kernel.name}"
                runs.append(_Run(name, graph, km, bk, options))
        samples: list[list[float]] = [[] for _ in runs]
        with progress_bar(rounds * len(runs), "validate", progress) as bar:
            for r in range(rounds):
                if r > 0 and hw is None:
                    profiles.append(_calibrate())
                for run, acc in zip(runs, samples, strict=True):
                    acc.extend(run.time(repeats, warmup=1 if r == 0 else 0))
                    bar.update()
        repredict = hw is None
        if hw is None:
            from workbench.hw.calibrate import best_of

            hw = best_of(profiles)
        checks = [run.check(hw, acc, repredict) for run, acc in zip(runs, samples, strict=True)]
    return ValidationReport(
        hardware=hw.name,
        backend=bk.name,
        blas_threads=threads,
        tile_issue_s=hw.overheads.tile_issue_s,
        kernels=tuple(checks),
    )


def _calibrate() -> Hardware:
    from workbench.execution.probe import probe_engine
    from workbench.hw.calibrate import calibrate

    return calibrate(quick=True, progress=False, engine=probe_engine)


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


class _Run:
    """One suite kernel prepared for timing: inputs made, executed once (tiles counted)."""

    def __init__(
        self, name: str, graph: Any, km: KernelMapping, bk: Backend, options: MapOptions
    ) -> None:
        self.name, self.graph, self.km, self.bk, self.options = name, graph, km, bk, options
        self.inputs = make_inputs(km.kernel, 0, bk, graph=graph)
        trace = Trace()
        ran = execute(km, self.inputs, graph=graph, backend=bk, trace=trace)
        self.calls, self.events = ran.tiles, len(trace)

    def time(self, repeats: int, warmup: int) -> tuple[float, ...]:
        k = self.km.kernel
        m = measure(
            k,
            self.km.tiling,
            backend=self.bk,
            graph=self.graph,
            inputs=self.inputs,
            warmup=warmup,
            repeats=repeats,
        )
        return m.samples

    def check(self, hw: Hardware, samples: list[float], repredict: bool) -> KernelCheck:
        k = self.km.kernel
        cost = _repredict(self.km, self.graph, hw, self.options) if repredict else self.km.cost
        best = min(samples)
        meas_cls = measured_class(k, hw, best, _fixed_s(self.km, hw, self.calls, self.events))
        return KernelCheck(
            name=self.name,
            kind=k.kind,
            tile=self.km.tiling.shape,
            tiles=self.calls,
            predicted_s=cost.total_s,
            measured_s=best,
            measured_median_s=float(statistics.median(samples)),
            abs_pct_error=_pct(cost.total_s, best),
            predicted_bottleneck=cost.bottleneck,
            measured_bottleneck=meas_cls,
            class_match=_family(cost.bottleneck) in meas_cls.split("|"),
        )
