"""Lesson 06 (issue 20, issue 17): the panel instructions are data the panel carries out, the
real measured pair is triaged by the tool's own triage, the rules are rendered from the numbers,
and the first-principles exercise checks the tool's own step time."""

from __future__ import annotations

import itertools
import json
import re
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest

from workbench.errors import WorkbenchError
from workbench.evidence.launches import launch_stats
from workbench.exercises import _lesson06_measured, _lesson06_rules, lesson06
from workbench.ui import TriagePanel

NOTEBOOK = Path(__file__).resolve().parents[3] / "lessons" / "06-regression-triage.ipynb"
CALL = re.compile(r'panel_move_claim\("(\w+)", "([^"]+)"\)')
# an exercise's move (hidden until its check passes) selects a scenario
EXERCISE_CALL = re.compile(r'exercise_move_claim\("([^"]+)", "[^"]+"\)')


def _notebook_calls() -> list[tuple[str, str]]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    calls = []
    for c in cells:
        source = "".join(c["source"])
        calls += [(m[1], m[2]) for m in CALL.finditer(source)]
        calls += [("scenario", m[1]) for m in EXERCISE_CALL.finditer(source)]
    return calls


def test_every_instruction_in_the_lesson_is_a_panel_move_and_every_move_is_given():
    calls = _notebook_calls()
    assert calls == [(m.control, m.end) for m in lesson06.PANEL_MOVES]
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    built = [c for c in cells if "TriagePanel(" in "".join(c["source"])]
    assert len(built) == 1
    assert f'TriagePanel(scenario="{lesson06.PANEL_SCENARIO}")' in "".join(built[0]["source"])


def test_the_panel_carries_out_every_move_as_the_claims_say():
    # the lesson's panel, driven through the moves in order: what it shows is what the data says
    from workbench.exercises._lesson06_panel import panel_outcomes

    panel = TriagePanel(scenario=lesson06.PANEL_SCENARIO)
    for outcome in panel_outcomes():
        move = outcome.move
        before = panel.headline.value + panel.first_failing.value
        assert getattr(panel, move.control).value == move.start, move  # where the lesson left it
        assert all(getattr(panel, k).value == v for k, v in move.setting), move
        getattr(panel, move.control).value = move.end
        shown = panel.headline.value + panel.first_failing.value
        assert shown != before, move  # the panel redrew
        assert ("REFUSED" in panel.headline.value) is move.refused is outcome.refused, move
        assert panel.changed.value == outcome.changed
        assert panel.scenario.value == outcome.scenario
        if move.refused:
            assert f"declared changed: {move.end}" in panel.headline.value
        else:
            assert panel.report.first_failing is not None
    text = lesson06.panel_move_claim("changed", "runtime").text
    assert "the wrong group (`epilogue-fusion` is a `compiler` change)" in text
    assert "**refuses**" in text
    assert "`compiler.fusion_disabled`" in text


def test_a_move_the_data_does_not_hold_is_an_error():
    with pytest.raises(WorkbenchError, match="no panel move"):
        lesson06.panel_move_claim("scenario", "conv-layout")


def test_the_exercise_moves_do_not_give_the_answer_away():
    for move in lesson06.PANEL_MOVES:
        if move.control == "scenario":
            r = lesson06.triage_scenario(str(move.end))
            text = lesson06.panel_move_claim(move.control, str(move.end)).text
            assert r.first_failing.mechanism not in text
            assert r.owner.role not in text


def test_the_real_pair_is_triaged_by_the_tools_own_triage():
    r = lesson06.measured_triage()
    ff = r.first_failing
    assert ff is not None
    assert ff.mechanism != "unmapped_measurement"
    assert (ff.mechanism, ff.kernel) == ("hardware_rate", "gemm kernels")
    assert r.owner is not None
    assert r.owner.role == "platform owner"
    # the same as the CLI path: records without a model, then triage with hardware declared
    base, cand = lesson06.measured_records()
    assert base.tags.workload.model == "unknown"
    assert all(k.predicted_s == 0 for k in (*base.kernels, *cand.kernels))
    text = lesson06.measured_headline_claim().text
    assert f"**{ff.mechanism} at {ff.kernel}**, {ff.share:.1%}" in text
    assert f"decision: **{r.decision}**" in text
    assert f"step time **{r.headline()['change']:+.1%}**" in text
    for m in r.mechanisms[1:3]:
        assert f"{m.kernel} {m.share:.0%}" in text
    assert "ran all of its GEMM time as FP32" in text


