"""Lesson 06's key takeaways and pitfalls as checked claims (issue 20).

Each rule the lesson teaches is rendered from the figures that show it: the practice scenarios'
triage reports, the panel's own refusals (:mod:`workbench.exercises._lesson06_panel`), the
synthetic measured pair and the real DLRM pair (:mod:`workbench.exercises._lesson06_measured`).
Where the numbers would say otherwise, the words follow them; no exercise's answer is quoted.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise

from workbench.evidence import read_trace
from workbench.exercises._claims import Claim
from workbench.exercises._lesson06_measured import (
    V100_TRACE,
    host_windows,
    measured_triage,
    naive_step_s,
    read_pair_trace,
)
from workbench.exercises._lesson06_panel import PANEL_SCENARIO, panel_outcomes
from workbench.exercises._text import LessonText
from workbench.review import (
    SCENARIOS,
    TriageReport,
    build_scenario,
    record_from_trace,
    synthetic_scenario_traces,
    triage,
)
from workbench.review.diagnosis.first_failing import align

__all__ = ["pitfalls", "takeaways"]

_TEXT = LessonText("lesson06")


@lru_cache(maxsize=8)
def _triaged(scenario: str, changed: str | None) -> TriageReport:
    base, cand = build_scenario(scenario)
    return triage(base, cand, changed=changed, simulate=False)


@lru_cache(maxsize=1)
def _synthetic_measured() -> TriageReport:
    pair = synthetic_scenario_traces("epilogue-fusion")
    base = record_from_trace(read_trace(pair.baseline_trace), pair.baseline_mapping)
    cand = record_from_trace(read_trace(pair.candidate_trace), pair.candidate_mapping)
    return triage(base, cand, changed=pair.changed, simulate=False)


def _tags_rule() -> str:
    undeclared = _triaged("eager-launch", None)
    declared = _triaged("eager-launch", SCENARIOS["eager-launch"].changed)
    return _TEXT.render(
        "rule_tags",
        undeclared_comparable=undeclared.comparable,
        first=undeclared.mismatched_tags[0] if undeclared.mismatched_tags else None,
        changed=SCENARIOS["eager-launch"].changed,
        declared_comparable=declared.comparable,
        decision=declared.decision,
    )


def _align_rule() -> str:
    r = _triaged(PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed)
    ff = r.first_failing
    if ff is None:
        return _TEXT.render("rule_align_none")
    base, cand = r.baseline, r.candidate
    group = next(g for g in align(base, cand) if g.anchor == ff.kernel)
    new = [k.name for k in group.candidate if k.name not in {b.name for b in group.baseline}]
    return _TEXT.render(
        "rule_align",
        scenario=PANEL_SCENARIO,
        kernel=ff.kernel,
        before=len(group.baseline),
        after=len(group.candidate),
        new=new[0] if new else None,
        split_s=sum(k.predicted_s for k in group.candidate[1:]),
        family=ff.family or ff.kernel,
        count=ff.count,
        delta=ff.delta_s,
    )


def _share_rule() -> str:
    r = measured_triage()
    shares = _TEXT.render("shares", mechanisms=r.mechanisms)
    return _TEXT.render("rule_share", mechanisms=r.mechanisms, shares=shares)


def _evidence_rule() -> str:
    owner_case = _triaged("eager-launch", SCENARIOS["eager-launch"].changed)
    control = _triaged("unchanged", SCENARIOS["unchanged"].changed)
    ff = owner_case.first_failing
    owner = owner_case.owner
    named = ff is not None and owner is not None
    return _TEXT.render(
        "rule_evidence",
        mechanism=ff.mechanism if named and ff is not None else None,
        role=owner.role if named and owner is not None else None,
        artifact=owner.closure_artifact if named and owner is not None else None,
        missing=control.missing[0].split(" (")[0] if control.missing else "",
        control_first=control.first_failing.mechanism if control.first_failing else "none",
        control_decision=control.decision,
    )


def _noise_rule() -> str:
    synth = _synthetic_measured()
    real = measured_triage()
    h, s = synth.headline(), real.shift
    run = read_pair_trace(V100_TRACE)[0]
    walls = [it.wall_s for it in run.steady_iterations]
    m = real.candidate.measurement
    gemm = dict(m.category_steps_s).get("gemm", ()) if m is not None else ()
    return _TEXT.render(
        "rule_noise",
        synth_noise=h["noise"],
        synth_change=h["change"],
        paired=s is not None,
        estimate=s.estimate_s if s is not None else 0.0,
        low=s.low_s if s is not None else 0.0,
        high=s.high_s if s is not None else 0.0,
        positive=s.positive if s is not None else 0,
        pairs=s.pairs if s is not None else 0,
        beyond=s is not None and s.beyond_noise,
        gemm=gemm,
        walls=walls,
    )


def takeaways() -> Claim:
    """The lesson's key takeaways, each rendered from the figures that show it (Markdown)."""
    rules = (_tags_rule(), _align_rule(), _share_rule(), _evidence_rule(), _noise_rule())
    return _TEXT.claim("rules", rules=rules)


