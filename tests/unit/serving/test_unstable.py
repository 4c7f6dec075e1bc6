"""Issue 32: a load the replica cannot keep up with is unstable, and no reader quotes it as steady.

The case: Llama-2-7B on one H100 SXM replaying the production-like trace at 9 requests/s, where
about 8 are served: the queue grows for the whole replay, so its mean and p99 depend on how many
requests are replayed; at 5 requests/s (kept up with) they barely move.
"""

from __future__ import annotations

import json

import pytest

from workbench.exercises import lesson10
from workbench.report.sla_charts import latency_throughput_chart
from workbench.serving import LATENCY_FIELDS, UNSTABLE_NOTE, ServingError


@pytest.fixture(scope="module")
def replays():
    return {n: lesson10.sweep("llama2-7b", "h100-sxm", (5.0, 9.0), n=n) for n in (1500, 3000)}


def test_an_overloaded_level_is_unstable_and_its_mean_grows_with_the_replay(replays):
    short, long = replays[1500], replays[3000]
    assert [p.stable for p in short] == [True, False]
    assert [p.stable for p in long] == [True, False]
    # the unstable level's figures are the replay's length, not a steady state: they grow
    assert long[1].mean_e2e_s > 1.3 * short[1].mean_e2e_s
    assert long[1].p99_e2e_s > 1.2 * short[1].p99_e2e_s
    # the stable level's mean is the same whatever the replay length (within 5%)
    assert long[0].mean_e2e_s == pytest.approx(short[0].mean_e2e_s, rel=0.05)


def test_steady_gives_no_figure_for_an_unstable_level(replays):
    stable, unstable = replays[1500]
    for field in LATENCY_FIELDS:
        assert unstable.steady(field) is None
        assert stable.steady(field) == getattr(stable, field)
    assert stable.to_dict()["stable"] is True
    assert unstable.to_dict()["stable"] is False
    with pytest.raises(ServingError, match="not a latency field"):
        stable.steady("offered_rate_per_s")


def test_the_chart_draws_no_percentile_line_through_an_unstable_level(replays):
    spec = latency_throughput_chart(replays[1500], 15.0).to_dict()
    datasets = spec["datasets"]
    layers = spec["layer"]
    line = next(layer for layer in layers if layer["mark"]["type"] == "line")
    rows = datasets[line["data"]["name"]]
    assert {r["offered"] for r in rows} == {5.0}
    marks = [layer for layer in layers if layer["mark"].get("shape") == "cross"]
    assert len(marks) == 1
    crosses = datasets[marks[0]["data"]["name"]]
    assert {r["offered"] for r in crosses} == {9.0}
    assert all(r["note"] == UNSTABLE_NOTE for r in crosses)
    assert "unstable" in json.dumps(spec)


def test_a_single_simulation_says_whether_it_was_stable():
    """The serving API below the sweep: ``simulate``'s result carries the same flag."""
    from workbench.exercises._shared import hardware
    from workbench.serving import load_builtin_trace, simulate

    work = load_builtin_trace("production-chat").head(1500)
    table = lesson10.step_table("llama2-7b", "h100-sxm")
    variance = hardware("h100-sxm").runtime_variance
    calm, over = (
        simulate(work.scaled_to_rate(r), table, max_batch=32, variance=variance) for r in (5, 9)
    )
    assert calm.stable
    assert not over.stable