def test_the_launch_claim_is_the_launch_statistics():
    text = lesson06.launch_lag_claim().text
    for label, name in (("A100", lesson06.A100_TRACE), ("V100", lesson06.V100_TRACE)):
        main = max(launch_stats(_lesson06_measured.read_pair_trace(name)[0]),
                   key=lambda s: s.launches)  # fmt: skip
        assert f"{label} stream {main.stream}: launch delay median" in text
        assert f"{main.queue.mean:.0f} operations queued on average" in text
    assert "its GPU lags the host" in text


def test_the_differences_claim_reads_the_pair():
    text = lesson06.pair_differences_claim().text
    assert "world size 8 vs 2" in text
    assert "`2ul` vs `5ul`" in text
    assert "the V100 run was compiled" in text


def test_first_principles_step_time_is_the_tools_median():
    starts, end = lesson06.step_timeline_ms()
    steps = sorted(starts)
    periods = [starts[b] - starts[a] for a, b in itertools.pairwise(steps)]
    periods.append(end - starts[steps[-1]])
    answer = statistics.median(periods[1:])  # the warm-up step left out
    assert lesson06.check_step_time(answer).passed
    run = _lesson06_measured.read_pair_trace(lesson06.V100_TRACE)[0]
    assert answer == pytest.approx(run.median_iteration_s() * 1e3, rel=1e-5)
    # the usual slips do not pass: a mean, the warm-up kept, the last step dropped
    for wrong in (
        statistics.fmean(periods[1:]),
        statistics.median(periods),
        statistics.median(periods[1:-1]),
    ):
        r = lesson06.check_step_time(wrong, strict=False)
        assert not r.passed
        assert f"{answer:.3g}" not in repr(r)


def test_rules_follow_the_numbers(monkeypatch):
    text = lesson06.takeaways().text + lesson06.pitfalls().text
    run = _lesson06_measured.read_pair_trace(lesson06.V100_TRACE)[0]
    from workbench._format import fmt_time

    assert f"gives a {fmt_time(_lesson06_measured.naive_step_s(run))} step" in text
    assert f"step period is {fmt_time(run.median_iteration_s())}" in text
    assert "is refused (its tags differ in `runtime.launch" in text
    assert "still refuses" in text
    # windows that do not overlap: the pitfall says so instead
    monkeypatch.setattr(_lesson06_rules, "host_windows", lambda run: {1: (0.0, 1.0), 2: (2.0, 3.0)})
    assert "do not overlap" in _lesson06_rules._window_pitfall()
    # a real pair whose change stays inside its noise: the words follow
    real = lesson06.measured_triage()
    from workbench.evidence.compare import paired_shift95

    assert "beyond the noise, though the interval is wide" in _lesson06_rules._noise_rule()
    within = paired_shift95([0.10, 0.12, 0.11], [0.13, 0.10, 0.12])
    fake = SimpleNamespace(shift=within, candidate=real.candidate)
    monkeypatch.setattr(_lesson06_rules, "measured_triage", lambda: fake)
    assert "within the noise" in _lesson06_rules._noise_rule()


def test_the_synthetic_pair_claim_reads_the_generator_and_the_trace():
    from workbench.evidence import read_trace
    from workbench.review import synthetic_scenario_traces

    pair = synthetic_scenario_traces("epilogue-fusion")
    text = lesson06.synthetic_claim(pair).text
    assert f"{read_trace(pair.candidate_trace).repeats} `ProfilerStep#` iterations" in text
    import inspect

    from workbench._format import fmt_time
    from workbench.review.scenarios.synthetic import synthetic_kernels

    params = inspect.signature(synthetic_kernels).parameters
    jitter, gap = params["jitter"].default, params["gap_s"].default
    assert f"a seeded {jitter:.0%} jitter per kernel, a {fmt_time(gap)} gap" in text


def test_an_exercise_move_is_hidden_until_its_prediction_is_checked(monkeypatch):
    from workbench.exercises import _check

    monkeypatch.setattr(_check, "_SETTLED", set())
    claim = lesson06.exercise_move_claim("long-seq-tile", "Exercise 1")
    assert claim.hidden
    assert "answers Exercise 1" in str(claim)
    r = lesson06.triage_scenario("long-seq-tile")
    lesson06.check_first_failing("long-seq-tile", r.first_failing.mechanism, r.owner.role)
    assert str(claim) == str(lesson06.panel_move_claim("scenario", "long-seq-tile"))
