"""The steps behind a measured pair's step-time comparison: window rule, steady steps, warnings.

A step-time shift read from two traces is only as good as the steps it pairs. Triage (text and
JSON) and the review pack of two records read from traces state, from the records themselves:

- the window rule each trace's steps were drawn by (the reader's own sentence,
  :attr:`workbench.evidence.MeasuredRun.window_rule`: a step's window ends where its own GPU work
  ends; the last step is left out when steps overlap on the GPU and its window outlasts every
  other), said once when both traces share it;
- the steady steps each side has (the warm-up step left out) and what fewer than
  :data:`~workbench.evidence.compare.PAIRED_MIN` do to the interval;
- the reader's warnings about each trace (a last step left out, activities outside every step),
  once when both traces share them.

``workbench trace`` prints the same rule and warnings for one trace; both read them from the
reader, so the sentence exists once.
"""

from __future__ import annotations

from typing import Any

from workbench.evidence.compare import PAIRED_MIN
from workbench.review.records.store import RunRecord

__all__ = ["few_steps_warning", "windows_doc", "windows_lines"]


def few_steps_warning(baseline: int, candidate: int) -> str | None:
    """What too few steady steps do to the step-time interval; None with enough on both sides.

    Args:
        baseline: The baseline's steady steps.
        candidate: The candidate's steady steps.

    >>> few_steps_warning(3, 5) is None
    True
    >>> few_steps_warning(2, 5)[:36]
    'fewer than 3 steady steps on a side '
    """
    n = min(baseline, candidate)
    counts = f"(baseline {baseline}, candidate {candidate})"
    if n >= PAIRED_MIN:
        return None
    if n >= 2:
        return (
            f"fewer than {PAIRED_MIN} steady steps on a side {counts}: not paired per step, so "
            "the interval is the unpaired Hodges-Lehmann one (wider; with 2 steps a side it "
            "spans every difference)"
        )
    return (
        f"fewer than 2 steady steps on a side {counts}: no interval from the steps, so the "
        "step-time change is read with no noise estimate (profile at least 7 steps: 1 warm-up "
        "and 6 steady)"
    )


def windows_doc(base: RunRecord, cand: RunRecord) -> dict[str, Any] | None:
    """The steps behind the pair's step-time comparison, as JSON; None unless read from traces.

    Returns:
        ``{"baseline": side, "candidate": side, "paired": bool, "warning": str | None}`` with
        ``side = {"steady_steps": n, "window_rule": str, "warnings": [str]}``: ``paired``
        whether step i is paired with step i, ``warning`` :func:`few_steps_warning`.
    """
    sides: dict[str, dict[str, Any]] = {}
    for name, r in (("baseline", base), ("candidate", cand)):
        m = r.measurement
        sides[name] = {
            "steady_steps": len(r.model.step_times_s),
            "window_rule": m.window_rule if m is not None else "",
            "warnings": list(m.warnings) if m is not None else [],
        }
    if not any(s["window_rule"] for s in sides.values()):
        return None
    nb, nc = sides["baseline"]["steady_steps"], sides["candidate"]["steady_steps"]
    return {
        **sides,
        "paired": min(nb, nc) >= PAIRED_MIN,
        "warning": few_steps_warning(nb, nc),
    }


def windows_lines(doc: dict[str, Any]) -> list[str]:
    """:func:`windows_doc` as lines: steady steps and rule, then each warning (shared ones once).

    Lines carry text read from trace files: the caller escapes them for its medium.
    """
    b, c = doc["baseline"], doc["candidate"]
    rules = dict.fromkeys(r for r in (b["window_rule"], c["window_rule"]) if r)
    rule = (
        next(iter(rules))
        if len(rules) == 1
        else f"baseline: {b['window_rule'] or '-'}; candidate: {c['window_rule'] or '-'}"
    )
    lines = [
        f"steady steps {b['steady_steps']} -> {c['steady_steps']} (the warm-up step left out); "
        f"window: {rule}"
    ]
    for w in dict.fromkeys([*b["warnings"], *c["warnings"]]):
        side = (
            "both"
            if w in b["warnings"] and w in c["warnings"]
            else "baseline"
            if w in b["warnings"]
            else "candidate"
        )
        lines.append(f"warning ({side}): {w}")
    if doc["warning"]:
        lines.append(f"warning: {doc['warning']}")
    return lines
