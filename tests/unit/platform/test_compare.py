import pytest

from workbench.hw import load_hardware
from workbench.platform.compare import compare_platforms, platform_row, risk_score, shortlist
from workbench.platform.multichip import ParallelPlan


@pytest.fixture(scope="module")
def rows():
    hws = [load_hardware(n) for n in ("h100-sxm", "mi300x", "l4")]
    return compare_platforms(["gpt2"], hws, sla_s=5.0, n_requests=300, max_batch=8)


def test_risk_formula_from_the_profile():
    hw = load_hardware("mi300x")
    expected = (1 - hw.software.maturity) + 0.02 * len(hw.assumptions)
    assert risk_score(hw) == pytest.approx(expected)
    worse = hw.model_copy(
        update={
            "software": hw.software.model_copy(
                update={"fused_attention": False, "graph_capture": False}
            )
        }
    )
    assert risk_score(worse) == pytest.approx(expected + 0.25)


def test_matrix_rows(rows):
    assert [r.hardware for r in rows] == ["h100-sxm", "mi300x", "l4"]
    for r in rows:
        assert r.fits
        assert r.step_s > 0
        assert 0 < r.mfu < 1
        assert r.perf_per_watt == pytest.approx(1 / r.energy_per_item_j)
        if r.throughput_at_sla:
            assert r.p99_at_sla_s <= 5.0
        assert r.unit == "token"


def test_shortlist_rule(rows):
    best = shortlist(rows)
    ok = [r for r in rows if r.fits and r.throughput_at_sla > 0]
    assert len(best) == len(ok)
    scores = [r.score for r in best]
    assert scores == sorted(scores, reverse=True)
    assert best[0].score == pytest.approx(best[0].throughput_at_sla * (1 - best[0].risk))


def test_row_that_does_not_fit_is_left_out():
    row = platform_row("llama2-70b", load_hardware("h100-sxm"), n_requests=100)
    assert not row.fits
    assert row.throughput_at_sla == 0
    assert shortlist([row]) == ()


def test_data_parallel_scales_throughput_at_sla():
    hw = load_hardware("h100-sxm")
    one = platform_row("resnet50", hw, sla_s=0.05, n_requests=500, max_batch=8)
    two = platform_row(
        "resnet50", hw, plan=ParallelPlan(data_parallel=2), sla_s=0.05, n_requests=500, max_batch=8
    )
    assert one.unit == "image"
    assert two.throughput_at_sla == pytest.approx(2 * one.throughput_at_sla)
    assert two.score == pytest.approx(one.score)
