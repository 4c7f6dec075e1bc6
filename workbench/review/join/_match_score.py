"""Does a trace run the model of a mapping sheet at all? A summary match score, 0..1.

An order-preserving alignment (:mod:`workbench.review.join.matching`) always finds *some* pairs: an
AlexNet trace has GEMMs and convolutions that stand in for Llama-2-7B's GEMM rows, so "79 kernels
matched" says nothing. The score asks two questions of the aligned iteration, both weighted by
time (kernel counts of an eager trace and a fused sheet differ; where the time goes does not):

- ``matched_share``: the share of measured kernel time the alignment claims, a kernel matched to
  its kind's own category counting fully and a stand-in (a conv kernel on a GEMM row) half;
- ``profile_similarity``: how alike the two time profiles are over the kernel families (GEMM,
  convolution, attention, row ops, elementwise, other, collective): ``sum_f min(p_f, q_f)`` with
  ``p`` the measured time shares and ``q`` the sheet's expected time shares (1 - total variation
  distance; 1 when the profiles agree, 0 when they share no family).

``score = min(matched_share, profile_similarity)``; :func:`require_match` refuses a score below
:data:`MIN_MATCH_SCORE` with :class:`MatchRefused`, one line with the score and the reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.errors import WorkbenchError

__all__ = ["MIN_MATCH_SCORE", "MatchRefused", "MatchScore", "match_score", "require_match"]

#: Lowest summary score at which a trace is taken to run the sheet's model.
MIN_MATCH_SCORE = 0.5
#: Sheet kernel kind -> family.
_KIND_FAMILY = {
    "gemm": "gemm",
    "conv": "conv",
    "attention": "attention",
    "row": "row",
    "elementwise": "elementwise",
    "layout": "elementwise",
    "gather": "other",
    "collective": "collective",
}
#: Measured category -> family.
_CATEGORY_FAMILY = {
    "gemm": "gemm",
    "conv": "conv",
    "attention": "attention",
    "norm": "row",
    "reduction": "row",
    "elementwise": "elementwise",
    "copy": "other",
    "other": "other",
    "collective": "collective",
}


class MatchRefused(WorkbenchError):
    """A trace does not run the mapping sheet's model: one line with the score and the reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchScore:
    """How well a trace's aligned iteration matches a sheet (see the module doc).

    Attributes:
        score: ``min(matched_share, profile_similarity)``, 0..1.
        matched_share: Share of measured kernel time matched (stand-ins count half), 0..1.
        profile_similarity: Overlap of the time profiles over kernel families, 0..1.
        measured_profile: ``(family, share of measured kernel time)``, largest first.
        sheet_profile: ``(family, share of the sheet's expected time)``, largest first.
    """

    score: float
    matched_share: float
    profile_similarity: float
    measured_profile: tuple[tuple[str, float], ...]
    sheet_profile: tuple[tuple[str, float], ...]

    def reason(self) -> str:
        """The weaker of the two questions, in words."""
        top = ", ".join(f"{f} {s:.0%}" for f, s in self.measured_profile[:3]) or "nothing"
        sheet = ", ".join(f"{f} {s:.0%}" for f, s in self.sheet_profile[:3]) or "nothing"
        if self.profile_similarity <= self.matched_share:
            return (
                f"the trace's kernel time goes to {top}, the sheet's to {sheet} (profiles "
                f"overlap {self.profile_similarity:.0%})"
            )
        return (
            f"only {self.matched_share:.0%} of the measured kernel time matches a sheet row of "
            f"its own kind (the trace: {top})"
        )


def _profile(times: Mapping[str, float]) -> dict[str, float]:
    total = sum(times.values())
    return {f: t / total for f, t in times.items() if t > 0} if total > 0 else {}


def match_score(
    kinds: Sequence[str],
    expected_s: Sequence[float],
    categories: Sequence[str],
    measured_s: Sequence[float],
    pairs: Sequence[tuple[int, int, bool]],
) -> MatchScore:
    """Score an alignment (see the module doc).

    Args:
        kinds: Sheet kernel kinds, in sheet order.
        expected_s: The sheet's expected time per kernel, s.
        categories: Measured kernel categories (the aligned compute kernels), in order.
        measured_s: Their measured times, s.
        pairs: ``(sheet index, measured index, own category?)`` of every match.

    Returns:
        The score and its parts.

    >>> s = match_score(["gemm", "row"], [2.0, 1.0], ["conv", "norm"], [9.0, 1.0],
    ...                 [(0, 0, False), (1, 1, True)])
    >>> round(s.matched_share, 2), round(s.profile_similarity, 2), round(s.score, 2)
    (0.55, 0.1, 0.1)
    """
    measured: dict[str, float] = defaultdict(float)
    for c, t in zip(categories, measured_s, strict=True):
        measured[_CATEGORY_FAMILY.get(c, "other")] += max(t, 0.0)
    sheet: dict[str, float] = defaultdict(float)
    for k, t in zip(kinds, expected_s, strict=True):
        sheet[_KIND_FAMILY.get(k, "other")] += max(t, 0.0)
    p, q = _profile(measured), _profile(sheet)
    similarity = sum(min(p.get(f, 0.0), q.get(f, 0.0)) for f in set(p) | set(q))
    total = sum(max(t, 0.0) for t in measured_s)
    claimed = sum(max(measured_s[j], 0.0) * (1.0 if own else 0.5) for _, j, own in pairs)
    share = claimed / total if total > 0 else 0.0
    return MatchScore(
        score=min(share, similarity),
        matched_share=share,
        profile_similarity=similarity,
        measured_profile=tuple(sorted(p.items(), key=lambda x: -x[1])),
        sheet_profile=tuple(sorted(q.items(), key=lambda x: -x[1])),
    )


def require_match(
    score: MatchScore, source: str, model: str, threshold: float = MIN_MATCH_SCORE
) -> None:
    """Refuse a trace whose match score is below ``threshold``.

    Raises:
        MatchRefused: ``<source>: does not run <model>: match score 0.12 < 0.50 (<reason>)``.
    """
    if score.score < threshold:
        raise MatchRefused(
            f"{source}: does not look like a run of {model}: match score {score.score:.2f} < "
            f"{threshold:.2f} ({score.reason()}); pass the model the trace ran, or no model"
        )
