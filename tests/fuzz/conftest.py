"""Hypothesis profiles of the fuzz suite.

``ci`` (the default) is derandomized and small, so the whole suite runs in well under two
minutes on two cores; ``long`` is random and large, for a run by hand::

    WORKBENCH_FUZZ=long python -m pytest tests/fuzz -q -p no:cacheprovider
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
}
settings.register_profile("ci", max_examples=25, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=1000, **_COMMON)
settings.load_profile(os.environ.get("WORKBENCH_FUZZ", "ci"))
