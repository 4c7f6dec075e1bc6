"""Lesson 02's published-measurement section: table, figure and claim from one corpus run."""

import pytest

from workbench.exercises import fidelity


@pytest.fixture(scope="module")
def report():
    return fidelity.fidelity_report()


def test_table_claim_and_figure_agree(report):
    table = fidelity.fidelity_table(report, split="heldout")
    assert (table["rows"] > 0).all()
    assert (table["median_abs_error_pct"] >= 0).all()
    claim = fidelity.fidelity_claim(report, split="heldout").text
    worst = table["median_abs_error_pct"].idxmax()
    assert f"worst for `{worst}`" in claim
    assert f"{int(table['rows'].sum())} heldout rows" in claim
    html = fidelity.fidelity_figure(report)._repr_html_()
    assert html.count("<svg") == 1
    assert "<script" not in html
