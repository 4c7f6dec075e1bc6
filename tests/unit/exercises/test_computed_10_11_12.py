"""Lessons 10-12: the exercises that were read-offs are computed (issue 28 point 1).

Each check is graded both ways: the answer a student computes from what the page shows passes;
the read-off or the usual slip fails, first with the exercise's hint, then with the graded one.
The sentence that states an answer is gated behind its check.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from workbench.errors import WorkbenchError
from workbench.exercises import _check, lesson10, lesson11, lesson12

PLATFORMS = ["h100-sxm", "h200", "mi300x", "gaudi3", "a100-80gb"]


@pytest.fixture(autouse=True)
def _fresh_session(monkeypatch):
    monkeypatch.setattr(_check, "_SETTLED", set())
    monkeypatch.setattr(_check, "_REVEALED", set())
    monkeypatch.setattr(_check, "_ATTEMPTS", {})


def _graded_twice(check, wrong, word):
    """The first wrong try shows one hint, the second adds the graded one with ``word``."""
    first, second = check(wrong), check(wrong)
    assert not first.passed
    assert len(first.hints) == 1
    assert len(second.hints) == 2
    assert word in second.hints[1]
    return second


# --- lesson 10: the knee between swept loads ------------------------------------------------------
@pytest.fixture(scope="module")
def points():
    return lesson10.sweep("llama2-7b", "h100-sxm", lesson10.RATES)


def test_lesson10_knee_from_the_table_passes_and_the_row_read_off_fails(points):
    table = lesson10.latency_table(points)
    sla = 13.5
    ok = table[table["p99_s"].map(lambda v: isinstance(v, float) and v <= sla)].iloc[-1]
    nxt = table.loc[table.index > ok.name].iloc[0]
    lo, hi = ok.name, nxt.name
    answer = lo + (sla - ok["p99_s"]) / (nxt["p99_s"] - ok["p99_s"]) * (hi - lo)
    claim = lesson10.estimate_claim(points, sla, model="llama2-7b", hardware_name="h100-sxm")
    assert claim.hidden
    wrong = _graded_twice(
        lambda a: lesson10.check_knee_rate(a, points=points, sla_s=sla), lo, "too low"
    )
    assert f"{answer:.3g}" not in repr(wrong)
    assert lesson10.check_knee_rate(answer, points=points, sla_s=sla).passed
    assert not claim.hidden
    assert f"**{answer:.3g} requests/s**" in str(claim)


def test_lesson10_estimate_claim_words_follow_the_replay(points, monkeypatch):
    real = lesson10.sweep

    def replay(p99):
        def fake(*args, **kwargs):
            (p,) = real(*args, **kwargs)
            return (replace(p, p99_e2e_s=p99),)

        return fake

    for p99, words in ((13.0, "meets the SLA"), (14.0, "breaks the SLA")):
        monkeypatch.setattr(lesson10, "sweep", replay(p99))
        claim = lesson10.estimate_claim(points, 13.5, model="llama2-7b", hardware_name="h100-sxm")
        assert words in claim.text


def test_lesson10_knee_needs_two_stable_loads_around_the_sla(points):
    with pytest.raises(WorkbenchError, match=r"13\.5"):
        lesson10.knee_estimate(points[:2], 13.5)  # no swept load breaks it
    with pytest.raises(WorkbenchError, match="straddle"):
        lesson10.knee_estimate(points, 1.0)  # every swept load breaks it


# --- lesson 11: the fit on another platform, and the shortlist's score ----------------------------
def test_lesson11_headroom_on_h200_from_the_h100_table_and_the_capacities():
    kw = {"model": "llama2-70b", "platform": "h200", "chips": 2}
    need = lesson11.fit_table("llama2-70b", "h100-sxm", (2,)).loc[2, "need_gib"]
    mem = lesson11.memory_table(["h100-sxm", "h200"])
    cap, share = mem.loc["h200", "capacity_gib"], mem.loc["h200", "reserve_share"]
    claim = lesson11.fit_compare_claim(
        "llama2-70b", ["h100-sxm", "h200"], (1, 2, 4, 8), exercise=("h200", 2)
    )
    assert claim.hidden
    _graded_twice(lambda a: lesson11.check_fit_headroom(a, **kw), cap - need, "too high")
    assert lesson11.check_fit_headroom(cap * (1 - share) - need, **kw).passed
    assert not claim.hidden
    assert "`h100-sxm` **4**; `h200` **2**" in str(claim)


@pytest.fixture(scope="module")
def rows():
    return lesson11.matrix(["llama2-7b"], PLATFORMS, sla_s=20.0)


def test_lesson11_scores_from_the_matrix_pass_and_raw_throughput_fails(rows):
    table = lesson11.matrix_table(rows).loc["llama2-7b"]
    assert "rank" not in table.columns  # the ranks answer Exercise 2: gated, not in the table
    pair = ("h100-sxm", "mi300x")
    raw = tuple(table.loc[p, "req_per_s_at_sla"] for p in pair)
    scores = tuple(table.loc[p, "req_per_s_at_sla"] * (1 - table.loc[p, "risk"]) for p in pair)
    # the pair is the one whose order the risk flips: the exercise is not the throughput column
    assert raw[0] < raw[1]
    assert scores[0] > scores[1]
    claim = lesson11.shortlist_claim(rows, pair)
    assert claim.hidden
    wrong = _graded_twice(
        lambda a: lesson11.check_scores(a, rows=rows, platforms=pair), raw, "part 1, 2 of 2"
    )
    assert f"{scores[0]:.3g}" not in repr(wrong)
    assert lesson11.check_scores(scores, rows=rows, platforms=pair).passed
    assert not claim.hidden
    assert "1. `h200`" in str(claim)
    assert "`mi300x` serves more requests/s at the SLA than `h100-sxm`" in str(claim)


def test_lesson11_shortlist_claim_words_follow_the_order(rows):
    flat = [replace(r, risk=0.1) for r in rows]
    text = lesson11.shortlist_claim(flat, ("h100-sxm", "mi300x")).text
    assert "`mi300x` ranks above `h100-sxm` on throughput at the SLA alone" in text


# --- lesson 12: the step time that enters the zone ------------------------------------------------
def test_lesson12_zone_time_from_the_row_passes_and_the_peak_rate_fails():
    kw = {"model": "llama2-7b", "hardware_name": "h100-sxm", "level": "hbm", "step": "fusion"}
    table = lesson12.trajectory_table("llama2-7b", "h100-sxm", "hbm")
    row = table.loc["fusion"]
    hw = lesson12.variants("llama2-7b", "h100-sxm")[0][1].hardware.level("hbm")
    at_peak_ms = row["gb"] * 1e9 / (lesson12.SATURATION * hw.bandwidth_bytes_per_s) * 1e3
    claim = lesson12.zone_claim(table, "llama2-7b", "h100-sxm", "hbm", "fusion")
    assert claim.hidden
    _graded_twice(lambda a: lesson12.check_zone_step_ms(a, **kw), at_peak_ms, "too low")
    answer = row["step_ms"] * row["pressure_pct"] / 100 / lesson12.SATURATION
    assert lesson12.check_zone_step_ms(answer, **kw).passed
    assert not claim.hidden
    first = next(s for s in table.index if table.loc[s, "saturated"])
    assert f"inside the zone is **{first}**" in str(claim)
