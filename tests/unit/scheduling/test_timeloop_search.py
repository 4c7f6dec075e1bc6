"""The mapspace search against Timeloop's mapper on ISPASS-2020 exercises 05 and 06.

The bar is the mapper's own answer (``ref-output/**/timeloop-mapper.map.yaml``, whose figures
the golden test shows our model reproduces exactly): the search's energy-delay must be at most
that mapping's, and at most the EDP Timeloop printed in its stats file.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.scheduling.timeloop import (
    model,
    read_arch,
    read_constraints,
    read_ert,
    read_mapping,
    read_problem,
)
from workbench.scheduling.timeloop.mapfmt import map_text, map_yaml
from workbench.scheduling.timeloop.mapspace import Space
from workbench.scheduling.timeloop.reference import read_stats
from workbench.scheduling.timeloop.search import greedy, search

DATA = Path(__file__).parents[2] / "data" / "timeloop"
EX05 = DATA / "05-mapper-conv1d+oc-3level"
EX06 = DATA / "06-mapper-convlayer-eyeriss"
CONSTRAINTS = {
    "baked": "conv1d+oc-3level-1mapping",
    "freebypass": "conv1d+oc-3level-freebypass",
    "null": "null",
}


def _ex05(name: str):
    arch, prob = (
        read_arch(EX05 / "arch/3level.arch.yaml"),
        read_problem(EX05 / "prob/conv1d+oc.prob.yaml"),
    )
    cons = read_constraints(EX05 / f"constraints/{CONSTRAINTS[name]}.constraints.yaml")
    ref = EX05 / "ref-output" / name
    return arch, prob, cons, read_ert(ref / "timeloop-mapper.ERT.yaml"), ref


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_exercise_05_search_at_least_as_good_as_timeloop_mapper(name: str) -> None:
    """EDP <= the mapper's answer under each constraints file (and its printed EDP)."""
    arch, prob, cons, ert, ref = _ex05(name)
    theirs = model(arch, prob, read_mapping(ref / "timeloop-mapper.map.yaml", arch, prob), ert)
    found = search(arch, prob, cons, "edp", ert)
    assert found.result.edp_j_cycles <= theirs.edp_j_cycles * (1 + 1e-12)
    printed = read_stats(ref / "timeloop-mapper.stats.txt").edp_j_cycles
    assert found.result.edp_j_cycles <= printed * 1.005  # printed to 3 significant figures


def test_exercise_05_baked_constraints_leave_one_mapping() -> None:
    """The fully constrained space has one point: the search evaluates only it.

    Timeloop's answer orders the RegisterFile's two loops the other way round from the
    constraint's permutation (its mapper drops orders that change nothing); the figures agree.
    """
    arch, prob, cons, ert, ref = _ex05("baked")
    found = search(arch, prob, cons, "edp", ert)
    assert found.evaluated == 1
    theirs = model(arch, prob, read_mapping(ref / "timeloop-mapper.map.yaml", arch, prob), ert)
    assert found.result.levels == theirs.levels
    assert found.result.cycles == theirs.cycles


def test_exercise_06_eyeriss_search_beats_timeloop_mapper() -> None:
    """On Eyeriss (the arch's own constraints) EDP and energy beat the mapper's answer."""
    arch, prob = (
        read_arch(EX06 / "arch/eyeriss_like.yaml"),
        read_problem(EX06 / "prob/VGG02_layer5.yaml"),
    )
    ert = read_ert(EX06 / "ref-output/timeloop-mapper.ERT.yaml")
    theirs = model(
        arch, prob, read_mapping(EX06 / "ref-output/timeloop-mapper.map.yaml", arch, prob), ert
    )
    found = search(arch, prob, (), "edp", ert)
    assert found.result.edp_j_cycles < theirs.edp_j_cycles
    assert found.result.cycles <= theirs.cycles
    assert (
        found.result.edp_j_cycles
        < read_stats(EX06 / "ref-output/timeloop-mapper.stats.txt").edp_j_cycles
    )
    g = greedy(arch, prob, (), ert)
    assert found.result.edp_j_cycles < g.result.edp_j_cycles


def test_found_mapping_written_and_read_back_gives_the_same_figures(tmp_path: Path) -> None:
    """map_yaml is a Timeloop mapping file: read back, it models to the same figures."""
    arch, prob, cons, ert, _ = _ex05("null")
    found = search(arch, prob, cons, "energy", ert, budget=400)
    path = tmp_path / "best.map.yaml"
    path.write_text(map_yaml(arch, prob, found.mapping), encoding="utf-8")
    again = read_mapping(path, arch, prob)
    assert again == found.mapping
    assert model(arch, prob, again, ert).energy_pj == found.result.energy_pj
    assert "<< Compute >>" in map_text(arch, prob, found.mapping)


def test_search_is_deterministic_and_objectives_differ() -> None:
    """Same seed, same answer; delay's answer is never slower than energy's."""
    arch, prob, cons, ert, _ = _ex05("null")
    a = search(arch, prob, cons, "edp", ert, budget=300)
    b = search(arch, prob, cons, "edp", ert, budget=300)
    assert a.mapping == b.mapping
    assert a.evaluated == b.evaluated
    d = search(arch, prob, cons, "delay", ert, budget=300)
    e = search(arch, prob, cons, "energy", ert, budget=300)
    assert d.result.cycles <= e.result.cycles
    assert e.result.energy_pj <= d.result.energy_pj


@pytest.mark.parametrize(("objective", "ert", "budget"), [("edp", None, 10), ("speed", {}, 10)])
def test_search_refuses_bad_requests(objective, ert, budget) -> None:
    """Energy without an ERT, or an unknown objective, is one clear error."""
    arch, prob, cons, _, _ = _ex05("null")
    with pytest.raises(ValueError, match="objective"):
        search(arch, prob, cons, objective, ert, budget=budget)


