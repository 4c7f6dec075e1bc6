"""Run the published corpus: per-row prediction, error, floor check, and summaries.

Signed error is ``predicted / measured - 1`` in the row's own metric: for a time, positive means
the workbench is slower (pessimistic); for a rate or MFU, positive means faster (optimistic).
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from dataclasses import asdict, dataclass

from workbench.errors import WorkbenchError
from workbench.fidelity.reproduce import reproduce
from workbench.fidelity.schema import CATEGORIES, Corpus, CorpusError, PublishedRow, load_corpus
from workbench.hw import load_hardware
from workbench.hw.schema import Hardware
from workbench.platform._training_mfu import MODEL_FLOPS

#: How training rows are compared (issue 27: state the convention, compare like with like).
_TRAINING_CONVENTION = (
    "training rows: an MFU% row is compared as its source counts FLOPs: model FLOPs ("
    + MODEL_FLOPS
    + "), or, where the row says flop_count: hardware, hardware FLOPs with the recomputed "
    "forward (HFU as Megatron counts it); tokens/s/chip rows need no FLOP convention"
)
__all__ = ["SPLITS", "CorpusReport", "RowResult", "run_corpus"]

#: Values of ``--split``.
SPLITS = ("calibration", "heldout", "all")

#: Held-out goal of issue 10: median |error| per split and the worst category median.
GOAL_MEDIAN = 0.15
GOAL_CATEGORY = 0.30
#: Issue 19's goal on the leave-one-source-out figure (workbench/fidelity/crossval.py).
GOAL_MEDIAN_LOSO = 0.12
GOAL_CATEGORY_LOSO = 0.20


@dataclass(frozen=True, slots=True, kw_only=True)
class RowResult:
    """One row's outcome.

    Attributes:
        id, category, split, source, source_key, hardware, unit: From the row.
        measured: Published figure, in ``unit``.
        predicted: Workbench figure, in ``unit``.
        bound: The roofline floor expressed in the row's metric, in ``unit``.
        error: Signed relative error, predicted / measured - 1.
        abs_error: ``|error|``.
        optimism: How much faster the prediction is than the measurement, whatever the metric:
            measured / predicted - 1 for a time, predicted / measured - 1 for a rate or MFU
            (+ optimistic, - pessimistic).
        expected_bottleneck: Class the row names.
        predicted_bottleneck: Class the workbench predicts.
        beats_floor: True when the prediction is faster than the roofline floor (a bug).
        measured_beats_floor: True when the published figure itself is faster than the floor
            (the row's configuration is misread; such a row must not be in the corpus).
        approximation: How the row is reproduced.
        memory_fits: LLM rows: whether one chip's weights + the batch's KV cache at its final
            context fit in its memory (None for other rows).
    """

    id: str
    category: str
    split: str
    source: str
    source_key: str
    hardware: str
    unit: str
    measured: float
    predicted: float
    bound: float
    error: float
    abs_error: float
    optimism: float
    expected_bottleneck: str
    predicted_bottleneck: str
    beats_floor: bool
    measured_beats_floor: bool
    approximation: str
    memory_fits: bool | None = None

    @property
    def bottleneck_matches(self) -> bool:
        """Whether the predicted class is the expected one."""
        return self.expected_bottleneck == self.predicted_bottleneck


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CorpusReport:
    """Every row's result plus medians per split and per category."""

    rows: tuple[RowResult, ...]
    sources: tuple[str, ...]

    def median(self, split: str = "all", category: str | None = None) -> float | None:
        """Median |error| over a split (and category), or None when no row matches."""
        return _median(
            [
                r.abs_error
                for r in self.rows
                if split in ("all", r.split) and category in (None, r.category)
            ]
        )

    def category_medians(self, split: str = "heldout") -> dict[str, float]:
        """Median |error| per category present in ``split``."""
        out: dict[str, float] = {}
        for c in CATEGORIES:
            m = self.median(split, c)
            if m is not None:
                out[c] = m
        return out

    def signed_medians(self, split: str = "heldout") -> dict[str, float]:
        """Median :attr:`RowResult.optimism` per category in ``split`` (+ optimistic)."""
        out: dict[str, float] = {}
        for c in CATEGORIES:
            rows = [r for r in self.rows if split in ("all", r.split) and r.category == c]
            if rows:
                out[c] = statistics.median(r.optimism for r in rows)
        return out

    @property
    def floor_violations(self) -> tuple[str, ...]:
        """Ids of rows whose prediction beats the roofline floor."""
        return tuple(r.id for r in self.rows if r.beats_floor)

    @property
    def over_capacity(self) -> tuple[str, ...]:
        """Ids of LLM rows whose static batch does not fit in the chips' memory as reproduced."""
        return tuple(r.id for r in self.rows if r.memory_fits is False)

    @property
    def impossible_measurements(self) -> tuple[str, ...]:
        """Ids of rows whose published figure beats the floor (a misread configuration)."""
        return tuple(r.id for r in self.rows if r.measured_beats_floor)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready dictionary (rows, medians, sources)."""
        splits = {s: self.median(s) for s in SPLITS}
        return {
            "schema_version": 1,
            "rows": [asdict(r) for r in self.rows],
            "median_abs_error": splits,
            "category_median_abs_error": {
                s: self.category_medians(s) for s in ("calibration", "heldout")
            },
            "category_median_optimism": {
                s: self.signed_medians(s) for s in ("calibration", "heldout")
            },
            "sources": list(self.sources),
            "floor_violations": list(self.floor_violations),
            "impossible_measurements": list(self.impossible_measurements),
        }

    def to_json(self) -> str:
        """The report as JSON text."""
        return json.dumps(self.as_dict(), indent=1)

    def to_csv(self) -> str:
        """One CSV line per row (header first)."""
        buf = io.StringIO()
        fields = list(RowResult.__dataclass_fields__)
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow(asdict(r))
        return buf.getvalue()

    def table(self) -> str:
        """A plain-text table and the summary lines."""
        w = max([len(r.id) for r in self.rows] + [2])
        u = max([len(r.unit) for r in self.rows] + [4])
        head = (
            f"{'id':<{w}} {'hw':<9} {'split':<5} {'measured':>11} {'predicted':>11} "
            f"{'unit':<{u}} {'error':>7}  {'expected':<12} {'predicted':<14} floor"
        )
        lines = [head, "-" * len(head)]
        for r in self.rows:
            mark = "" if r.bottleneck_matches else " *"
            lines.append(
                f"{r.id:<{w}} {r.hardware:<9} {r.split[:5]:<5} {r.measured:>11.4g} "
                f"{r.predicted:>11.4g} {r.unit:<{u}} {r.error:>+7.1%}  "
                f"{r.expected_bottleneck:<12} {r.predicted_bottleneck + mark:<14} "
                f"{'BEATS' if r.beats_floor else 'ok'}"
            )
        lines.append("")
        lines.extend(self.summary_lines())
        return "\n".join(lines)

    def summary_lines(self) -> list[str]:
        """Medians per split and per category, row and source counts."""
        out = [f"{len(self.rows)} rows from {len(self.sources)} independent sources"]
        for s in ("heldout", "calibration", "all"):
            m = self.median(s)
            if m is not None:
                n = sum(1 for r in self.rows if s in ("all", r.split))
                out.append(f"median |error| {s:<11} {m:6.1%}  ({n} rows)")
        for s in ("heldout", "calibration"):
            cats = self.category_medians(s)
            signed = self.signed_medians(s)
            if cats:
                parts = [f"{c} {v:.1%} ({signed[c]:+.0%})" for c, v in cats.items()]
                head = f"{s} by category, median |error| (bias, + optimistic): "
                out.append(head + ", ".join(parts))
        held = self.category_medians("heldout")
        if held:
            med = self.median("heldout") or 0.0
            worst = max(held.values())
            ok = med <= GOAL_MEDIAN and worst <= GOAL_CATEGORY
            out.append(
                f"held-out goal (median <= {GOAL_MEDIAN:.0%}, every category <= "
                f"{GOAL_CATEGORY:.0%}): {'met' if ok else 'NOT met'} "
                f"(median {med:.1%}, worst category {worst:.1%})"
            )
        if any(r.category == "training" for r in self.rows):
            out.append(_TRAINING_CONVENTION)
        miss = sum(1 for r in self.rows if not r.bottleneck_matches)
        out.append(f"bottleneck class differs from the expected one in {miss} row(s) (marked *)")
        out.append(f"predictions faster than their roofline floor: {len(self.floor_violations)}")
        if self.over_capacity:
            out.append(
                "weights + KV cache over one chip's memory (the runtime held fewer sequences, "
                f"paged or evicted; not modelled): {', '.join(self.over_capacity)}"
            )
        if self.impossible_measurements:
            ids = ", ".join(self.impossible_measurements)
            out.append(f"published figures faster than their floor (misread rows): {ids}")
        return out


def _result(row: PublishedRow, hw: Hardware) -> RowResult:
    rep = reproduce(row, hw)
    scale = 1.0 / (row.measured_si / row.measured)  # SI -> the row's unit
    predicted = rep.predicted * scale
    bound = rep.bound * scale
    if not (predicted > 0 and predicted != float("inf")):
        raise WorkbenchError(f"row {row.id!r}: prediction is not a positive finite number")
    error = predicted / row.measured - 1.0
    optimism = row.measured / predicted - 1.0 if row.metric == "time" else error
    beats = rep.time_s < rep.floor_s * (1.0 - 1e-9)
    if row.metric == "ratio":  # NOTE: a ratio has no floor of its own; each run has one
        measured_beats = False
    elif row.metric == "time":
        measured_beats = row.measured < bound * (1.0 - 1e-9)
    else:
        measured_beats = row.measured > bound * (1.0 + 1e-9)
    return RowResult(
        id=row.id,
        category=row.category,
        split=row.split,
        source=row.source,
        source_key=row.source_key,
        hardware=row.hardware,
        unit=row.unit,
        measured=row.measured,
        predicted=predicted,
        bound=bound,
        error=error,
        abs_error=abs(error),
        optimism=optimism,
        expected_bottleneck=row.expected_bottleneck,
        predicted_bottleneck=rep.bottleneck,
        beats_floor=beats,
        measured_beats_floor=measured_beats,
        approximation=row.approximation,
        memory_fits=rep.memory_fits,
    )


def run_corpus(corpus: Corpus | None = None, split: str = "all") -> CorpusReport:
    """Reproduce every row of ``corpus`` (default: the shipped one) in ``split``.

    Args:
        corpus: A loaded corpus, or None for :func:`load_corpus`'s default.
        split: ``calibration``, ``heldout`` or ``all``.

    Returns:
        The :class:`CorpusReport`.

    Raises:
        WorkbenchError: Unknown split, unknown hardware profile, or a row that cannot be mapped.
    """
    if split not in SPLITS:
        raise WorkbenchError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    corpus = corpus or load_corpus()
    profiles: dict[str, Hardware] = {}
    results = []
    for row in corpus.rows:
        if split not in ("all", row.split):
            continue
        if row.hardware not in profiles:
            try:
                profiles[row.hardware] = load_hardware(row.hardware)
            except WorkbenchError as exc:
                raise CorpusError(f"row {row.id!r}: hardware: {exc}") from None
        try:
            results.append(_result(row, profiles[row.hardware]))
        except WorkbenchError as exc:
            raise CorpusError(f"row {row.id!r}: {exc}") from None
    sources = tuple(sorted({r.source_key for r in results}))
    return CorpusReport(rows=tuple(results), sources=sources)
