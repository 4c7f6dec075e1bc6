"""Lesson 13's Timeloop section: the ISPASS-2020 exercise files, read and searched as they are.

The files (arch, problem, Accelergy's ERT and ART, the mapper's reference answer and its stats)
are those ``tests/data/timeloop/README.md`` names (timeloop-accelergy-exercises, commit
2d55108, MIT licence). A student loads a spec, compares the model with Timeloop's reference
outputs, and must write a mapping with lower energy-delay than :func:`greedy`'s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import pandas as pd

from workbench.exercises._check import _LAST, CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import DATA
from workbench.exercises._text import LessonText
from workbench.scheduling.timeloop import (
    Arch,
    Constraint,
    Mapping,
    ModelResult,
    TimeloopSpecError,
    mapping_from_text,
    model,
    read_arch,
    read_art,
    read_constraints,
    read_ert,
    read_mapping,
    read_problem,
)
from workbench.scheduling.timeloop.mapfmt import map_text, map_yaml
from workbench.scheduling.timeloop.reference import ReferenceStats, read_stats
from workbench.scheduling.timeloop.search import SearchResult, greedy, search

__all__ = [
    "EXERCISES",
    "TimeloopExercise",
    "check_beats_greedy",
    "greedy_map_claim",
    "reference_table",
    "search_claim",
    "timeloop_claim",
    "timeloop_exercise",
]

_TEXT = LessonText("lesson13")
TIMELOOP_DATA = DATA / "timeloop"
#: key -> (folder, arch, problem, constraints or None, reference output folder).
EXERCISES = {
    "05": (
        "05-mapper-conv1d+oc-3level",
        "arch/3level.arch.yaml",
        "prob/conv1d+oc.prob.yaml",
        "constraints/null.constraints.yaml",
        "ref-output/null",
    ),
    "06": (
        "06-mapper-convlayer-eyeriss",
        "arch/eyeriss_like.yaml",
        "prob/VGG02_layer5.yaml",
        None,
        "ref-output",
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeloopExercise:
    """One mapper exercise's files, read: the spec, the tables, Timeloop's answer and stats."""

    key: str
    arch: Arch
    problem: object
    constraints: tuple[Constraint, ...]
    ert: dict[str, dict[str, float]]
    art: dict[str, float]
    reference_mapping: Mapping
    reference: ReferenceStats

    def run(self, mapping: Mapping) -> ModelResult:
        """The model's figures of ``mapping`` on this spec."""
        return model(self.arch, self.problem, mapping, self.ert, self.art)  # type: ignore[arg-type]


@functools.cache
def timeloop_exercise(key: str) -> TimeloopExercise:
    """Read exercise ``key`` (``05`` or ``06``) of the ISPASS-2020 tutorial."""
    folder, arch_f, prob_f, cons_f, ref_f = EXERCISES[key]
    d = TIMELOOP_DATA / folder
    arch, prob = read_arch(d / arch_f), read_problem(d / prob_f)
    ref = d / ref_f
    return TimeloopExercise(
        key=key,
        arch=arch,
        problem=prob,
        constraints=read_constraints(d / cons_f) if cons_f else (),
        ert=read_ert(ref / "timeloop-mapper.ERT.yaml"),
        art=read_art(ref / "timeloop-mapper.ART.yaml"),
        reference_mapping=read_mapping(ref / "timeloop-mapper.map.yaml", arch, prob),
        reference=read_stats(ref / "timeloop-mapper.stats.txt"),
    )


@functools.cache
def _greedy_and_best(key: str) -> tuple[SearchResult, SearchResult]:
    """The greedy mapping and the search's best (edp) on exercise ``key`` (fixed seed)."""
    ex = timeloop_exercise(key)
    args = (ex.arch, ex.problem, ex.constraints)
    return greedy(*args, ex.ert), search(*args, "edp", ex.ert)  # type: ignore[arg-type]


