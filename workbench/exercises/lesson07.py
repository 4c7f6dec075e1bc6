"""Lesson 07, preparing a senior design review: helpers, computed claims and self-checks."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim, gated
from workbench.exercises._lesson07_release import (
    CANARY_SCALE,
    criteria_table,
    decision_check_name,
    decision_claim,
    release_report,
)
from workbench.exercises._shared import mapping
from workbench.exercises._text import LessonText
from workbench.hw import load_hardware
from workbench.mapper import KernelMapping, ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.review import SCENARIOS, load_guardrails
from workbench.review.decision.verdict import TriageReport

__all__ = [
    "CANARY_SCALE",
    "DOMINANT_EXERCISE",
    "PANEL_MOVES",
    "PANEL_START",
    "PanelStep",
    "barrier_cost_us",
    "check_barrier_cost",
    "check_dominant_bottleneck",
    "check_release_decision",
    "criteria_table",
    "decision_claim",
    "dominant_bottleneck",
    "dominant_claim",
    "panel_claim",
    "panel_report",
    "panel_steps",
    "review_mapping",
    "slice_pitfall_claim",
    "stale_pitfall_claim",
]

_TEXT = LessonText("lesson07")

#: The triage panel as the lesson builds it (``TriagePanel(scenario=...)``, no simulation).
PANEL_START = "unchanged"
#: The scenarios the lesson tells the student to switch the panel to, in order.
PANEL_MOVES = ("barrier-per-layer",)
#: Exercise 1's check name (its explanation is gated behind it).
DOMINANT_EXERCISE = "dominant bottleneck class"


def review_mapping(
    model: str = "gpt2",
    hardware_name: str = "h100-sxm",
    *,
    phase: str = "prefill",
    seq: int = 512,
    batch: int = 1,
) -> ModelMapping:
    """Map the model the review is about (default options)."""
    return map_model(build_graph(model, phase, batch=batch, seq=seq), load_hardware(hardware_name))


def dominant_bottleneck(mapping: ModelMapping) -> str:
    """The bottleneck class that holds the most predicted time (``bandwidth:<level>`` kept)."""
    time: dict[str, float] = {}
    for k in mapping.kernels:
        time[k.cost.bottleneck] = time.get(k.cost.bottleneck, 0.0) + k.cost.total_s
    return max(time, key=lambda c: time[c])


def dominant_claim(mapping: ModelMapping, *, contrast: str = "llama2-7b", seq: int = 2048) -> Claim:
    """Why ``mapping``'s dominant class is what it is, against a large model's prefill GEMMs.

    GPT-2's prefill GEMMs at 512 tokens are small: too few tiles to fill the chip more than
    once, so each core runs one tile and waits on its operand loads from L2
    (``bandwidth:l2``); lesson 02's prefill GEMMs (Llama-2-7B at 2,048 tokens) fill it many
    times over and are compute-bound. Both read from the mapper, on the same hardware.

    Returns:
        Markdown: the dominant class and its share of the step; its largest GEMM's shape,
        tiles, cores, waves and the engine's busy share of its pipeline; the same GEMM of
        ``contrast`` at ``seq`` tokens.
    """
    cls = dominant_bottleneck(mapping)
    held = sum(k.cost.total_s for k in mapping.kernels if k.cost.bottleneck == cls)

    def largest(m: ModelMapping, where: str | None) -> KernelMapping:
        gemms = [k for k in m.kernels if k.kernel.gemm is not None]
        pool = [k for k in gemms if where is None or k.cost.bottleneck == where] or gemms
        return max(pool, key=lambda k: k.cost.total_s)

    def facts(k: KernelMapping) -> dict[str, object]:
        g, t = k.kernel.gemm, k.tiling
        assert g is not None
        return {
            "name": k.kernel.name,
            "m": g.m,
            "n": g.n,
            "k": g.k,
            "tiles": t.tiles,
            "waves": t.waves,
            "tile": t.shape,
            "busy": k.cost.compute_s / k.cost.pipeline_s if k.cost.pipeline_s else 1.0,
            "cls": k.cost.bottleneck,
        }

    big = mapping_of(contrast, mapping.hardware.name, seq)
    small = largest(mapping, cls)
    same = [k for k in big.kernels if k.kernel.name == small.kernel.name]
    claim = _TEXT.claim(
        "dominant",
        cls=cls,
        share=held / mapping.time_s,
        model=mapping.graph.name,
        cores=mapping.hardware.matrix_engine.cores,
        small=facts(small),
        contrast=contrast,
        seq=seq,
        big=facts(same[0] if same else largest(big, None)),
    )
    # NOTE: it names the class Exercise 1 asks for: shown once that check passes.
    return gated(claim, after=DOMINANT_EXERCISE, label="Exercise 1")


def mapping_of(model: str, hardware_name: str, seq: int) -> ModelMapping:
    """``model``'s prefill at ``seq`` tokens on ``hardware_name`` (default options)."""
    return mapping(model, hardware_name, phase="prefill", seq=seq)


