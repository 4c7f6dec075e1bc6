"""What a comparison may conclude: comparability, per-item normalisation, noise, missing evidence.

* **Identity.** Two runs of different models (7B vs 13B, another architecture) or different
  phases are not a regression pair, whatever ``--changed`` says: triage refuses them.
* **Workload changes** (batch, sequence, context) are compared per token and per request, never
  as a raw step-time regression: a batch-8 step is slower than a batch-1 step and still a win.
* **Noise.** Two runs read from traces carry their steady step times: they are compared as
  ``workbench trace --against`` compares the traces (:func:`workbench.evidence.compare_steps`:
  step i paired with step i when both have 3 steps or more, the paired-t 95 % interval and the
  sign test), and a time regression whose interval includes 0 is not a regression. Records
  without step times fall back to both runs' 95 % interval half-widths. Predicted runs have no
  noise.
* **Missing evidence** blocks a sign-off (``cannot sign off: missing X``), it never counts as a
  pass: no p99 latency for either side, no quality metric when the numeric format changed, no
  repeats for a measured run.
"""

from __future__ import annotations

from workbench.evidence.compare import Shift, compare_steps
from workbench.review.records.store import RunRecord

__all__ = [
    "identity_mismatch",
    "judged_noise",
    "missing_evidence",
    "precision_changed",
    "step_shift",
    "time_noise",
    "workload_changed",
]


def identity_mismatch(base: RunRecord, cand: RunRecord) -> tuple[str, ...]:
    """Differences that make two runs incomparable even when the workload is declared changed."""
    wb, wc = base.tags.workload, cand.tags.workload
    out = []
    if wb.model != wc.model:
        out.append(
            f"workload.model: {wb.model!r} != {wc.model!r} (a different model is not a "
            "regression of the same one)"
        )
    if wb.phase != wc.phase:
        out.append(f"workload.phase: {wb.phase!r} != {wc.phase!r} (compare like with like)")
    return tuple(out)


def workload_changed(base: RunRecord, cand: RunRecord) -> bool:
    """Whether batch, sequence or context differ (compare per token and per request)."""
    wb, wc = base.tags.workload, cand.tags.workload
    return (wb.batch, wb.seq, wb.context) != (wc.batch, wc.seq, wc.context)


def precision_changed(base: RunRecord, cand: RunRecord) -> bool:
    """Whether some kernel's numeric format actually changed (or the weights' format did).

    A kernel present in both runs computing in another format, or another weight-only format.
    A changed set of kernel names (flash attention on or off, fusion split) is a graph change,
    not a precision change; a format override that matches no kernel changes nothing.
    """
    if base.tags.compiler.weight_dtype != cand.tags.compiler.weight_dtype:
        return True
    before = {k.name: k.dtype for k in base.kernels}
    return any(k.name in before and before[k.name] != k.dtype for k in cand.kernels)


def step_shift(base: RunRecord, cand: RunRecord) -> Shift | None:
    """The measured step-time shift, candidate minus baseline, s (None without step times).

    Both records must list at least 2 steady step times (records read from traces); the
    comparison is :func:`workbench.evidence.compare_steps`, the one ``trace --against`` uses.
    """
    b, c = base.model.step_times_s, cand.model.step_times_s
    if len(b) < 2 or len(c) < 2:
        return None
    return compare_steps(b, c)


def time_noise(base: RunRecord, cand: RunRecord, shift: Shift | None = None) -> float:
    """Relative step-time noise over the baseline time (0 for predicted runs).

    With a measured step shift (``shift``, from :func:`step_shift`): the half-width of its 95 %
    interval, so a regression is beyond the noise exactly when that interval excludes 0.
    Without: both runs' 95 % interval half-widths, added.
    """
    if not base.model.time_s:
        return 0.0
    if shift is not None:
        half = max(shift.estimate_s - shift.low_s, shift.high_s - shift.estimate_s)
        return half / base.model.time_s
    total = 0.0
    for r in (base, cand):
        iv = r.model.time_interval_s
        if len(iv) == 2:
            total += (iv[1] - iv[0]) / 2
    return total / base.model.time_s


def judged_noise(base: RunRecord, cand: RunRecord, shift: Shift | None, noise: float) -> float:
    """The relative noise the decision and the headline read (``noise`` is what is printed).

    With a measured step shift, its interval decides: one that excludes 0 is a regression
    (no noise left to absorb it, whatever the interval's width), one that includes 0 is not
    (the noise covers the whole change). Without a shift: ``noise`` itself.
    """
    if shift is None or not base.model.time_s:
        return noise
    if shift.beyond_noise:
        return 0.0
    return max(noise, cand.model.time_s / base.model.time_s - 1.0)


def _has_p99(r: RunRecord) -> bool:
    return any(name == "p99_s" for name, _ in r.model.latency)


def missing_evidence(
    base: RunRecord,
    cand: RunRecord,
    *,
    simulated_p99: bool,
    needs: frozenset[str] | None = None,
) -> tuple[str, ...]:
    """The evidence a sign-off needs and these runs lack, one phrase each.

    Args:
        base: Baseline run.
        cand: Candidate run.
        simulated_p99: Whether triage simulated p99 latency for both sides.
        needs: The evidence the policy asks of this comparison (``p99``, ``quality``,
            ``repeats``; :func:`workbench.review.decision.policy.needs`); None asks all of it.

    Returns:
        Phrases such as ``"p99 latency ..."``; empty when nothing is missing.
    """
    want = needs if needs is not None else frozenset(("p99", "quality", "repeats"))
    out = []
    if "p99" in want and not simulated_p99 and not (_has_p99(base) and _has_p99(cand)):
        out.append("p99 latency (no serving simulation and no recorded p99 on both runs)")
    if (
        "quality" in want
        and precision_changed(base, cand)
        and (base.model.quality_error is None or cand.model.quality_error is None)
    ):
        out.append("a quality metric for the precision change (quality_error on both runs)")
    for side, r in (("baseline", base), ("candidate", cand)):
        m = r.measurement
        if "repeats" in want and m is not None and m.repeats < 2:
            out.append(f"repeats for the measured {side} run ({m.repeats} run: no noise estimate)")
    return tuple(out)
