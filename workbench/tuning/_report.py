"""The result of ``workbench validate``: one record per kernel and the suite's figures."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.cost import Bottleneck

__all__ = ["MIN_KERNEL_S", "KernelCheck", "ValidationReport", "iqr", "pct_error"]

#: A kernel shorter than this is too short to time reliably against timer and call jitter
#: (seconds); the full suite's kernels are sized above it and the report flags any below.
MIN_KERNEL_S = 1e-3


def pct_error(pred: float, meas: float) -> float:
    """Signed percentage error of a prediction, ``100 (pred - meas) / meas``."""
    return 100.0 * (pred - meas) / meas if meas > 0 else float("inf")


def iqr(values: list[float] | tuple[float, ...]) -> float:
    """Interquartile range (75th - 25th percentile) of ``values``; 0 for one value."""
    q25, q75 = np.percentile(np.asarray(values, dtype=float), (25, 75))
    return float(q75 - q25)


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelCheck:
    """One kernel predicted and measured over the run's rounds (seconds, percent).

    In each round the kernel is timed ``repeats`` times and its best sample kept (other
    processes only add time); the prediction of that round is made on the rates measured next
    to it (``rates``). The round's error is the percentage error of that prediction against
    that round's best sample.

    Attributes:
        name: Suite case (and kernel when a case has several).
        kind: Kernel kind.
        tile: Tiling that ran, ``MxNxK``.
        tiles: Tile calls executed (GEMM: K-steps).
        predicted_s: Median over rounds of the round's prediction, seconds.
        measured_s: Median over rounds of the round's best sample, seconds.
        measured_best_s: Best sample of the whole run, seconds.
        round_errors_pct: Signed percentage error of each round.
        abs_pct_error: Median over rounds of the absolute error, percent.
        error_iqr_pct: Interquartile range of the rounds' absolute errors, percent.
        sample_spread: (p90 - p10) / median of all timed samples (load on the machine).
        rates: Where the rates of the prediction came from (one line).
        predicted_bottleneck: The cost model's class.
        measured_bottleneck: The class from the measurement; ``a|b`` when the measurement
            cannot separate two classes (see :func:`workbench.tuning.validate.measured_class`).
        class_match: The predicted class's family is among the measured ones.
    """

    name: str
    kind: str
    tile: str
    tiles: int
    predicted_s: float
    measured_s: float
    measured_best_s: float
    round_errors_pct: tuple[float, ...]
    abs_pct_error: float
    error_iqr_pct: float
    sample_spread: float
    rates: str
    predicted_bottleneck: str
    measured_bottleneck: str
    class_match: bool

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        out = {f: getattr(self, f) for f in self.__slots__}
        out["round_errors_pct"] = list(self.round_errors_pct)
        return out


def _family(cls: str) -> str:
    return Bottleneck.parse(cls).kind


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    """The suite's result.

    Attributes:
        hardware: Profile name.
        backend: Backend name.
        blas_threads: BLAS threads of the run (None: left as the library set it).
        tile_issue_s: The (first) profile's per-step issue time, seconds.
        rounds: Passes over the suite.
        repeats: Timed samples per kernel per round (the best is kept).
        cases: Suite cases run (a case may lower to several kernels).
        rates: How predictions got their rates (one line).
        timer: What the timings measure (one line).
        kernels: One :class:`KernelCheck` per kernel.
    """

    hardware: str
    backend: str
    blas_threads: int | None
    tile_issue_s: float
    rounds: int
    repeats: int
    cases: int
    rates: str
    timer: str
    kernels: tuple[KernelCheck, ...]

    @property
    def median_abs_pct_error(self) -> float:
        """Median over kernels of each kernel's median absolute percentage error."""
        return float(statistics.median(k.abs_pct_error for k in self.kernels))

    @property
    def round_medians_pct(self) -> tuple[float, ...]:
        """Median absolute error over the kernels within each round, percent."""
        n = min(len(k.round_errors_pct) for k in self.kernels)
        return tuple(
            float(statistics.median(abs(k.round_errors_pct[r]) for k in self.kernels))
            for r in range(n)
        )

    @property
    def median_error_iqr_pct(self) -> float:
        """Median over kernels of the interquartile range of their round errors, percent."""
        return float(statistics.median(k.error_iqr_pct for k in self.kernels))

    @property
    def short_kernels(self) -> tuple[str, ...]:
        """Kernels measured below :data:`MIN_KERNEL_S` (too short to time reliably)."""
        return tuple(k.name for k in self.kernels if k.measured_s < MIN_KERNEL_S)

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

    def worst(self, n: int = 3) -> tuple[KernelCheck, ...]:
        """The ``n`` kernels with the largest median absolute error."""
        return tuple(sorted(self.kernels, key=lambda k: -k.abs_pct_error)[:n])

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the ``workbench validate --format json`` object."""
        return {
            "median_abs_pct_error": self.median_abs_pct_error,
            "round_medians_pct": list(self.round_medians_pct),
            "median_error_iqr_pct": self.median_error_iqr_pct,
            "median_abs_pct_error_by_kind": self.by_kind(),
            "class_mismatches": list(self.class_mismatches),
            "short_kernels": list(self.short_kernels),
            "backend": self.backend,
            "hardware": self.hardware,
            "blas_threads": self.blas_threads,
            "tile_issue_s": self.tile_issue_s,
            "rounds": self.rounds,
            "repeats": self.repeats,
            "cases": self.cases,
            "rates": self.rates,
            "timer": self.timer,
            "kernels": [k.as_dict() for k in self.kernels],
        }

    def summary(self) -> str:
        """The run's figure with its spread, in one line."""
        rm = self.round_medians_pct
        return (
            f"median abs error {self.median_abs_pct_error:.1f}% over {len(self.kernels)} kernels "
            f"of {self.cases} cases (rounds' medians {min(rm):.1f}-{max(rm):.1f}%, median "
            f"per-kernel IQR {self.median_error_iqr_pct:.1f} points; {self.rounds} rounds x "
            f"best of {self.repeats})"
        )

    def table(self) -> str:
        """A fixed-width text table, one kernel per line, medians at the end."""
        head = (
            f"{'kernel':44} {'kind':11} {'tile':13} {'tiles':>5} {'predicted':>10} "
            f"{'measured':>10} {'error':>6} {'IQR':>5}  predicted / measured class"
        )
        lines = [head, "-" * len(head)]
        for k in self.kernels:
            mark = "" if k.class_match else "  <- class differs"
            mark += "  <- under 1 ms" if k.measured_s < MIN_KERNEL_S else ""
            lines.append(
                f"{k.name[:44]:44} {k.kind:11} {k.tile[:13]:13} {k.tiles:5d} "
                f"{k.predicted_s * 1e3:8.3f}ms {k.measured_s * 1e3:8.3f}ms "
                f"{k.abs_pct_error:5.0f}% {k.error_iqr_pct:5.1f}  {k.predicted_bottleneck} / "
                f"{k.measured_bottleneck}{mark}"
            )
        per_kind = ", ".join(f"{kind} {e:.0f}%" for kind, e in self.by_kind().items())
        worst = ", ".join(f"{k.name} {k.abs_pct_error:.0f}%" for k in self.worst())
        lines += [
            f"median abs error by kind: {per_kind}",
            f"worst: {worst}",
            f"rates: {self.rates}",
            f"timer: {self.timer}",
            f"{self.summary()}; {self.backend}, {self.hardware}, BLAS threads "
            f"{self.blas_threads}; class mismatches: {len(self.class_mismatches)}",
        ]
        return "\n".join(lines)


def family(cls: str) -> str:
    """The family of a class name (``bandwidth:l2`` -> ``bandwidth``)."""
    return _family(cls)
