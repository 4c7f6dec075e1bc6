"""The sparsity chart: two panels (cycles, energy), a rule at the density, bad rows refused."""

import pytest

from workbench.errors import WorkbenchError
from workbench.report.charts.sparsity import sparsity_chart

ROWS = [
    {"density": d, "design": k, "cycles": 100 * d, "energy_nj": 2 * d}
    for d in (0.5, 1.0)
    for k in ("dense", "gating", "skipping")
]


def test_two_panels_and_the_rule():
    spec = sparsity_chart(ROWS, density=0.5, title="t").to_dict()
    assert len(spec["hconcat"]) == 2
    fields = [p["layer"][0]["encoding"]["y"]["field"] for p in spec["hconcat"]]
    assert fields == ["cycles", "energy_nj"]
    rule = spec["hconcat"][0]["layer"][1]
    assert rule["mark"]["type"] == "rule"
    assert rule["data"]["values"] == [{"density": 0.5}]


@pytest.mark.parametrize(
    ("rows", "density", "needle"),
    [
        ([], 0.5, "no rows"),
        ([{**ROWS[0], "design": "magic"}], 0.5, "design"),
        ([{**ROWS[0], "cycles": float("nan")}], 0.5, "cycles"),
        ([{**ROWS[0], "energy_nj": -1.0}], 0.5, "energy_nj"),
        (ROWS, 0.0, "density"),
    ],
)
def test_bad_rows_are_refused(rows, density, needle):
    with pytest.raises(WorkbenchError, match=needle):
        sparsity_chart(rows, density=density)