def check_dominant_bottleneck(
    mapping: ModelMapping, answer: str, *, strict: bool | None = None
) -> CheckResult:
    """Check which bottleneck class holds the most time in ``mapping`` (read from the pack)."""
    return compare(
        DOMINANT_EXERCISE,
        answer,
        dominant_bottleneck(mapping),
        **_TEXT.hints("dominant"),
        strict=strict,
    )


def check_release_decision(
    scenario: str,
    answer: str,
    *,
    simulate: bool = True,
    scale: float = 1.0,
    strict: bool | None = None,
) -> CheckResult:
    """Check the release decision (ship / ship behind a flag / cannot sign off / roll back).

    Args:
        scenario: Practice scenario name.
        answer: The learner's decision.
        simulate: Triage with the serving simulation (as the CLI does); ``False`` as the
            triage panel does by default.
        scale: Every built-in threshold times this (Exercise 2's team policy,
            :data:`CANARY_SCALE`); 1 for the built-in criteria the panel applies.
        strict: Raise on a wrong answer.
    """
    r = release_report(scenario, scale=scale, simulate=simulate)
    return compare(
        decision_check_name(scenario, scale=scale, simulate=simulate),
        answer,
        r.decision,
        synonyms={
            "roll back": ("rollback", "revert"),
            "ship behind a flag": ("flag", "ship with a flag", "behind a flag"),
            "cannot sign off": ("can't sign off", "cannot sign-off", "no sign off"),
        },
        hint=_TEXT.render("release_hint", simulate=simulate, scaled=scale != 1),
        hint2=_TEXT.render("release_hint2", scaled=scale != 1),
        strict=strict,
    )


# --- the panel's instruction, computed as the panel computes it ---------------------------------


@dataclass(frozen=True, slots=True)
class PanelStep:
    """One instruction for the triage panel: pick ``after`` in its scenario dropdown."""

    before: str
    after: str

    @property
    def instruction(self) -> str:
        """The instruction as the lesson says it (Markdown)."""
        return _TEXT.render("panel_instruction", scenario=self.after)


def panel_steps(
    start: str = PANEL_START, moves: tuple[str, ...] = PANEL_MOVES
) -> tuple[PanelStep, ...]:
    """The panel instructions as data, each from the scenario the previous one left."""
    steps, at = [], start
    for name in moves:
        if name not in SCENARIOS or name == at:
            raise WorkbenchError(f"panel step {at!r} -> {name!r}: not a different scenario")
        steps.append(PanelStep(at, name))
        at = name
    return tuple(steps)


def panel_report(scenario: str, *, simulate: bool = False) -> TriageReport:
    """The triage the panel shows for ``scenario`` (its declared change; no simulation)."""
    return release_report(scenario, simulate=simulate)


def _headline(r: TriageReport) -> str:
    h = r.headline()
    return _TEXT.render(
        "headline",
        before_us=r.baseline.model.time_s * 1e6,
        after_us=r.candidate.model.time_s * 1e6,
        compared=h["compared"],
        change=h["change"],
    )


