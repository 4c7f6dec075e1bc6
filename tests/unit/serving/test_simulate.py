import dataclasses

import numpy as np
import pytest

from workbench.hw.schema import RuntimeVariance
from workbench.serving import (
    ServingError,
    Workload,
    poisson_arrivals,
    simulate,
    simulate_batches,
)

NOISY = RuntimeVariance(launch_jitter_s=2e-4, slow_step_probability=0.02, slow_step_factor=3.0)


def _same(a, b):
    return np.array_equal(a.e2e_s, b.e2e_s) and np.array_equal(a.ttft_s, b.ttft_s)


@pytest.mark.parametrize("batching", ["continuous", "static"])
def test_deterministic_for_a_seed(model, mixed, batching):
    w = mixed(20.0, n=600)
    a = simulate(w, model, batching=batching, variance=NOISY, seed=7)
    b = simulate(w, model, batching=batching, variance=NOISY, seed=7)
    c = simulate(w, model, batching=batching, variance=NOISY, seed=8)
    assert _same(a, b)
    assert not _same(a, c)


def test_workload_seed_changes_arrivals():
    a = poisson_arrivals(5.0, 100, seed=1)
    b = poisson_arrivals(5.0, 100, seed=1)
    c = poisson_arrivals(5.0, 100, seed=2)
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert not np.array_equal(a.arrival_s, c.arrival_s)


@pytest.mark.parametrize("batching", ["continuous", "static"])
@pytest.mark.parametrize("rate", [2.0, 15.0, 60.0])
def test_littles_law_and_percentile_order(model, mixed, batching, rate):
    r = simulate(mixed(rate, n=800), model, batching=batching, max_batch=32, variance=NOISY)
    assert r.littles_law_error < 0.05
    for stats in (r.e2e, r.ttft, r.tpot):
        assert stats.p50_s <= stats.p95_s <= stats.p99_s <= stats.max_s
    assert np.all(r.ttft_s > 0)
    assert np.all(r.e2e_s >= r.ttft_s)


def test_littles_law_images():
    w = poisson_arrivals(400.0, 3000, 1, 1, seed=2)
    r = simulate_batches(w, lambda b: 1e-3 + 2e-4 * b, max_batch=16, variance=NOISY)
    assert r.littles_law_error < 0.05
    assert r.e2e.p50_s <= r.e2e.p95_s <= r.e2e.p99_s
    assert r.ttft is None
    assert r.output_tokens_per_s is None


def _isolated(prompts, outputs, gap_s=1000.0):
    n = len(prompts)
    return Workload(
        arrival_s=np.arange(n) * gap_s, prompt_tokens=prompts, output_tokens=outputs, name="iso"
    )


@pytest.mark.parametrize("batching", ["continuous", "static"])
def test_low_load_latency_is_unloaded_step_sum(model, batching):
    prompts, outputs = [100, 733, 2048, 7], [1, 2, 50, 301]
    r = simulate(_isolated(prompts, outputs), model, batching=batching, max_wait_s=0.0)
    for i, (p, o) in enumerate(zip(prompts, outputs, strict=True)):
        prefill = model.prefill_time(1, p)
        decode = sum(model.decode_time(1, c) for c in range(p + 1, p + o))
        assert r.ttft_s[i] == pytest.approx(prefill, rel=1e-12)
        assert r.e2e_s[i] == pytest.approx(prefill + decode, rel=1e-12)


def test_variance_only_slows_steps(model, mixed):
    w = mixed(5.0, n=300)
    calm = simulate(w, model)
    noisy = simulate(w, model, variance=NOISY)
    assert noisy.e2e.mean_s > calm.e2e.mean_s
    assert noisy.e2e.p99_s > calm.e2e.p99_s


def test_variance_accepts_a_lookalike(model):
    @dataclasses.dataclass
    class Lookalike:
        launch_jitter_s: float = 1e-4
        slow_step_probability: float = 0.0
        slow_step_factor: float = 1.0

    w = poisson_arrivals(5.0, 50, seed=0)
    a = simulate(w, model, variance=Lookalike(), seed=1)
    b = simulate(w, model, variance=RuntimeVariance(launch_jitter_s=1e-4), seed=1)
    assert _same(a, b)