def reference_table(ex: TimeloopExercise) -> pd.DataFrame:
    """The model on Timeloop's own answer beside Timeloop's stats file: cycles, energy, EDP."""
    r, ref = ex.run(ex.reference_mapping), ex.reference
    rows = [
        ("cycles", float(r.cycles), float(ref.cycles)),
        ("utilization", r.utilization, ref.utilization),
        ("energy_uJ", (r.energy_pj or 0.0) * 1e-6, ref.energy_uj),
        ("edp_J_cycles", r.edp_j_cycles or 0.0, ref.edp_j_cycles),
    ]
    fj = r.fj_per_compute()
    rows += [(f"fJ/MAC {k}", fj[k], v) for k, v in ref.fj_per_compute.items()]
    t = pd.DataFrame(rows, columns=["figure", "workbench", "timeloop"]).set_index("figure")
    return t.map(lambda v: f"{v:.6g}")


def timeloop_claim(ex: TimeloopExercise) -> Claim:
    """How close the model is to the reference, and the design's area and energy-delay."""
    r = ex.run(ex.reference_mapping)
    ours, theirs = r.fj_per_compute(), ex.reference.fj_per_compute
    worst = max(abs(ours[k] - v) / v for k, v in theirs.items() if v > 0)
    areas = {lv.name: lv.area_um2 or 0.0 for lv in r.levels} | {r.compute: r.compute_area_um2}
    top = max(areas, key=lambda k: areas[k] or 0.0)
    return _TEXT.claim(
        "timeloop",
        cycles=r.cycles,
        same_cycles=r.cycles == ex.reference.cycles,
        worst_pct=100 * worst,
        energy_uj=(r.energy_pj or 0.0) * 1e-6,
        edp=r.edp_j_cycles,
        area_mm2=(r.area_um2 or 0.0) * 1e-6,
        top=top,
        top_share=(areas[top] or 0.0) / (r.area_um2 or 1.0),
    )


def greedy_map_claim(key: str = "05") -> Claim:
    """The greedy mapping of exercise ``key`` as a Timeloop mapping file, and its EDP."""
    ex = timeloop_exercise(key)
    g = _greedy_and_best(key)[0]
    return _TEXT.claim(
        "greedy_map",
        nest=map_text(ex.arch, ex.problem, g.mapping),  # type: ignore[arg-type]
        spec=map_yaml(ex.arch, ex.problem, g.mapping).strip(),  # type: ignore[arg-type]
        edp=g.result.edp_j_cycles,
    )


def check_beats_greedy(answer: object, key: str = "05") -> CheckResult:
    """Passes when ``answer`` (Timeloop mapping YAML text) is valid and beats greedy's EDP.

    ``reveal()`` shows the search's best mapping.
    """
    ex = timeloop_exercise(key)
    g, best = _greedy_and_best(key)
    bar = g.result.edp_j_cycles or 0.0
    name = "mapping with lower energy-delay than the greedy one"
    verdict: str | None = None
    if answer is not None:
        try:
            text = str(answer)
            mine = ex.run(mapping_from_text(text, ex.arch, ex.problem, "your mapping"))  # type: ignore[arg-type]
            edp = mine.edp_j_cycles or 0.0
            ok = edp < bar
            verdict = "beats greedy" if ok else f"EDP {edp:.4g} J*cycles, greedy's {bar:.4g}"
        except (TimeloopSpecError, ValueError) as exc:
            verdict = str(exc)
    hints = {k: str(v) for k, v in dict(_TEXT.hints("beat_greedy")).items()}
    result = compare(name, verdict, "beats greedy", hint=hints["hint"])
    # NOTE: the second hint as written (compare's graded prefix is for named answers), and
    # reveal() shows the search's mapping, a file the student can read back
    more = (hints["hint"], hints["hint2"]) if result.attempt >= 2 else result.hints
    shown = map_yaml(ex.arch, ex.problem, best.mapping)  # type: ignore[arg-type]
    result = replace(result, hints=more, expected=shown)
    _LAST[name] = result
    return result


def search_claim(key: str = "05") -> Claim:
    """Greedy, the search, and Timeloop's mapper on exercise ``key``: energy-delay of each."""
    ex = timeloop_exercise(key)
    g, s = _greedy_and_best(key)
    t = ex.run(ex.reference_mapping)
    return _TEXT.claim(
        "search",
        greedy=g.result.edp_j_cycles,
        found=s.result.edp_j_cycles,
        evaluated=s.evaluated,
        timeloop=t.edp_j_cycles,
        nest=map_text(ex.arch, ex.problem, s.mapping),  # type: ignore[arg-type]
    )