def _wrong_group_pitfall() -> str:
    wrong = next(o for o in panel_outcomes() if o.move.control == "changed" and o.move.end
                 not in ("(none)", SCENARIOS[o.scenario].changed))  # fmt: skip
    return _TEXT.render(
        "pitfall_wrong_group",
        scenario=wrong.scenario,
        declared=wrong.move.end,
        refused=wrong.refused,
        mismatched=wrong.mismatched,
    )


def _first_kernel_pitfall() -> str:
    r = _triaged(PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed)
    groups = align(r.baseline, r.candidate)
    moved = [g for g in groups if g.delta_s != 0]
    ff = r.first_failing
    if not moved or ff is None:
        return _TEXT.render("pitfall_first_kernel_none")
    first = moved[0]
    total = ff.total_delta_s
    biggest = max(r.baseline.kernels, key=lambda k: k.predicted_s)
    big = next((g for g in groups if g.anchor == biggest.name), None)
    big_delta = big.delta_s if big is not None else 0.0
    return _TEXT.render(
        "pitfall_first_kernel",
        scenario=PANEL_SCENARIO,
        first=first.anchor,
        first_delta=first.delta_s,
        first_share=first.delta_s / total,
        biggest=biggest.name,
        biggest_delta=abs(big_delta),
        share=ff.share,
        family=ff.family or ff.kernel,
    )


def _window_pitfall() -> str:
    run = read_pair_trace(V100_TRACE)[0]
    w = list(host_windows(run).values())
    overlaps = [a[1] - b[0] for a, b in pairwise(w) if a[1] > b[0]]
    naive, tool = naive_step_s(run), run.median_iteration_s()
    if not overlaps:
        return _TEXT.render("pitfall_window_none")
    return _TEXT.render(
        "pitfall_window",
        overlaps=overlaps,
        windows=len(w) - 1,
        naive=naive,
        tool=tool,
        change=naive / tool - 1,
    )


def _predicted_pitfall() -> str:
    synth = _synthetic_measured()
    predicted = _triaged(PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed)
    m = synth.candidate.measurement
    return _TEXT.render(
        "pitfall_predicted",
        scenario=PANEL_SCENARIO,
        shown="none" if predicted.candidate.measurement is None else "one",
        noise=predicted.noise,
        backend=m.backend if m is not None else None,
        repeats=m.repeats if m is not None else None,
        synth_noise=synth.headline()["noise"],
    )


def pitfalls() -> Claim:
    """The lesson's pitfalls, each rendered from the figures that show it (Markdown)."""
    rules = (
        _wrong_group_pitfall(),
        _first_kernel_pitfall(),
        _window_pitfall(),
        _predicted_pitfall(),
    )
    return _TEXT.claim("rules", rules=rules)
