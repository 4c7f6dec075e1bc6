import pytest

from workbench.review import build_scenario


@pytest.fixture(scope="session")
def scenario_records():
    """Every scenario's (baseline, candidate) records, built once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = build_scenario(name)
        return cache[name]

    return get
