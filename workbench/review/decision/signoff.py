"""What a comparison may conclude: comparability, per-item normalisation, noise, missing evidence.

* **Identity.** Two runs of different models (7B vs 13B, another architecture) or different
  phases are not a regression pair, whatever ``--changed`` says: triage refuses them.
* **Workload changes** (batch, sequence, context) are compared per token and per request, never
  as a raw step-time regression: a batch-8 step is slower than a batch-1 step and still a win.
* **Noise.** Measured runs carry a 95 % interval of their step time; a time regression inside
  both intervals' half-widths is not a regression. Predicted runs have no noise.
* **Missing evidence** blocks a sign-off (``cannot sign off: missing X``), it never counts as a
  pass: no p99 latency for either side, no quality metric when the numeric format changed, no
  repeats for a measured run.
"""

from __future__ import annotations

from workbench.review.records.store import RunRecord

__all__ = [
    "identity_mismatch",
    "missing_evidence",
    "precision_changed",
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


def time_noise(base: RunRecord, cand: RunRecord) -> float:
    """Relative step-time noise: both runs' 95 % interval half-widths over the baseline time.

    Returns:
        0 for predicted runs (or runs without an interval).
    """
    total = 0.0
    for r in (base, cand):
        iv = r.model.time_interval_s
        if len(iv) == 2:
            total += (iv[1] - iv[0]) / 2
    return total / base.model.time_s if base.model.time_s else 0.0


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
