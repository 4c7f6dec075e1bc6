"""The optimisation trajectory: real mapper runs with cumulative overrides, and serving verdicts."""

import itertools

import pytest

from workbench.errors import WorkbenchError
from workbench.platform.trajectory import TRAJECTORY, serving_verdicts, trajectory


def test_at_least_five_steps_each_a_different_option_set():
    assert len(TRAJECTORY) >= 5
    assert len({s.options for s in TRAJECTORY}) == len(TRAJECTORY)
    assert TRAJECTORY[0].options.launch == "eager"
    assert TRAJECTORY[-1].options.launch == "graph"


def test_steps_get_no_slower_on_decode():
    steps = trajectory("llama2-7b", "h100-sxm")
    times = [s.mapping.time_s for s in steps]
    assert all(b <= a for a, b in itertools.pairwise(times))
    assert times[-1] < times[0]


def test_decode_context_clamped_to_model_positions():
    steps = trajectory("gpt2", "h100-sxm", seq=4096)
    assert all(s.mapping.time_s > 0 for s in steps)


def test_bad_batch_raises():
    with pytest.raises(WorkbenchError, match="batch"):
        trajectory("llama2-7b", "h100-sxm", batch=0)


def test_serving_verdicts_one_per_step():
    verdicts = serving_verdicts("gpt2", "h100-sxm", rate_per_s=2.0, sla_s=30.0, n=100)
    assert [v[0] for v in verdicts] == [s.name for s in TRAJECTORY]
    assert all(p99 > 0 and status in ("ok", "sla", "saturated") for _, p99, status in verdicts)
    with pytest.raises(WorkbenchError, match="decoder preset"):
        serving_verdicts("resnet50", "h100-sxm", rate_per_s=1.0, sla_s=1.0)
