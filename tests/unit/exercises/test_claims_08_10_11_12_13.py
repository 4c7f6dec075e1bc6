"""Lessons 08 and 10-13: each directional rule, takeaway and pitfall follows the numbers (issue 20).

Each claim is checked twice: on the lesson's own numbers (the figures it prints are the ones the
library computes), and on made-up numbers that point the other way (the words flip with them),
so no sentence can hold its direction whatever the model says.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from workbench.exercises import lesson08, lesson10, lesson11, lesson12, lesson13
from workbench.exercises._moves import ControlMove, phrase_move
from workbench.exercises._shared import hardware
from workbench.models import build_graph
from workbench.serving import find_knee

LESSONS = Path(__file__).resolve().parents[3] / "lessons"


def _text(prefix: str) -> str:
    (nb,) = LESSONS.glob(f"{prefix}-*.ipynb")
    return "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])


def test_the_typed_rules_are_gone():
    assert "long before throughput flattens" not in _text("10")
    assert "launch jitter and slow steps move the tail, not the mean" not in _text("10")
    assert "sustains 9 requests/s at a 4 s mean" not in _text("10")
    assert "1.8x faster" not in _text("11")
    assert "decode serving is bound by memory and tails, not matrix peak" not in _text("11")
    assert "a step that removes bytes (fusion,\n  quantization) can lower it" not in _text("12")
    assert "no kernel reaches it; use the sustained rate" not in _text("12")
    assert "set it to `alexnet conv1` to see Exercise 2's answer" not in _text("13")
    assert "Switch to prefill and untick **flash_attention**" not in _text("08")


def test_phrase_move_names_the_control_as_the_screen_does():
    m = ControlMove(widget="LatencyPanel", control="max_batch", start=32, end=8, label="max batch")
    assert phrase_move(m) == "Set **max batch** from 32 to 8"
    assert m.state() == {"max_batch": 32}
    assert m.state(after=True) == {"max_batch": 8}


# --- lesson 08 ----------------------------------------------------------------------------------
def test_lesson08_move_table_is_at_the_moves_settings():
    seq_move, batch_move = lesson08.widget_moves("llama2-7b", "h100-sxm", batch=8)
    t = lesson08.widget_move_table("llama2-7b", "h100-sxm", batch=8)
    rows = {(b, s) for _, b, s in t.index}
    assert rows == {*seq_move.settings(), *batch_move.settings()}
    assert (seq_move.end, batch_move.end) == (2048, 64)  # map's check: 4,097 positions; 76.6 GiB


# --- lesson 10 ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def points():
    return lesson10.sweep("llama2-7b", "h100-sxm", lesson10.RATES)


def _pt(p, rate, *, p50, p99, mean, falls_behind=False):
    served = rate * (0.8 if falls_behind else 1.0)
    return replace(p, offered_rate_per_s=rate, achieved_rate_per_s=served, p50_e2e_s=p50,
                   p99_e2e_s=p99, mean_e2e_s=mean, sustained_rate_per_s=served,
                   window_arrival_rate_per_s=rate)  # fmt: skip


def test_lesson10_load_claim_follows_the_sweep(points):
    text = lesson10.load_claim(points).text
    sat = next(p for p in points if p.saturated())
    assert f"Throughput flattens at {sat.offered_rate_per_s:.3g} requests/s" in text
    i = points.index(sat)
    b, lo = points[i - 1], points[0]
    assert f"p99 x{b.p99_e2e_s / lo.p99_e2e_s:.3g}" in text
    assert f"median x{b.p50_e2e_s / lo.p50_e2e_s:.3g}" in text


def test_lesson10_load_claim_words_flip_with_the_numbers(points):
    p = points[0]
    flat = (_pt(p, 1, p50=1, p99=10, mean=2), _pt(p, 2, p50=1.1, p99=11, mean=2.1))
    assert "never flattens" in lesson10.load_claim(flat).text
    early = (_pt(p, 1, p50=1, p99=10, mean=2), _pt(p, 2, p50=1.1, p99=25, mean=2.2),
             _pt(p, 3, p50=3, p99=40, mean=5, falls_behind=True))  # fmt: skip
    text = lesson10.load_claim(early).text
    assert "The p99 left its low-load level earlier, at 2" in text
    assert "relative to its low-load level the p99 rose most" in text
    late = (_pt(p, 1, p50=1, p99=10, mean=2), _pt(p, 2, p50=3, p99=12, mean=2.5),
            _pt(p, 3, p50=4, p99=14, mean=6, falls_behind=True))  # fmt: skip
    text = lesson10.load_claim(late).text
    assert "has not yet left its low-load level" in text
    assert "the median rose most" in text


def test_lesson10_question_and_takeaways_read_the_sweeps(points):
    q = lesson10.question_claim(points, 15.0).text
    by_mean = [p for p in points if p.stable and p.mean_e2e_s <= 15.0][-1]
    assert f"sustains {by_mean.achieved_rate_per_s:.3g} requests/s" in q
    t = lesson10.takeaway_claim(points, 15.0, model="llama2-7b", hardware_name="h100-sxm").text
    knee = find_knee(points, 15.0).last_ok
    assert f"Plan at the knee of the p99 curve ({knee.offered_rate_per_s:.3g} requests/s" in t
    syn = lesson10.sweep("llama2-7b", "h100-sxm", lesson10.RATES, trace="synthetic-fixed")
    syn_knee = find_knee(syn, 15.0).last_ok
    word = "overstates" if syn_knee.offered_rate_per_s > knee.offered_rate_per_s else "does not"
    assert f"so it {word}" in t


def test_lesson10_pitfalls_follow_the_numbers(points, monkeypatch):
    text = lesson10.pitfall_claim(
        points, model="llama2-7b", hardware_name="h100-sxm", rate=5.0
    ).text
    full = next(p for p in points if p.offered_rate_per_s == 5.0)
    small = lesson10.sweep("llama2-7b", "h100-sxm", (5.0,), n=100)[0]
    calm = lesson10.sweep("llama2-7b", "h100-sxm", (5.0,), variance=False)[0]
    assert f"the first 100 requests give a p99 of {small.p99_e2e_s:.3g} s" in text
    assert f"the p99 by {full.p99_e2e_s / calm.p99_e2e_s - 1:+.1%}" in text
    # made-up replays that point the other way: the words follow
    p = points[0]

    def fake(model, hw, rates, *, n=1500, variance=True, **_):
        if n == 100:
            return (_pt(p, 5.0, p50=1, p99=full.p99_e2e_s * 2, mean=2),)
        if not variance:
            return (_pt(p, 5.0, p50=1, p99=full.p99_e2e_s / 2, mean=full.mean_e2e_s),)
        raise AssertionError("unexpected sweep")

    monkeypatch.setattr(lesson10, "sweep", fake)
    text = lesson10.pitfall_claim(
        points, model="llama2-7b", hardware_name="h100-sxm", rate=5.0
    ).text
    assert "the short replay does not understate the tail" in text
    assert "variance moves the tail more than the mean" in text


# --- lesson 11 ----------------------------------------------------------------------------------
def test_lesson11_expected_decode_is_computed_from_first_principles():
    params = build_graph("llama2-7b", "decode", batch=1, seq=1).params
    expected = hardware("h200").offchip.sustained_bytes_per_s / (params * 2)
    ceiling = hardware("h200").offchip.bandwidth_bytes_per_s / (params * 2)
    assert lesson11.check_decode_expected(expected * 1.01)
    assert not lesson11.check_decode_expected(expected * 2, strict=False)
    assert not lesson11.check_decode_expected(expected / 2, strict=False)  # forgot 2 bytes
    assert not lesson11.check_decode_expected(ceiling, strict=False)  # the datasheet peak
    res = lesson11.check_decode_expected(1.0, strict=False)
    assert f"{expected:.4g}" not in repr(res)  # the hint never quotes the answer
    table = lesson11.decode_inputs_table(["h200"])
    assert table.loc["h200", "params"] == params
    text = lesson11.expected_claim("llama2-7b", ["gaudi3", "h200"]).text
    assert f"`h200` ceiling {ceiling:,.0f} tokens/s at the datasheet peak" in text
    assert f"expected {expected:,.0f} at the sustained rate" in text


def test_lesson11_bound_claim_follows_the_ranks():
    platforms = ["h100-sxm", "h200", "gaudi3"]
    peak = {p: hardware(p) for p in platforms}
    by_bw = sorted(platforms, key=lambda p: -peak[p].offchip.sustained_bytes_per_s)
    trap = pd.DataFrame({"serving_rank": [by_bw.index(p) + 1 for p in platforms]},
                        index=platforms)  # fmt: skip
    assert "follows **bandwidth, not peak FLOP/s**" in lesson11.bound_claim(platforms, trap).text
    # a serving order that follows the dense peak instead: gaudi3 first, then the two H-series
    trap = pd.DataFrame({"serving_rank": [3, 2, 1]}, index=platforms)
    text = lesson11.bound_claim(platforms, trap).text
    assert "follows **peak FLOP/s, not bandwidth**" in text


def test_lesson11_trap_claim_states_no_untested_cause():
    gemm = lesson11.gemm_table(["h100-sxm", "gaudi3"], n=2048)
    serve = pd.DataFrame({"req_per_s_at_sla": [2.0, 1.0], "p99_at_sla_s": [1.0, 1.0]},
                         index=["h100-sxm", "gaudi3"])  # fmt: skip
    t = gemm.join(serve)
    t["serving_rank"] = t["req_per_s_at_sla"].rank(ascending=False).astype(int)
    text = lesson11.trap_claim(t).text
    assert "decode-bound" not in text
    assert text.endswith("on the GEMM.")


# --- lesson 12 ----------------------------------------------------------------------------------
def _table(rows):
    return pd.DataFrame(rows, columns=["step", "step_ms", "pressure_pct", "gb"]).set_index("step")


def test_lesson12_pressure_claim_follows_the_table():
    real = lesson12.trajectory_table("llama2-7b", "h100-sxm", "hbm")
    text = lesson12.pressure_claim(real, "hbm").text
    for step, _kind, d, p0, p1 in lesson12._changes(real):
        assert f"{step} {d:+.0%} bytes, {p0:g} -> {p1:g} %" in text
    made_up = _table([("a", 10.0, 50.0, 10.0), ("b", 8.0, 70.0, 10.0), ("c", 4.0, 90.0, 6.0)])
    text = lesson12.pressure_claim(made_up, "hbm").text
    assert "kept the bytes at hbm (`b +0% bytes, 50 -> 70 %`) raised it" in text
    assert "removed the bytes at hbm (`c -40% bytes, 70 -> 90 %`) raised it" in text


def test_lesson12_pitfalls_follow_the_trajectory():
    t = lesson12.trajectory_table("llama2-7b", "h100-sxm", "hbm")
    text = lesson12.pitfall_claim(t, "llama2-7b", "h100-sxm", "hbm").text
    top = t["pressure_pct"].idxmax()
    assert f"at **{top}** hbm runs at" in text
    assert f"against {t.loc[top, 'pressure_pct']:g} % of its sustained rate" in text
    lowered = [c for c in lesson12._changes(t) if c[4] < c[3]]
    if lowered:
        assert f"`{lowered[0][0]}` lowers the pressure" in text
    flat = [
        t.index[i] for i in range(1, len(t)) if t.iloc[i]["step_ms"] == t.iloc[i - 1]["step_ms"]
    ]
    assert all(f"`{s}`" in text for s in flat)


# --- lesson 13 ----------------------------------------------------------------------------------
def test_lesson13_instructions_give_no_answer_away():
    for i in (0, 1):
        text = lesson13.instruction_claim(i).text
        after = lesson13.move_claim(i).text
        assert "µJ" not in text
        assert "PEs" not in text
        assert "spends least" not in text
        assert after.startswith(phrase_move(lesson13.widget_moves()[i]))


def test_lesson08_question_takeaway_and_pitfalls_read_the_tables():
    assert "Your decode latency doubled" not in _text("08")
    kv = lesson08.kv_growth_table("llama2-7b", "h100-sxm", contexts=(512, 2048, 4095), batch=8)
    q = lesson08.question_claim(kv, 2048, 4095).text
    ratio = kv.loc[4095, "decode_ms"] / kv.loc[2048, "decode_ms"]
    assert f"(x{ratio:.2f})" in q
    take = lesson08.kv_takeaway_claim(kv, "llama2-7b", "llama3-8b").text
    assert lesson08.kv_claim(kv, "llama2-7b").text in take
    assert lesson08.gqa_claim("llama2-7b", "llama3-8b").text in take
    phases = lesson08.phase_table("llama2-7b", "h100-sxm", seq=2048)
    pit = lesson08.pitfall_claim("llama2-7b", "h100-sxm", phases).text
    per = phases.loc["decode", "us_per_token"] / phases.loc["prefill", "us_per_token"]
    assert f"a decode token costs x{per:.0f} a prefill token" in pit
    t = lesson08.widget_move_table("llama2-7b", "h100-sxm")
    a = t.loc["attn.sdpa"]["intensity"]
    assert f"attention's x{a.loc[(64, 2048)] / a.loc[(1, 2048)]:.3g}" in pit


def test_lesson10_tighter_sla_exercise_is_not_section_3s_read_off(points):
    # Exercise 2 asks for the knee at an SLA no row's p99 equals: the answer lies strictly
    # between two swept rates, so it is computed from the rows, not read off one of them
    src = _text("10")
    sla = float(src.split("check_knee_rate(answer, points=points, sla_s=")[1].split(")")[0])
    assert all(round(p.p99_e2e_s, 2) != sla for p in points)
    ok, bad = lesson10.interpolated_knee(points, sla)
    rate = lesson10.knee_estimate(points, sla)
    assert ok.offered_rate_per_s < rate < bad.offered_rate_per_s
    assert sla not in (15.0, 20.0)  # not section 3's knee, nor the panel move's