def test_continuous_beats_static_at_high_load(model, mixed):
    w = mixed(80.0)
    cont = simulate(w, model, batching="continuous", max_batch=32)
    stat = simulate(w, model, batching="static", max_batch=32)
    assert cont.achieved_rate_per_s > 1.5 * stat.achieved_rate_per_s
    assert cont.output_tokens_per_s > 1.5 * stat.output_tokens_per_s


def test_batching_grows_with_load(model, mixed):
    low = simulate(mixed(1.0, n=300), model, max_batch=32)
    high = simulate(mixed(80.0, n=300), model, max_batch=32)
    assert low.mean_batch < 3 < high.mean_batch <= 32
    assert high.mean_waiting > low.mean_waiting


def test_kv_capacity_limits_the_batch(model, mixed):
    w = mixed(80.0, n=400)
    free = simulate(w, model, max_batch=64)
    tight = simulate(w, model, max_batch=64, kv_capacity_tokens=8192)
    assert tight.mean_batch < free.mean_batch
    assert tight.littles_law_error < 0.05
    with pytest.raises(ServingError, match="kv_capacity_tokens"):
        simulate(w, model, kv_capacity_tokens=100)


def test_prefill_budget_splits_prefills(model):
    w = Workload(arrival_s=[0.0] * 4, prompt_tokens=[1000] * 4, output_tokens=[2] * 4)
    joint = simulate(w, model)
    split = simulate(w, model, max_prefill_tokens=2000)
    assert len(set(joint.ttft_s.tolist())) == 1
    assert len(set(split.ttft_s.tolist())) == 2


def test_static_waits_for_a_full_batch(model):
    w = Workload(arrival_s=[0.0, 0.1, 0.2, 5.0], prompt_tokens=[10] * 4, output_tokens=[3] * 4)
    r = simulate(w, model, batching="static", max_batch=3, max_wait_s=1.0)
    start = r.ttft_s + w.arrival_s - model.prefill_time(3, 10)
    assert start[:3] == pytest.approx([0.2] * 3)
    lone = simulate(w, model, batching="static", max_batch=8, max_wait_s=0.05)
    assert lone.ttft_s[0] == pytest.approx(0.05 + model.prefill_time(1, 10))


def test_dynamic_image_batching(model):
    arrivals = np.array([0.0, 0.001, 0.002, 1.0])
    r = simulate_batches(arrivals, lambda b: 0.01 * b, max_batch=2, max_wait_s=0.005)
    # batch {0, 1} starts when full at 1 ms; {2} waits for the server (free at 21 ms)
    assert r.e2e_s.tolist() == pytest.approx([0.021, 0.020, 0.029, 0.01])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_batch": 0}, "max_batch"),
        ({"max_batch": 2.5}, "max_batch"),
        ({"batching": "paged"}, "batching"),
        ({"max_prefill_tokens": -1}, "max_prefill_tokens"),
        ({"variance": object()}, "variance"),
    ],
)
def test_bad_options_are_one_line_errors(model, kwargs, match):
    w = poisson_arrivals(1.0, 5, seed=0)
    with pytest.raises(ServingError, match=match) as info:
        simulate(w, model, **kwargs)
    assert "\n" not in str(info.value)


def test_bad_step_time_is_an_error():
    class Broken:
        def prefill_time(self, batch, prompt_tokens):
            return 0.01

        def decode_time(self, batch, context):
            return -1.0

    with pytest.raises(ServingError, match="decode_time"):
        simulate(poisson_arrivals(1.0, 5, seed=0), Broken())


def test_noisy_and_noiseless_paths_agree_when_the_noise_vanishes(model, mixed):
    w = mixed(30.0, n=500)
    calm = simulate(w, model, max_batch=16)
    tiny = simulate(w, model, max_batch=16, variance=RuntimeVariance(launch_jitter_s=1e-15))
    assert tiny.e2e_s == pytest.approx(calm.e2e_s, rel=1e-9)
    assert tiny.ttft_s == pytest.approx(calm.ttft_s, rel=1e-9)
