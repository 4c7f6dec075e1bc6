"""Match a measured run's kernels to a mapping sheet's kernels, so each row shows both times.

The sheet lists one forward step's kernels in execution order, each with a ``kind`` (gemm, conv,
attention, row, elementwise, layout, gather, collective); the trace lists what the GPU ran, each
classified into a category (:mod:`workbench.evidence.categories`). Matching is an order-preserving
alignment of the two sequences (a weighted longest common subsequence)::

    score(sheet i, measured j) = 2 W if category is the kind's own (gemm -> gemm)
                                 1 W if it is an accepted stand-in (conv run as a gemm kernel)
                                 not allowed otherwise
                                 + up to 50 as measured/expected nears the run's overall ratio
                                 (W exceeds every possible sum of those, so kind decides first)
    best[i][j] = max(best[i-1][j], best[i][j-1], best[i-1][j-1] + score(i, j))

so kernels the sheet does not predict (an unfused activation, a backward pass) and sheet rows the
trace lacks (a fused-away kernel) stay unmatched, in place, rather than shifting every later match.

Each match carries a confidence in 0..1 and its reason: 0.6 for the kind's own category (0.3 for
a stand-in), +0.2 when both neighbours in the sheet matched their measured neighbours too (the
alignment is locked in), +0.2 when the measured time is within 4x of the expected time. The
alignment uses one iteration (by default the one whose wall time is the median); measured times
are the median over every iteration that ran the same kernel sequence. Memory copies are never
matched (the sheet has no host transfers); they, and every other unmatched measured kernel, are
listed with a reason. Nothing is dropped.

Example (a trace replaying GPT-2's sheet with library-style kernel names)::

    >>> import pathlib, tempfile, workbench as wb
    >>> from workbench.evidence import MeasuredKernel, read_trace, write_kineto_trace
    >>> mapping = wb.map_model(wb.build_graph("gpt2", seq=128), wb.load_hardware("h100-sxm"))
    >>> names = {"gemm": "sm90_xmma_gemm_bf16", "attention": "flash_fwd_kernel",
    ...          "row": "layer_norm_kernel", "elementwise": "elementwise_kernel",
    ...          "gather": "indexSelectLargeIndex"}
    >>> kernels = [MeasuredKernel(name=names[k.kernel.kind], category="other", rule="",
    ...                           start_s=i * 1e-4, duration_s=k.cost.total_s, iteration=0)
    ...            for i, k in enumerate(mapping.kernels)]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gpt2.json"
    >>> result = match_kernels(read_trace(write_kineto_trace(path, kernels)), mapping)
    >>> result.matched_fraction, result.sheet_rows[4].kind, result.matches[4].confidence
    (1.0, 'gemm', 1.0)
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.evidence import MeasuredKernel, MeasuredRun
from workbench.mapper import ModelMapping
from workbench.review.join._match_score import MatchScore, match_score

__all__ = [
    "KernelMatch",
    "KernelMatching",
    "SheetRow",
    "UnmatchedKernel",
    "match_kernels",
]

#: Sheet kernel kind -> (its own measured categories, accepted stand-ins).
COMPATIBLE: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "gemm": (frozenset({"gemm"}), frozenset({"conv"})),
    "conv": (frozenset({"conv"}), frozenset({"gemm"})),
    "attention": (frozenset({"attention"}), frozenset({"gemm"})),
    "row": (frozenset({"norm", "reduction"}), frozenset({"elementwise", "other"})),
    "elementwise": (frozenset({"elementwise"}), frozenset({"other", "reduction"})),
    "layout": (frozenset({"layout", "elementwise"}), frozenset({"copy", "other"})),
    "gather": (frozenset({"embedding", "other", "elementwise"}), frozenset()),
    "collective": (frozenset({"collective"}), frozenset()),
}
_NEAR = 4.0  # a measured time within this factor of the expected one supports the match
_MAX_CELLS = 20_000_000  # alignment table size limit (sheet rows x measured kernels)


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelMatch:
    """One sheet row matched to one measured kernel.

    Attributes:
        sheet_index: Position in ``mapping.kernels``.
        measured_index: Position in ``run.kernels`` (in the aligned iteration).
        confidence: 0..1 (see the module doc).
        reason: Why, in words.
        expected_s: The sheet's predicted time, s.
        measured_s: Median measured time over the iterations that ran the same sequence, s.
        repeats: How many iterations that median is over.
    """

    sheet_index: int
    measured_index: int
    confidence: float
    reason: str
    expected_s: float
    measured_s: float
    repeats: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UnmatchedKernel:
    """A measured kernel no sheet row claimed, and why."""

    measured_index: int
    name: str
    category: str
    duration_s: float
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SheetRow:
    """A sheet row with its expected and (when matched) measured time side by side, s."""

    index: int
    name: str
    kind: str
    layer_type: str
    expected_s: float
    measured_s: float | None
    measured_name: str | None
    confidence: float | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelMatching:
    """The result of :func:`match_kernels`.

    Attributes:
        iteration: The iteration aligned.
        device: The device whose kernels were aligned (None when the trace does not say).
        matches: Matched pairs, in sheet order.
        unmatched_measured: Every measured kernel of the aligned iteration and device not matched.
        unmatched_sheet: Sheet indexes with no measured kernel.
        sheet_rows: Every sheet row, expected and measured side by side.
        score: Whether the trace runs the sheet's model at all
            (:mod:`workbench.review.join._match_score`); None when not computed.
    """

    iteration: int | None
    device: int | None
    matches: tuple[KernelMatch, ...]
    unmatched_measured: tuple[UnmatchedKernel, ...]
    unmatched_sheet: tuple[int, ...]
    sheet_rows: tuple[SheetRow, ...]
    score: MatchScore | None = None

    def layer_type_totals(self) -> tuple[tuple[str, float, float], ...]:
        """``(layer type, expected s, measured s)`` over matched rows, then unmatched kernels.

        Unmatched sheet rows add to the expected column only; the last row, ``unmatched
        measured``, holds the measured time no sheet row claimed (aligned iteration), so the
        measured column adds up to everything the device ran.
        """
        totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for row in self.sheet_rows:
            totals[row.layer_type][0] += row.expected_s
            totals[row.layer_type][1] += row.measured_s or 0.0
        rest = sum(u.duration_s for u in self.unmatched_measured)
        return (
            *((name, e, m) for name, (e, m) in totals.items()),
            ("unmatched measured", 0.0, rest),
        )

    @property
    def matched_fraction(self) -> float:
        """Share of sheet rows with a measured kernel, 0..1."""
        return len(self.matches) / len(self.sheet_rows) if self.sheet_rows else 0.0


def match_kernels(
    run: MeasuredRun,
    mapping: ModelMapping,
    *,
    iteration: int | None = None,
    device: int | None = None,
) -> KernelMatching:
    """Align a measured run's kernels with a mapping sheet's (see the module doc).

    Args:
        run: The measured run.
        mapping: The mapping whose sheet rows get measured times.
        iteration: Which iteration to align; default the one with the median wall time.
        device: Which device's kernels; default the one that ran the most in that iteration.

    Returns:
        Matches, unmatched kernels on both sides, and every sheet row side by side.

    Raises:
        WorkbenchError: The chosen iteration or device has no kernels, or the problem is too big.
    """
    chosen = iteration if iteration is not None else _median_iteration(run)
    by_iteration = _kernels_by_iteration(run)
    if chosen not in by_iteration:
        raise WorkbenchError(f"{run.source}: iteration {chosen} has no measured kernels")
    indexes = by_iteration[chosen]
    dev = device if device is not None else _busiest_device(run, indexes)
    indexes = [i for i in indexes if run.kernels[i].device == dev]
    if not indexes:
        raise WorkbenchError(f"{run.source}: device {dev} ran nothing in iteration {chosen}")
    computes = [i for i in indexes if run.kernels[i].kind == "kernel"]
    sheet = mapping.kernels
    if len(sheet) * len(computes) > _MAX_CELLS:
        raise WorkbenchError(
            f"{run.source}: {len(sheet)} sheet rows x {len(computes)} measured kernels is too big "
            f"to align (limit {_MAX_CELLS} pairs); pass a smaller model or one iteration's trace"
        )
    medians = _repeat_medians(run, by_iteration, dev, indexes)
    pairs = _align(
        [k.kernel.kind for k in sheet],
        [run.kernels[i].category for i in computes],
        [k.cost.total_s for k in sheet],
        [medians[i][0] for i in computes],
    )
    matched = {computes[j] for _, j in pairs}
    matches = []
    for n, (i, j) in enumerate(pairs):
        locked = _neighbour_matched(pairs, n, -1) and _neighbour_matched(pairs, n, +1)
        measured_s, repeats = medians[computes[j]]
        matches.append(
            _match(i, computes[j], run.kernels[computes[j]], sheet[i].kernel.kind,
                   sheet[i].cost.total_s, measured_s, repeats, locked)
        )  # fmt: skip
    unmatched = tuple(_unmatched(i, run.kernels[i]) for i in indexes if i not in matched)
    score = match_score(
        [k.kernel.kind for k in sheet],
        [k.cost.total_s for k in sheet],
        [run.kernels[i].category for i in computes],
        [medians[i][0] for i in computes],
        [(i, j, _score(sheet[i].kernel.kind, run.kernels[computes[j]].category) == 2)
         for i, j in pairs],
    )  # fmt: skip
    return KernelMatching(
        iteration=chosen,
        device=dev,
        matches=tuple(matches),
        unmatched_measured=unmatched,
        unmatched_sheet=tuple(sorted(set(range(len(sheet))) - {i for i, _ in pairs})),
        sheet_rows=_rows(run, mapping, matches),
        score=score,
    )


def _kernels_by_iteration(run: MeasuredRun) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for i, k in enumerate(run.kernels):
        if k.iteration is not None:
            out[k.iteration].append(i)
    return out


def _median_iteration(run: MeasuredRun) -> int:
    """The iteration whose wall time is the (lower) median; ties go to the lower index."""
    ordered = sorted(run.iterations, key=lambda it: (it.wall_s, it.index))
    return ordered[(len(ordered) - 1) // 2].index


def _busiest_device(run: MeasuredRun, indexes: Sequence[int]) -> int | None:
    counts: dict[int | None, int] = defaultdict(int)
    for i in indexes:
        counts[run.kernels[i].device] += 1
    return max(counts, key=lambda d: (counts[d], -(d if d is not None else -1)))


def _score(kind: str, category: str) -> int:
    own, stand_in = COMPATIBLE.get(kind, (frozenset(), frozenset()))
    return 2 if category in own else 1 if category in stand_in else 0


def _align(
    kinds: Sequence[str],
    categories: Sequence[str],
    expected: Sequence[float],
    measured: Sequence[float],
) -> list[tuple[int, int]]:
    """Order-preserving pairs (sheet i, measured j) maximising the summed score.

    A pair scores ``weight`` per kind point (own 2, stand-in 1) plus up to 50 for time shape: how
    close ``measured / expected`` is to the run's overall ratio. ``weight`` exceeds the largest
    possible sum of time bonuses, so the kind score decides and time only breaks its ties: which
    of two same-kind rows (a large and a small GEMM) a lone measured kernel belongs to.
    """
    n, m = len(kinds), len(categories)
    weight = 51 * (min(n, m) + 1)
    top = 2 * weight + 50
    scale = (sum(measured) / sum(expected)) if sum(expected) > 0 and sum(measured) > 0 else 1.0
    expected_scaled = [e * scale for e in expected]

    def score(i: int, j: int) -> int:
        base = _score(kinds[i], categories[j])
        if not base:
            return 0
        e, t = expected_scaled[i], measured[j]
        closeness = min(e, t) / max(e, t) if e > 0 and t > 0 else 0.0
        return weight * base + round(50 * closeness)

    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, above = best[i], best[i - 1]
        own, stand_in = COMPATIBLE.get(kinds[i - 1], (frozenset(), frozenset()))
        for j in range(1, m + 1):
            v = above[j] if above[j] > row[j - 1] else row[j - 1]
            c = categories[j - 1]
            if (c in own or c in stand_in) and above[j - 1] + top > v:
                v = max(v, above[j - 1] + score(i - 1, j - 1))
            row[j] = v
    pairs = []
    i, j = n, m
    while i and j:
        s = score(i - 1, j - 1)
        if s and best[i][j] == best[i - 1][j - 1] + s:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _neighbour_matched(pairs: Sequence[tuple[int, int]], n: int, step: int) -> bool:
    k = n + step
    if not 0 <= k < len(pairs):
        return True  # NOTE: the sequence's ends count as locked
    return pairs[k][0] == pairs[n][0] + step and pairs[k][1] == pairs[n][1] + step


def _repeat_medians(
    run: MeasuredRun, by_iteration: dict[int, list[int]], dev: int | None, chosen: list[int]
) -> dict[int, tuple[float, int]]:
    """Per chosen kernel: median duration over iterations with the same name sequence, repeats."""
    names = [run.kernels[i].name for i in chosen]
    columns: list[list[float]] = [[] for _ in chosen]
    for idx in by_iteration.values():
        same = [i for i in idx if run.kernels[i].device == dev]
        if [run.kernels[i].name for i in same] == names:
            for col, i in zip(columns, same, strict=True):
                col.append(run.kernels[i].duration_s)
    return {
        i: (statistics.median(col), len(col)) if col else (run.kernels[i].duration_s, 1)
        for i, col in zip(chosen, columns, strict=True)
    }


def _match(
    sheet_index: int,
    measured_index: int,
    k: MeasuredKernel,
    kind: str,
    expected_s: float,
    measured_s: float,
    repeats: int,
    locked: bool,
) -> KernelMatch:
    own = _score(kind, k.category) == 2
    confidence = 0.6 if own else 0.3
    why = [f"{k.category} ({k.rule}) is {'the' if own else 'a stand-in for the'} {kind} kind"]
    if locked:
        confidence += 0.2
        why.append("neighbours aligned too")
    near = expected_s > 0 and 1 / _NEAR <= measured_s / expected_s <= _NEAR
    if near:
        confidence += 0.2
        why.append(f"time within {_NEAR:g}x of expected")
    elif expected_s > 0:
        why.append(f"time {measured_s / expected_s:.2g}x expected")
    return KernelMatch(
        sheet_index=sheet_index,
        measured_index=measured_index,
        confidence=round(confidence, 2),
        reason="; ".join(why),
        expected_s=expected_s,
        measured_s=measured_s,
        repeats=repeats,
    )


def _unmatched(index: int, k: MeasuredKernel) -> UnmatchedKernel:
    if k.kind != "kernel":
        reason = f"{k.kind}: the mapping sheet models no host/device transfers"
    else:
        reason = f"no sheet row of a kind that runs {k.category} kernels at this point in order"
    return UnmatchedKernel(
        measured_index=index,
        name=k.name,
        category=k.category,
        duration_s=k.duration_s,
        reason=reason,
    )


def _rows(
    run: MeasuredRun, mapping: ModelMapping, matches: Sequence[KernelMatch]
) -> tuple[SheetRow, ...]:
    by_sheet = {m.sheet_index: m for m in matches}
    rows = []
    for i, km in enumerate(mapping.kernels):
        m = by_sheet.get(i)
        rows.append(
            SheetRow(
                index=i,
                name=km.kernel.name,
                kind=km.kernel.kind,
                layer_type=km.kernel.layer_type,
                expected_s=km.cost.total_s,
                measured_s=m.measured_s if m else None,
                measured_name=run.kernels[m.measured_index].name if m else None,
                confidence=m.confidence if m else None,
                reason=m.reason if m else "no measured kernel of a compatible category in order",
            )
        )
    return tuple(rows)