# --- the example designs: a 16 x 16 mesh, where the X / Y split of a fan-out matters ---------

DESIGNS = Path(__file__).parents[2] / "data" / "timeloop_designs"
MESH_DESIGNS = ("simple_output_stationary", "simple_weight_stationary")


def _design(name: str):
    arch = read_arch(DESIGNS / name / "arch.yaml")
    prob = read_problem(DESIGNS / "_include/default_problem.yaml")
    ref = DESIGNS / name / "ref_outputs/default_problem"
    return arch, prob, read_ert(ref / "timeloop-mapper.ERT.yaml"), ref


@pytest.mark.parametrize("name", [*MESH_DESIGNS, "eyeriss_like"])
def test_arch_constraints_read_as_timeloops_front_end_processed_them(name: str) -> None:
    """Our reading of arch.yaml pins the same mesh axes and bypasses as Timeloop's own.

    ``parsed-processed-input.yaml`` is the spec after Timeloop's v0.4 front end: there the
    16 x 16 designs' ``permutation: [C, M], split: 1`` reads ``NQPSRCM``, so C and M both go on
    mesh Y (not C on X), and each ``!Parallel`` register bypasses what it does not keep.
    """
    arch, prob, _, ref = _design(name)
    ours = Space(arch, prob, ())
    processed = read_constraints(ref / "parsed-processed-input.yaml")
    theirs = Space(replace(arch, constraints=(), branch_keeps=()), prob, processed)
    assert ours.axis == theirs.axis
    assert ours.bypass_forced == theirs.bypass_forced
    assert (ours.fixed, ours.upper, ours.lower) == (theirs.fixed, theirs.upper, theirs.lower)
    if name in MESH_DESIGNS:
        fan = len(ours.storages)
        assert (ours.axis[fan, "C"], ours.axis[fan, "M"]) == ("Y", "Y")


@pytest.mark.parametrize("name", MESH_DESIGNS)
def test_mesh_design_search_at_least_as_good_as_timeloop_mapper(name: str) -> None:
    """On a 16 x 16 mesh under the design's constraints, EDP <= the mapper's answer."""
    arch, prob, ert, ref = _design(name)
    theirs = model(arch, prob, read_mapping(ref / "timeloop-mapper.map.yaml", arch, prob), ert)
    found = search(arch, prob, (), "edp", ert)
    assert found.result.edp_j_cycles <= theirs.edp_j_cycles * (1 + 1e-12)
    x_loops = [x for _, x, _ in found.mapping.spatial]
    assert x_loops == [()]  # C and M are pinned to Y, as Timeloop reads the split


def test_split_over_both_mesh_axes_found_where_one_axis_cannot_hold_it() -> None:
    """Without the design's spatial constraint, dims go on both axes and fill more than 16 PEs.

    One axis holds at most 16 of the 256 PEs, so a mapping that keeps more than 16 busy splits
    the fan-out's dims over X and Y; the search finds one, faster than the best mapping under
    the design's constraint (every dim on Y). C=3 with M=16 fits 16 x 16 only split.
    """
    arch, prob, ert, _ = _design("simple_output_stationary")
    free = replace(arch, constraints=tuple(c for c in arch.constraints if c.kind != "spatial"))
    pinned = search(arch, prob, (), "delay", ert, budget=1500)
    found = search(free, prob, (), "delay", ert, budget=1500)
    ((_, x, y),) = found.mapping.spatial
    used = [math.prod(b for _, b in loops) for loops in (x, y)]
    assert min(used) > 1
    assert max(used) <= 16
    assert found.result.utilization * 256 > 16
    assert pinned.result.utilization * 256 <= 16
    assert found.result.cycles < pinned.result.cycles
    c3m16 = _factors(prob, C=3, M=16)
    assert Space(free, prob, ())._mesh_split(c3m16, 0) is not None
    narrow = replace(free, fanouts=(replace(free.fanouts[0], mesh_y=1),))
    assert Space(narrow, prob, ())._mesh_split(c3m16, 0) is None


def _factors(prob, **f: int) -> tuple[int, ...]:
    return tuple(f.get(d, 1) for d, _ in prob.bounds)


TLA = Path(__file__).parents[2] / "data" / "timeloop_accelergy"
TLA_VALUES = {
    "intmac": {"mac_class": "intmac", "input_weight_datawidth": 8, "psum_datawidth": 16},
    "fpmac": {"mac_class": "fpmac", "input_weight_datawidth": 32, "psum_datawidth": 32},
}


@pytest.mark.parametrize("variant", sorted(TLA_VALUES))
def test_templated_exercise_search_at_least_as_good_as_timeloop_mapper(variant: str) -> None:
    """The timeloop+accelergy exercise's two variants (its arch a template): EDP <= the mapper's."""
    arch = read_arch(TLA / "arch/arch.yaml", TLA_VALUES[variant])
    prob = read_problem(TLA / "prob/prob.yaml")
    ref = TLA / "ref-output" / variant
    ert = read_ert(ref / "timeloop-mapper.ERT.yaml")
    theirs = model(arch, prob, read_mapping(ref / "timeloop-mapper.map.yaml", arch, prob), ert)
    found = search(arch, prob, (), "edp", ert)
    assert found.result.edp_j_cycles <= theirs.edp_j_cycles * (1 + 1e-12)
    printed = read_stats(ref / "timeloop-mapper.stats.txt").edp_j_cycles
    assert found.result.edp_j_cycles <= printed * 1.005
