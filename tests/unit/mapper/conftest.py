import pytest

from workbench.hw import load_hardware


@pytest.fixture(scope="session")
def h100():
    return load_hardware("h100-sxm")


@pytest.fixture(scope="session")
def a100():
    return load_hardware("a100-80gb")
