"""Lesson 06's key takeaways and pitfalls as checked claims (issue 20).

Each rule the lesson teaches is rendered from the figures that show it: the practice scenarios'
triage reports, the panel's own refusals (:mod:`workbench.exercises._lesson06_panel`), the
synthetic measured pair and the real DLRM pair (:mod:`workbench.exercises._lesson06_measured`).
Where the numbers would say otherwise, the words follow them; no exercise's answer is quoted.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise

from workbench._format import fmt_time
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
    first = f"`{undeclared.mismatched_tags[0]}`" if undeclared.mismatched_tags else "nothing"
    before = "is refused" if not undeclared.comparable else "is triaged even so"
    after = "is triaged" if declared.comparable else "is still refused"
    return (
        "Compare only evidence captured under matching tags, and declare the group that "
        f"changed: `eager-launch` compared with nothing declared {before} (its tags differ in "
        f"{first}); "
        f"declared `{SCENARIOS['eager-launch'].changed}`, it {after} (decision: "
        f"{declared.decision})."
    )


def _align_rule() -> str:
    r = _triaged(PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed)
    ff = r.first_failing
    if ff is None:
        return "Align kernels by the graph op they run (no regression to show it on here)."
    base, cand = r.baseline, r.candidate
    group = next(g for g in align(base, cand) if g.anchor == ff.kernel)
    new = [k.name for k in group.candidate if k.name not in {b.name for b in group.baseline}]
    split = (
        f"`{new[0]}` split out of it, {fmt_time(sum(k.predicted_s for k in group.candidate[1:]))}"
        if new
        else "no kernel split out"
    )
    return (
        f"Align kernels by the graph op they run: in `{PANEL_SCENARIO}`, `{ff.kernel}` runs as "
        f"{len(group.baseline)} kernel before and {len(group.candidate)} after ({split}), and "
        f"the new kernel's time is charged to the GEMM it came from: its family "
        f"`{ff.family or ff.kernel}` x{ff.count} moves {fmt_time(ff.delta_s)}."
    )


def _share_rule() -> str:
    r = measured_triage()
    shares = ", ".join(f"{m.kernel} {m.share:.0%}" for m in r.mechanisms)
    if len(r.mechanisms) < 2:
        return (
            "The headline mechanism is the one carrying the largest material share of the "
            f"regression (the real pair has {len(r.mechanisms)} material share(s): {shares})."
        )
    top = r.mechanisms[0]
    return (
        "The headline mechanism is the one carrying the largest material share of the "
        f"regression, not the first in execution order: the real pair's material shares are "
        f"{shares} (kernel time summed over streams, so they overlap), and the headline is "
        f"`{top.kernel}`. A class spread thinly over many kernels counts as a whole: each share "
        "is a whole category's change, not one kernel's."
    )


def _evidence_rule() -> str:
    owner_case = _triaged("eager-launch", SCENARIOS["eager-launch"].changed)
    control = _triaged("unchanged", SCENARIOS["unchanged"].changed)
    ff = owner_case.first_failing
    named = (
        f"`eager-launch`'s `{ff.mechanism}` names the {owner_case.owner.role} (closure "
        f"artifact: {owner_case.owner.closure_artifact})"
        if ff is not None and owner_case.owner is not None
        else "a mechanism class names its owner"
    )
    missing = control.missing[0].split(" (")[0] if control.missing else ""
    verdict = (
        f"the `unchanged` control regressed nothing (first failing: "
        f"{control.first_failing.mechanism if control.first_failing else 'none'}) and is still "
        f"*{control.decision}*: it lacks {missing}"
        if missing
        else f"the `unchanged` control is *{control.decision}*"
    )
    return (
        f"The mechanism class names the owner and the closure artifact: {named}. The guardrails "
        f"and the evidence decide ship / flag / roll back, and missing evidence never reads as "
        f"ship: {verdict}."
    )


def _noise_rule() -> str:
    synth = _synthetic_measured()
    real = measured_triage()
    h = synth.headline()
    s = real.shift
    run = read_pair_trace(V100_TRACE)[0]
    walls = [it.wall_s for it in run.steady_iterations]
    m = real.candidate.measurement
    gemm = dict(m.category_steps_s).get("gemm", ()) if m is not None else ()
    spans = (
        f" (on the V100 its GEMM time per step spans {fmt_time(min(gemm))}-"
        f"{fmt_time(max(gemm))} while its step period spans {fmt_time(min(walls))}-"
        f"{fmt_time(max(walls))})"
        if gemm
        else ""
    )
    paired = (
        f"the real pair's steps differ by {fmt_time(s.estimate_s)} on average (95% interval "
        f"{fmt_time(s.low_s)} to {fmt_time(s.high_s)}, {s.positive} of {s.pairs} steps slower): "
        f"{'beyond' if s.beyond_noise else 'within'} the noise, though the interval is wide"
        if s is not None
        else "the real pair has no per-step times to pair"
    )
    return (
        "Measured evidence carries its noise: two traces are compared step by step (step i "
        "against step i, as `workbench trace A --against B` does), and a step-time change "
        "counts only when the 95% interval of the per-step differences excludes 0, whatever "
        f"its width. The synthetic pair's interval is ±{h['noise']:.1%} around "
        f"{h['change']:+.1%}; {paired}. Its kernel categories are each judged by the same "
        f"paired comparison of their own per-step times{spans}."
    )


def takeaways() -> Claim:
    """The lesson's key takeaways, each rendered from the figures that show it (Markdown)."""
    rules = (_tags_rule(), _align_rule(), _share_rule(), _evidence_rule(), _noise_rule())
    return Claim("\n".join(f"- {rule}" for rule in rules))


