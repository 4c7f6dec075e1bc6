"""A decision's reasons read like a reviewer's: metric names, signed %, points (issue 18)."""

from workbench.review.decision.closure import GuardrailCheck, decide


def _check(metric, regression, status, relative=True, flag=0.01, rollback=0.05, source="s"):
    return GuardrailCheck(metric=metric, baseline=1.0, candidate=1.0 + regression,
                          regression=regression, flag_at=flag, rollback_at=rollback,
                          relative=relative, status=status, source=source)  # fmt: skip


def test_rollback_reason_names_the_metric_and_its_threshold_in_percent():
    decision, reasons = decide((_check("time_s", 2.177, "rollback"),))
    assert decision == "roll back"
    assert reasons == ("step time regressed +217.7% (roll back beyond +5.0%) [worst slice: s]",)


def test_a_fraction_metric_reads_in_points():
    check = _check("stall_fraction", 0.898, "rollback", relative=False, flag=0.02, rollback=0.1)
    _, reasons = decide((check,))
    assert reasons[0].startswith("memory-stall fraction regressed +89.8 points")
    assert "(roll back beyond +10.0 points)" in reasons[0]


def test_flag_reason_and_ship_list_use_labels():
    decision, reasons = decide((_check("p99_s", 0.03, "flag", flag=0.02, rollback=0.1),))
    assert decision == "ship behind a flag"
    assert "p99 latency regressed +3.0% (flag beyond +2.0%, roll back beyond +10.0%)" in reasons[0]
    decision, reasons = decide((_check("mfu", 0.0, "ok"),))
    assert (decision, reasons) == ("ship", ("every guardrail holds (MFU)",))