def panel_claim(start: str = PANEL_START, moves: tuple[str, ...] = PANEL_MOVES) -> Claim:
    """What the panel shows at its start and after each of :func:`panel_steps`.

    The decision itself is left to the panel (Exercise 2 asks for it with the simulation).

    Returns:
        Markdown: the headline's time change and the first failing mechanism with its owner,
        at the start and after each step.
    """

    def where(r: TriageReport) -> str:
        ff = r.first_failing
        return _TEXT.render(
            "where",
            mechanism=ff.mechanism if ff else None,
            owner=r.owner.role if r.owner else "?",
        )

    first = panel_report(start)
    lines = [_TEXT.render("panel_open", start=start, headline=_headline(first), where=where(first))]
    for step in panel_steps(start, moves):
        r = panel_report(step.after)
        lines.append(
            _TEXT.render(
                "panel_step", instruction=step.instruction, headline=_headline(r), where=where(r)
            )
        )
    return Claim("\n".join(lines))


# --- exercise 3: the barrier build priced from first principles -----------------------------


def barrier_cost_us(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> float:
    """Microseconds the per-layer debugging barrier adds to one decode step (mapped twice)."""
    on = mapping(
        model, hardware_name, phase="decode", seq=seq, options=MapOptions(barrier_per_layer=True)
    )
    return (on.time_s - mapping(model, hardware_name, phase="decode", seq=seq).time_s) * 1e6


def check_barrier_cost(
    answer: float,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    seq: int = 2048,
    strict: bool | None = None,
) -> CheckResult:
    """Check the microseconds a barrier after every layer adds to a decode step, within 1 %.

    The expected value is the mapper's (:func:`barrier_cost_us`): the learner counts the
    syncs and prices one from the profile's overheads.
    """
    return compare(
        f"barrier build cost[{model},{hardware_name}] (µs)",
        answer,
        barrier_cost_us(model, hardware_name, seq=seq),
        rel_tol=0.01,
        **_TEXT.hints("barrier"),
        strict=strict,
    )


# --- pitfalls, computed ------------------------------------------------------------------------


def stale_pitfall_claim(
    model: str = "gpt2", hardware_name: str = "h100-sxm", *, seq: int = 512, other_seq: int = 1024
) -> Claim:
    """How the pack's headline figures move when the mapping changes (a typed figure would not).

    Returns:
        Markdown bullet: MFU and step time at ``seq`` and at ``other_seq`` tokens (prefill).
    """
    a = review_mapping(model, hardware_name, phase="prefill", seq=seq)
    b = review_mapping(model, hardware_name, phase="prefill", seq=other_seq)
    return _TEXT.claim(
        "stale_pitfall",
        mfu=a.mfu,
        us=a.time_s * 1e6,
        seq=seq,
        other_seq=other_seq,
        other_mfu=b.mfu,
        other_us=b.time_s * 1e6,
        points=abs(b.mfu - a.mfu) * 100,
    )


def slice_pitfall_claim(scenarios: tuple[str, ...] | None = None) -> Claim:
    """Per practice scenario, the step-time change on each judged slice of its matrix.

    Each judged slice's change is set against the step-time guardrail (flag and roll-back
    thresholds of the built-in guardrails file).

    Returns:
        Markdown bullet: the scenario whose judged slices differ most (the change at each),
        and whether any change is inside the guardrail on one slice and beyond it on another.
    """
    g = next(x for x in load_guardrails().guardrails if x.metric == "time_s")
    names = scenarios or tuple(n for n in SCENARIOS if n != "unchanged")
    spread = []
    split = []
    for name in names:
        r = panel_report(name)
        changes = [
            (row["slice"], row["candidate"]["time_s"] / row["baseline"]["time_s"] - 1)
            for row in r.matrix
            if row.get("judged", True) and row["baseline"].get("time_s")
        ]
        if len(changes) < 2:
            continue
        lo, hi = min(c for _, c in changes), max(c for _, c in changes)
        spread.append((hi - lo, name, changes))
        if lo <= g.flag_at < g.rollback_at < hi:
            split.append(name)
    if not spread:
        return _TEXT.claim("slice_none")
    _, name, changes = max(spread)
    return _TEXT.claim(
        "slice_pitfall",
        name=name,
        changes=changes,
        split=split,
        flag_at=g.flag_at,
        rollback_at=g.rollback_at,
    )
