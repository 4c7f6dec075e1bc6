import json

import pytest

from workbench.serving import (
    AnalyticStepTime,
    LoadPoint,
    ServingError,
    find_knee,
    load_builtin_trace,
    poisson_arrivals,
    sweep_image_load,
    sweep_load,
)


@pytest.fixture(scope="module")
def points():
    make = lambda r: poisson_arrivals(r, 400, seed=0)  # noqa: E731
    return sweep_load([40, 1, 10, 20], make, AnalyticStepTime(), max_batch=32)


def test_sweep_is_sorted_and_tails_are_ordered(points):
    rates = [p.offered_rate_per_s for p in points]
    assert rates == sorted(rates) == [1, 10, 20, 40]
    for p in points:
        assert p.p50_e2e_s <= p.p95_e2e_s <= p.p99_e2e_s
        assert p.p50_ttft_s <= p.p95_ttft_s <= p.p99_ttft_s
        assert p.p50_tpot_s <= p.p95_tpot_s <= p.p99_tpot_s
    assert points[0].achieved_rate_per_s == pytest.approx(1.0, rel=0.15)
    assert points[-1].p99_e2e_s > points[0].p99_e2e_s


def test_load_point_is_json_ready(points):
    row = json.loads(json.dumps(points[0].to_dict()))
    assert row["offered_rate_per_s"] == 1.0
    assert set(row) >= {"achieved_rate_per_s", "p99_e2e_s", "p99_ttft_s", "p99_tpot_s"}


def test_find_knee(points):
    sla = (points[1].p99_e2e_s + points[2].p99_e2e_s) / 2
    knee = find_knee(points, sla)
    assert knee.last_ok is points[1]
    assert knee.first_break is points[2]
    sla_only = find_knee(points, 1e9, tolerance=None)
    assert (sla_only.first_break, sla_only.last_ok) == (None, points[-1])
    assert find_knee(points, 0.0).last_ok is None
    ttft = find_knee(points, points[0].p99_ttft_s * 1.0001, metric="p99_ttft_s")
    assert ttft.last_ok is points[0]


def test_a_saturated_level_is_not_ok_even_when_its_latency_meets_the_sla(points):
    # NOTE: 400 requests end before the queue at 40/s (capacity ~23/s) breaks a loose SLA.
    top = points[-1]
    assert top.saturated()
    assert top.sustained_rate_per_s < 0.95 * top.window_arrival_rate_per_s
    assert not any(p.saturated() for p in points[:-1])
    knee = find_knee(points, 1e9)
    assert (knee.last_ok, knee.first_break) == (points[-2], top)
    assert [knee.status(p) for p in points] == ["ok", "ok", "ok", "saturated"]
    assert find_knee(points, 0.0).status(points[0]) == "sla"
    with pytest.raises(ServingError, match="tolerance"):
        find_knee(points, 1.0, tolerance=1.5)


def test_steady_rates_match_arrivals_when_the_replica_keeps_up(points):
    for p in points[:-1]:
        assert p.sustained_rate_per_s == pytest.approx(p.window_arrival_rate_per_s, rel=0.05)
        assert p.window_arrival_rate_per_s == pytest.approx(p.offered_rate_per_s, rel=0.15)


def test_find_knee_rejects_unknown_metric(points):
    with pytest.raises(ServingError, match="metric"):
        find_knee(points, 1.0, metric="offered_rate_per_s")


def test_trace_replay_is_rescaled():
    trace = load_builtin_trace("synthetic-fixed").head(300)
    pts = sweep_load([2.0, 8.0], trace, AnalyticStepTime(), max_batch=16)
    assert [round(p.achieved_rate_per_s, 1) for p in pts] == pytest.approx([2.0, 8.0], rel=0.05)


def test_image_sweep():
    make = lambda r: poisson_arrivals(r, 2000, 1, 1, seed=1)  # noqa: E731
    pts = sweep_image_load([100, 1000, 5000], make, lambda b: 2e-3 + 1e-4 * b, max_batch=32)
    assert all(isinstance(p, LoadPoint) and p.p99_ttft_s is None for p in pts)
    assert pts[0].achieved_rate_per_s < pts[1].achieved_rate_per_s
    assert pts[-1].p99_e2e_s > pts[0].p99_e2e_s
    with pytest.raises(ServingError, match="p99_ttft_s"):
        find_knee(pts, 1.0, metric="p99_ttft_s")


def test_bad_rates():
    with pytest.raises(ServingError, match="rates"):
        sweep_load([], lambda r: poisson_arrivals(r, 5), AnalyticStepTime())
    with pytest.raises(ServingError, match="rates"):
        sweep_load([-1.0], lambda r: poisson_arrivals(1, 5), AnalyticStepTime())


def test_tail_knee_is_where_p99_leaves_its_low_load_level(points):
    from workbench.serving import TAIL_KNEE_FACTOR, tail_knee

    past = tail_knee(points)
    low = points[0].p99_e2e_s
    if past is not None:
        assert past.p99_e2e_s > TAIL_KNEE_FACTOR * low
        before = [p for p in points if p.offered_rate_per_s < past.offered_rate_per_s]
        assert all(p.p99_e2e_s <= TAIL_KNEE_FACTOR * low for p in before)
    assert tail_knee(points[:1]) is None  # one load has no knee
    assert tail_knee(points, factor=1e9) is None
    with pytest.raises(ServingError, match="factor"):
        tail_knee(points, factor=1.0)


def test_a_sweep_that_never_breaks_says_it_found_no_knee(points):
    from workbench.exercises.lesson10 import knee_claim

    text = knee_claim(points[:2], sla_s=1e9).text
    assert "never reached the knee" in text
    assert "lower bound" in text
    assert "knee is at" not in text
    broken = knee_claim(points, sla_s=points[1].p99_e2e_s * 1.0001).text
    assert "knee is at" in broken
