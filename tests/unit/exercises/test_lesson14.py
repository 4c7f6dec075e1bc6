"""Lesson 14's checks, tables, claims and widget: answers computed here by hand from the inputs.

No check shows its answer before a correct try; hints never contain it.
"""

from __future__ import annotations

import pytest

from workbench.exercises import _check, lesson14
from workbench.exercises.lesson14 import ENERGY


@pytest.fixture(autouse=True)
def _fresh_attempts():
    _check._ATTEMPTS.clear()


def test_gated_cycles():
    # gating spends every cycle: one element of A per cycle, 16 elements
    assert lesson14.check_gated_cycles(16).passed
    assert not lesson14.check_gated_cycles(4).passed


def test_cp_bits():
    nonzeros, coord_bits = 64 // 4, 6  # 2**6 = 64 positions
    assert lesson14.check_cp_bits(nonzeros * (8 + coord_bits)).passed
    assert not lesson14.check_cp_bits(64 * 8).passed


def test_break_even_from_the_per_action_energies():
    e = ENERGY
    dense = 2 * e.read_pj + e.read_pj + e.write_pj + e.mac_pj  # A, B, Z read, Z write, MAC
    skip = dense + e.metadata_read_pj
    assert lesson14.check_break_even(round(dense / skip, 3)).passed
    assert not lesson14.check_break_even(0.5).passed
    assert lesson14.break_even() == pytest.approx(dense / skip, rel=0.005)


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (lesson14.check_gated_cycles, "16"),
        (lesson14.check_cp_bits, "224"),
        (lesson14.check_break_even, "0.925"),
    ],
)
def test_no_answer_before_a_correct_try(check, answer):
    shown = repr(check(None)) + repr(check(1)) + repr(check(2))
    assert answer not in shown


def test_dot_table_is_the_timeloop_exercise():
    t = lesson14.dot_table()
    assert list(t["cycles"]) == [16, 16, 4]
    assert list(t["actual_macs"]) == [16, 4, 4]
    assert t.loc["skipping", "metadata_reads"] == 4
    assert t.loc["dense", "energy_pj"] == pytest.approx(35.44, abs=0.01)  # Timeloop's total


def test_claims_follow_the_tables():
    assert "0.875" in str(lesson14.format_claim())
    t = lesson14.layer_table(0.25)
    assert t.loc["gating", "cycles"] == t.loc["dense", "cycles"]
    assert t.loc["skipping", "speedup"] > 3
    rows = lesson14.design_rows(False, "cp")
    energy = {(r["density"], r["design"]): r["energy_nj"] for r in rows}
    worse = [d for d in lesson14.DENSITIES if energy[d, "skipping"] > energy[d, "dense"]]
    assert all(d > lesson14.break_even() for d in worse)
    assert ", ".join(f"{d}" for d in worse) in str(lesson14.fallback_claim())
    q = lesson14.quality_table()
    assert list(q["output_error"]) == sorted(q["output_error"])  # lower density, larger error
    assert f"{q['output_error'].iloc[-1]:.0%}" in str(lesson14.quality_claim(q))


def test_widget_redraws_with_the_density():
    from workbench.ui.sparsity_panel import SparsityPanel

    panel = SparsityPanel(density=0.5)
    before = panel.status_text
    panel.controls["density"].value = 0.25
    spec = panel.update().to_dict()
    assert panel.status_text != before
    assert "density 0.25" in panel.status_text
    assert '"density": 0.25' in str(spec).replace("'", '"')
    panel.controls["zeros"].value = "structured"
    assert "skipping 512 cycles" in panel.status_text
