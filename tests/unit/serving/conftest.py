import pytest

from workbench.serving import AnalyticStepTime, LogNormalLengths, poisson_arrivals


@pytest.fixture
def model():
    return AnalyticStepTime()


@pytest.fixture
def mixed():
    """A long-tailed workload (a small version of the production mix)."""

    def make(rate, n=1500, seed=3):
        return poisson_arrivals(
            rate,
            n,
            LogNormalLengths(median=300, p99=3000, maximum=4096),
            LogNormalLengths(median=100, p99=800, maximum=1024),
            seed=seed,
        )

    return make
