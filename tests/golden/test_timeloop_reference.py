"""``workbench dataflow model`` on Timeloop's own exercise files, against their outputs.

The ISPASS-2020 exercises, three of the repository's example designs (``design-*`` cases) and
the timeloop+accelergy exercise in the newer templated format (``accelergy-*`` cases).

Source: github.com/Accelergy-Project/timeloop-accelergy-exercises, commit
2d5510807128e9bd5f1cad0705cdf2ec4612fd4e, folder
``workspace/tutorial_exercises/01_accelergy_timeloop_2020_ispass/timeloop/`` (MIT licence), copied
unchanged into ``tests/data/timeloop/`` (its README lists the files). The inputs are read as they
are: the architecture (``arch/*.yaml``), the problem (``prob/*.yaml``), the mapping
(``map/*.map.yaml``, or for the mapper exercises the mapper's answer
``ref-output/*/timeloop-mapper.map.yaml``) and Accelergy's ERT (``ref-output/*ERT.yaml``). The
expected figures are Timeloop's, read from the reference ``*.stats.txt`` written by Timeloop:
cycles, utilisation, every (level, tensor) read / fill / update count per instance, the
instances of each level, and the ``fJ/Compute`` energy of each level.

Cycles and every access count must match exactly; energy per level within 1 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.scheduling.timeloop import (
    model,
    read_arch,
    read_art,
    read_ert,
    read_mapping,
    read_problem,
)
from workbench.scheduling.timeloop.reference import read_stats

DATA = Path(__file__).parents[1] / "data" / "timeloop"

# (exercise folder, arch, problem, mapping, reference folder); paths inside the folder.
CASES = {
    "00-1level": (
        "00-model-conv1d-1level",
        "arch/1level.arch.yaml",
        "prob/conv1d.prob.yaml",
        "map/conv1d-1level.map.yaml",
        "ref-output",
    ),
    "01-2level-os": (
        "01-model-conv1d-2level",
        "arch/2level.arch.yaml",
        "prob/conv1d.prob.yaml",
        "map/conv1d-2level-os.map.yaml",
        "ref-output/os",
    ),
    "01-2level-ws": (
        "01-model-conv1d-2level",
        "arch/2level.arch.yaml",
        "prob/conv1d.prob.yaml",
        "map/conv1d-2level-ws.map.yaml",
        "ref-output/ws",
    ),
    "02-2level-no-tiling": (
        "02-model-conv1d+oc-2level",
        "arch/2level.arch.yaml",
        "prob/conv1d+oc.prob.yaml",
        "map/conv1d+oc-2level-os.map.yaml",
        "ref-output/no-tiling",
    ),
    "02-2level-tiling": (
        "02-model-conv1d+oc-2level",
        "arch/2level.arch.yaml",
        "prob/conv1d+oc.prob.yaml",
        "map/conv1d+oc-2level-os-tiled.map.yaml",
        "ref-output/tiling",
    ),
    "03-3level-bypass": (
        "03-model-conv1d+oc-3level",
        "arch/3level.arch.yaml",
        "prob/conv1d+oc.prob.yaml",
        "map/conv1d+oc-3level-bypass.map.yaml",
        "ref-output/bypass",
    ),
    "03-3level-no-bypass": (
        "03-model-conv1d+oc-3level",
        "arch/3level.arch.yaml",
        "prob/conv1d+oc.prob.yaml",
        "map/conv1d+oc-3level.map.yaml",
        "ref-output/no-bypass",
    ),
    "04-spatial-C-partitioned": (
        "04-model-conv1d+oc-3levelspatial",
        "arch/3levelspatial.arch.yaml",
        "prob/conv1d+oc+ic.prob.yaml",
        "map/conv1d+oc+ic-3levelspatial-cp-ws.map.yaml",
        "ref-output/cp",
    ),
    "04-spatial-K-partitioned": (
        "04-model-conv1d+oc-3levelspatial",
        "arch/3levelspatial.arch.yaml",
        "prob/conv1d+oc+ic.prob.yaml",
        "map/conv1d+oc+ic-3levelspatial-kp-ws.map.yaml",
        "ref-output/kp",
    ),
}
for _name in ("baked", "freebypass", "null"):
    CASES[f"05-mapper-{_name}"] = (
        "05-mapper-conv1d+oc-3level",
        "arch/3level.arch.yaml",
        "prob/conv1d+oc.prob.yaml",
        f"ref-output/{_name}/timeloop-mapper.map.yaml",
        f"ref-output/{_name}",
    )
CASES["06-eyeriss-vgg02-layer5"] = (
    "06-mapper-convlayer-eyeriss",
    "arch/eyeriss_like.yaml",
    "prob/VGG02_layer5.yaml",
    "ref-output/timeloop-mapper.map.yaml",
    "ref-output",
)

# The example designs (tests/data/timeloop_designs/, same repository and commit, folder
# workspace/example_designs/example_designs/): the mapper's answer for the default layer on
# each design; simple_weight_stationary and simple_output_stationary fan out over a 16 x 16 mesh.
for _design in ("eyeriss_like", "simple_output_stationary", "simple_weight_stationary"):
    CASES[f"design-{_design}"] = (
        f"../timeloop_designs/{_design}",
        "arch.yaml",
        "../_include/default_problem.yaml",
        "ref_outputs/default_problem/timeloop-mapper.map.yaml",
        "ref_outputs/default_problem",
    )

# The timeloop+accelergy exercise (tests/data/timeloop_accelergy/, same repository and commit):
# its arch.yaml is a template whose values come from its run_example.py's jinja_parse_data.
VALUES = {
    "accelergy-intmac": {"mac_class": "intmac", "input_weight_datawidth": 8, "psum_datawidth": 16},
    "accelergy-fpmac": {"mac_class": "fpmac", "input_weight_datawidth": 32, "psum_datawidth": 32},
}
for _case in VALUES:
    CASES[_case] = (
        "../timeloop_accelergy",
        "arch/arch.yaml",
        "prob/prob.yaml",
        f"ref-output/{_case.split('-')[1]}/timeloop-mapper.map.yaml",
        f"ref-output/{_case.split('-')[1]}",
    )


def _run(case: str):
    folder, arch_f, prob_f, map_f, ref = CASES[case]
    d = DATA / folder
    arch, prob = read_arch(d / arch_f, VALUES.get(case)), read_problem(d / prob_f)
    ert = read_ert(next((d / ref).glob("*.ERT.yaml")))
    art = read_art(next((d / ref).glob("*.ART.yaml")))
    result = model(arch, prob, read_mapping(d / map_f, arch, prob), ert, art)
    return result, read_stats(next((d / ref).glob("*.stats.txt")))


@pytest.mark.parametrize("case", sorted(CASES))
def test_cycles_instances_and_access_counts_match_timeloop(case: str) -> None:
    """Cycles, utilisation, instances and every (level, tensor) count equal Timeloop's."""
    result, ref = _run(case)
    assert result.cycles == ref.cycles
    assert round(100 * result.utilization, 2) == pytest.approx(100 * ref.utilization)
    ours = {(lv.name, t): (r, f, u) for lv in result.levels for t, r, f, u in lv.accesses}
    for key, counts in ref.accesses.items():
        got = ours.get(key, (0, 0, 0))
        assert got == counts, f"{case} {key}: ours {got}, Timeloop {counts}"
    nonzero = {k for k, v in ours.items() if v != (0, 0, 0)}
    assert nonzero <= set(ref.accesses), "a level holds a tensor the reference does not"
    for lv in result.levels:
        assert lv.instances == ref.instances[lv.name], lv.name
    assert result.compute_instances == ref.instances[result.compute]


@pytest.mark.parametrize("case", sorted(CASES))
def test_energy_per_level_within_1_percent_of_timeloop(case: str) -> None:
    """Energy of each level (fJ per MAC, Timeloop's summary block) within 1 %, and the EDP."""
    result, ref = _run(case)
    ours = result.fj_per_compute()
    assert set(ours) == set(ref.fj_per_compute)
    for level, fj in ref.fj_per_compute.items():
        assert ours[level] == pytest.approx(fj, rel=0.01, abs=0.01), (
            f"{case} {level}: ours {ours[level]:.2f} fJ, Timeloop {fj}"
        )
    # The summary prints EDP to 3 significant figures and energy to 0.01 uJ.
    assert result.edp_j_cycles == pytest.approx(ref.edp_j_cycles, rel=0.01)
    assert result.energy_pj * 1e-6 == pytest.approx(ref.energy_uj, rel=0.01, abs=0.006)