def _wrong_group_pitfall() -> str:
    wrong = next(o for o in panel_outcomes() if o.move.control == "changed" and o.move.end
                 not in ("(none)", SCENARIOS[o.scenario].changed))  # fmt: skip
    verdict = "still refuses" if wrong.refused else "triages it anyway"
    return (
        f"Declaring `--changed` for the wrong group: `{wrong.scenario}` declared "
        f"`{wrong.move.end}` {verdict}, because the tags that differ "
        f"({', '.join(f'`{m}`' for m in wrong.mismatched[:2])}) are outside it."
    )


def _first_kernel_pitfall() -> str:
    r = _triaged(PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed)
    groups = align(r.baseline, r.candidate)
    moved = [g for g in groups if g.delta_s != 0]
    ff = r.first_failing
    if not moved or ff is None:
        return "Blaming the first kernel that changed, or the biggest kernel (nothing moved here)."
    first = moved[0]
    total = ff.total_delta_s
    biggest = max(r.baseline.kernels, key=lambda k: k.predicted_s)
    big = next((g for g in groups if g.anchor == biggest.name), None)
    big_delta = big.delta_s if big is not None else 0.0
    return (
        "Blaming the first kernel that changed, or the biggest kernel, instead of the mechanism "
        f"with the largest share: in `{PANEL_SCENARIO}` the first kernel that moved, "
        f"`{first.anchor}`, moved {fmt_time(first.delta_s)} ({first.delta_s / total:.1%} of the "
        f"regression); the biggest kernel, `{biggest.name}`, moved {fmt_time(abs(big_delta))}; "
        f"the headline mechanism carries {ff.share:.0%}, on the family "
        f"`{ff.family or ff.kernel}`."
    )


def _window_pitfall() -> str:
    run = read_pair_trace(V100_TRACE)[0]
    w = list(host_windows(run).values())
    overlaps = [a[1] - b[0] for a, b in pairwise(w) if a[1] > b[0]]
    naive, tool = naive_step_s(run), run.median_iteration_s()
    if not overlaps:
        return (
            "Reading a measured step as first-to-last GPU activity of its host-side step: on "
            "the V100 trace those windows do not overlap, but they would when the GPU lags."
        )
    return (
        "Reading a measured step as first-to-last GPU activity of its host-side step: on the "
        f"V100 trace {len(overlaps)} of {len(w) - 1} consecutive windows overlap (by up to "
        f"{fmt_time(max(overlaps))}), so that reading gives a {fmt_time(naive)} step where the "
        f"GPU's step period is {fmt_time(tool)} ({naive / tool - 1:+.0%}), and one step's work "
        "is counted as the next one's idle."
    )


def _predicted_pitfall() -> str:
    synth = _synthetic_measured()
    predicted = _triaged(PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed)
    m = synth.candidate.measurement
    how = (
        f"the measured ones say how (`{m.backend}`, {m.repeats} repeats) and carry a "
        f"{synth.headline()['noise']:.1%} noise"
        if m is not None
        else "the measured ones say how"
    )
    shown = "none" if predicted.candidate.measurement is None else "one"
    return (
        "Reading a predicted regression as a measured one: records say which times were "
        f"measured: the predicted `{PANEL_SCENARIO}` records carry {shown} (noise "
        f"{predicted.noise:.0%}), {how}."
    )


def pitfalls() -> Claim:
    """The lesson's pitfalls, each rendered from the figures that show it (Markdown)."""
    rules = (
        _wrong_group_pitfall(),
        _first_kernel_pitfall(),
        _window_pitfall(),
        _predicted_pitfall(),
    )
    return Claim("\n".join(f"- {rule}" for rule in rules))
