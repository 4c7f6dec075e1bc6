import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("execution", max_examples=40, deadline=None)
FAST = settings(max_examples=40, deadline=None)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
