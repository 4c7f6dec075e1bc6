import numpy as np
import pytest

from workbench.serving import (
    AnalyticStepTime,
    LogNormalLengths,
    ServingError,
    StepTimeModel,
    TableStepTime,
    Workload,
    gamma_arrivals,
    poisson_arrivals,
)

TABLE = TableStepTime(
    batches=(1, 8),
    prompt_tokens=(128, 1024),
    prefill_s=((0.01, 0.05), (0.05, 0.4)),
    contexts=(0, 4096),
    decode_s=((0.004, 0.005), (0.005, 0.012)),
)


def test_table_hits_its_grid_points():
    assert TABLE.prefill_time(8, 1024) == pytest.approx(0.4)
    assert TABLE.decode_time(1, 0) == pytest.approx(0.004)
    assert TABLE.decode_time(8, 4096) == pytest.approx(0.012)


def test_table_interpolates_bilinearly_and_extrapolates_up_only():
    assert TABLE.decode_time(1, 2048) == pytest.approx(0.0045)
    assert TABLE.decode_time(8, 8192) == pytest.approx(0.019)  # linear above the grid
    assert TABLE.prefill_time(1, 16) == pytest.approx(0.01)  # flat below the grid
    assert TABLE.decode_time(16, 0) == pytest.approx(0.005 + 8 * 0.001 / 7)


def test_table_takes_arrays():
    out = TABLE.decode_time(1, np.array([0, 2048, 4096]))
    assert out == pytest.approx([0.004, 0.0045, 0.005])


def test_table_from_functions_matches_the_source():
    model = AnalyticStepTime()
    table = TableStepTime.from_functions(
        model.prefill_time,
        model.decode_time,
        batches=(1, 4, 16),
        prompt_tokens=(64, 512, 4096),
        contexts=(0, 1024, 8192),
    )
    assert isinstance(table, StepTimeModel)
    # the analytic model is bilinear in (batch, tokens), so the table reproduces it exactly
    assert table.decode_time(10, 3000) == pytest.approx(model.decode_time(10, 3000))
    assert table.prefill_time(2, 300) == pytest.approx(model.prefill_time(2, 300))
    assert table.decode_time(64, 9000) == pytest.approx(model.decode_time(64, 9000))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batches": (8, 1)},
        {"decode_s": ((0.004, -0.005), (0.005, 0.012))},
        {"decode_s": ((0.004,), (0.005,))},
    ],
)
def test_bad_table_is_an_error(kwargs):
    fields = {
        "batches": TABLE.batches,
        "prompt_tokens": TABLE.prompt_tokens,
        "prefill_s": TABLE.prefill_s,
        "contexts": TABLE.contexts,
        "decode_s": TABLE.decode_s,
    }
    with pytest.raises(ServingError, match="TableStepTime"):
        TableStepTime(**(fields | kwargs))


def test_lognormal_lengths_hit_median_and_p99():
    d = LogNormalLengths(median=600, p99=6000, maximum=100_000)
    x = d.sample(np.random.default_rng(0), 200_000)
    assert np.median(x) == pytest.approx(600, rel=0.02)
    assert np.percentile(x, 99) == pytest.approx(6000, rel=0.05)
    capped = LogNormalLengths(median=600, p99=6000, maximum=8192).sample(
        np.random.default_rng(0), 10_000
    )
    assert capped.max() == 8192


def test_poisson_rate_and_gamma_burstiness():
    w = poisson_arrivals(50.0, 20_000, seed=0)
    assert w.offered_rate_per_s == pytest.approx(50.0, rel=0.03)
    gaps = np.diff(gamma_arrivals(50.0, 20_000, 2.0, seed=0).arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.1)
    assert np.diff(gamma_arrivals(5.0, 10, 0.0).arrival_s) == pytest.approx([0.2] * 9)


def test_scaled_to_rate_keeps_lengths():
    w = poisson_arrivals(5.0, 500, LogNormalLengths(median=100, p99=900), 64, seed=0)
    fast = w.scaled_to_rate(50.0)
    assert fast.offered_rate_per_s == pytest.approx(50.0)
    assert np.array_equal(fast.prompt_tokens, w.prompt_tokens)


@pytest.mark.parametrize(
    ("cols", "match"),
    [
        ({"arrival_s": [1.0, 0.5]}, "sorted"),
        ({"prompt_tokens": [0, 5]}, ">= 1"),
        ({"output_tokens": [1]}, "lengths differ"),
        ({"arrival_s": [float("nan"), 1.0]}, "finite"),
    ],
)
def test_bad_workload_is_an_error(cols, match):
    base = {"arrival_s": [0.0, 1.0], "prompt_tokens": [5, 5], "output_tokens": [2, 2]}
    with pytest.raises(ServingError, match=match):
        Workload(**(base | cols))


def test_workload_arrays_are_read_only():
    w = poisson_arrivals(5.0, 10, seed=0)
    with pytest.raises(ValueError, match="read-only"):
        w.arrival_s[0] = 3.0
