"""The strict reader of Timeloop's spec files: what it builds, and one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.scheduling.timeloop import (
    TimeloopSpecError,
    read_arch,
    read_constraints,
    read_ert,
    read_mapping,
    read_problem,
)

DATA = Path(__file__).parents[2] / "data" / "timeloop"
EYERISS = DATA / "06-mapper-convlayer-eyeriss"
SPATIAL = DATA / "04-model-conv1d+oc-3levelspatial"


def test_every_shipped_spec_reads() -> None:
    """Every arch, problem, constraints and ERT file of the exercises is read without error."""
    for path in sorted(DATA.glob("*/arch/*.yaml")):
        assert read_arch(path).storages
    for path in sorted(DATA.glob("*/prob/*.yaml")):
        assert read_problem(path).macs > 0
    for path in sorted(DATA.glob("*/constraints/*.yaml")):
        read_constraints(path)
    for path in sorted(DATA.glob("*/ref-output/**/*ERT.yaml")):
        assert read_ert(path)


def test_eyeriss_fanouts_sit_below_the_global_buffer() -> None:
    """14 x 12 PEs below shared_glb: 168 scratchpads, one buffer; the Parallel spads in order."""
    arch = read_arch(EYERISS / "arch/eyeriss_like.yaml")
    assert [s.name for s in arch.storages] == [
        "DRAM", "shared_glb", "ifmap_spad", "weights_spad", "psum_spad"
    ]  # fmt: skip
    assert [(f.name, f.above, f.mesh_x, f.mesh_y) for f in arch.fanouts] == [
        ("inter_PE_column_spatial", "shared_glb", 14, 1),
        ("inter_PE_spatial", "shared_glb", 1, 12),
    ]
    assert [s.instances for s in arch.storages] == [1, 1, 168, 168, 168]
    assert arch.compute == "mac"
    assert arch.compute_instances == 168
    glb = arch.storage("shared_glb")
    assert (glb.block_words, glb.capacity_words, glb.read_bandwidth_words) == (8, 131072, 16.0)


def test_exercise_04_fanout_above_the_global_buffer_as_timeloop_places_it() -> None:
    """Timeloop's front end gave exercise 04 16 GlobalBuffers (its parsed-processed-input)."""
    arch = read_arch(SPATIAL / "arch/3levelspatial.arch.yaml")
    assert arch.fanouts[0].above == "MainMemory"
    assert [s.instances for s in arch.storages] == [1, 16, 16]


def test_vgg_problem_projection_with_named_coefficients() -> None:
    """Inputs' axes are R*Wdilation + P*Wstride (coefficients 1 from the instance)."""
    prob = read_problem(EYERISS / "prob/VGG02_layer5.yaml")
    inputs = next(t for t in prob.tensors if t.name == "Inputs")
    assert inputs.axes[2] == (("R", 1), ("P", 1))
    assert prob.macs == 128 * 256 * 3 * 3 * 56 * 56


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BAD_ARCH = {
    "duplicate key": "architecture:\n  nodes: []\n  nodes: []\n",
    "templated": "architecture:\n  nodes:\n  - !Component\n    name: {{ x }}\n",
    "unknown tag": "architecture:\n  nodes:\n  - !Widget\n    name: a\n",
    "no compute": "architecture:\n  nodes:\n  - !Component\n    name: B\n    class: regfile\n",
    "bad width": (
        "architecture:\n  nodes:\n  - !Component\n    name: B\n    class: SRAM\n"
        "    attributes: {width: 7, datawidth: 2}\n  - !Component\n    name: M\n    class: intmac\n"
    ),
    "not a mapping": "architecture: 3\n",
    "wrong top": "arch: {}\n",
    "unknown key": "architecture:\n  nodes:\n  - !Component\n    name: B\n    colour: red\n",
}


@pytest.mark.parametrize("case", sorted(BAD_ARCH))
def test_bad_arch_is_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    """A malformed arch raises TimeloopSpecError: one line, naming the file."""
    path = _write(tmp_path, "a.yaml", BAD_ARCH[case])
    with pytest.raises(TimeloopSpecError) as err:
        read_arch(path)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


PROB = (DATA / "03-model-conv1d+oc-3level/prob/conv1d+oc.prob.yaml").read_text()
ARCH3 = DATA / "03-model-conv1d+oc-3level/arch/3level.arch.yaml"
BAD_MAPS = {
    "unknown target": "mapping:\n- target: Nowhere\n  type: temporal\n  factors: K=32 R=3 P=16\n",
    "unknown dim": "mapping:\n- target: MainMemory\n  type: temporal\n  factors: Z=2\n",
    "bound in a mapping": "mapping:\n- target: MainMemory\n  type: temporal\n  factors: K<=2\n",
    "outermost bypass": "mapping:\n- target: MainMemory\n  type: bypass\n  bypass: [Weights]\n",
    "bad type": "mapping:\n- target: MainMemory\n  type: sideways\n",
    "no spatial fanout": "mapping:\n- target: MainMemory\n  type: spatial\n  factors: K=2\n",
    "bad factor": "mapping:\n- target: MainMemory\n  type: temporal\n  factors: K=two\n",
}


@pytest.mark.parametrize("case", sorted(BAD_MAPS))
def test_bad_mapping_is_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    """A malformed mapping raises TimeloopSpecError naming the file and the directive."""
    arch = read_arch(ARCH3)
    prob = read_problem(_write(tmp_path, "p.yaml", PROB))
    path = _write(tmp_path, "m.yaml", BAD_MAPS[case])
    with pytest.raises(TimeloopSpecError) as err:
        read_mapping(path, arch, prob)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_factors_read_in_both_timeloop_spellings(tmp_path: Path) -> None:
    """``K=16 P=16`` (hand-written) and ``K16 P16`` (the mapper's output) read the same."""
    arch, prob = read_arch(ARCH3), read_problem(_write(tmp_path, "p.yaml", PROB))
    a = read_mapping(
        _write(
            tmp_path,
            "a.yaml",
            "mapping:\n- {target: MainMemory, type: temporal, "
            "factors: K=32 R=3 P=16, permutation: KRP}\n",
        ),
        arch,
        prob,
    )
    b = read_mapping(
        _write(
            tmp_path,
            "b.yaml",
            "mapping:\n- {target: MainMemory, type: temporal, "
            "factors: K32 R3 P16, permutation: KRP}\n",
        ),
        arch,
        prob,
    )
    assert a == b
    assert a.loops_at("MainMemory") == (("P", 16), ("R", 3), ("K", 32))


def test_parallel_branches_keep_only_what_they_keep() -> None:
    """Each !Parallel scratchpad keeps its one tensor; the buffers above are not branches."""
    arch = read_arch(EYERISS / "arch/eyeriss_like.yaml")
    assert dict(arch.branch_keeps) == {
        "ifmap_spad": {"Inputs"},
        "weights_spad": {"Weights"},
        "psum_spad": {"Outputs"},
    }


def test_comma_separated_factors_and_ignored_instance_keys(tmp_path: Path) -> None:
    """``R=1,S=1`` reads as two factors; an instance key Timeloop ignores (H, Hpad) is ignored,
    but must still be a number."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "mapspace_constraints:\n- {target: GlobalBuffer, type: temporal, factors: 'R=1,P=2 K=4'}\n"
    )
    (c,) = read_constraints(path)
    assert c.factors == {"R": ("=", 1), "P": ("=", 2), "K": ("=", 4)}
    design = Path(__file__).parents[2] / "data" / "timeloop_designs"
    prob = read_problem(design / "_include/default_problem.yaml")
    assert dict(prob.bounds) == {"C": 3, "M": 32, "R": 3, "S": 3, "N": 1, "P": 112, "Q": 112}
    text = (design / "_include/default_problem.yaml").read_text()
    bad = tmp_path / "p.yaml"
    bad.write_text(text.replace("Hpad: 1", "Hpad: one"))
    with pytest.raises(TimeloopSpecError, match=r"instance\.Hpad"):
        read_problem(bad)


VARIABLE_ARCH = """variables:
  version: 0.4
  WORD: 8
  WIDE: WORD * 8
  global_cycle_seconds: 2e-09
architecture:
  version: 0.4
  nodes:
  - !Component
    name: DRAM
    class: DRAM
    attributes: {type: LPDDR4, width: WIDE, datawidth: WORD}
  - !Component
    name: Buffer
    class: SRAM
    attributes:
      depth: 1024 // 2
      width: max(WORD, 16)
      datawidth: WORD
  - !Component
    name: mac
    class: {{ mac }}
"""


def test_variables_and_values_fill_the_arch(tmp_path: Path) -> None:
    """``variables`` feed attribute arithmetic; ``{{ mac }}`` takes the value given."""
    arch = read_arch(_write(tmp_path, "a.yaml", VARIABLE_ARCH), {"mac": "intmac"})
    dram, buf = arch.storages
    assert dram.block_words == 8  # width WIDE = 64 bits of 8-bit words
    assert (buf.block_words, buf.capacity_words) == (2, 1024)  # width max(8, 16) = 16
    assert arch.cycle_s == 2e-9
    assert arch.compute == "mac"


BAD_TEMPLATES = {
    "no value": ("class: {{ mac }}", "a.yaml:22: Jinja 'mac' is undefined"),
    "statement": ("class: intmac\n{% include 'x.yaml' %}", "a.yaml:23: Jinja construct not read"),
    "include call": ("class: {{ include('x.yaml') }}", "a.yaml:22: Jinja 'include' is undefined"),
    "sandbox": ("class: {{ ''.__class__.__mro__ }}", "a.yaml:22: Jinja"),
    "attribute": ("class: intmac\n    attributes: {width: WORD.real}", "a.yaml:23: width: exp"),
    "zero": ("class: intmac\n    attributes: {width: WORD // 0}", "does not evaluate"),
}


@pytest.mark.parametrize("case", sorted(BAD_TEMPLATES))
def test_template_beyond_the_subset_is_one_line_with_file_and_line(
    tmp_path: Path, case: str
) -> None:
    """Anything past ``{{ name }}`` and variable arithmetic: one line naming it and FILE:LINE."""
    old, says = "class: {{ mac }}", BAD_TEMPLATES[case][1]
    text = VARIABLE_ARCH.replace(old, BAD_TEMPLATES[case][0])
    path = _write(tmp_path, "a.yaml", text)
    with pytest.raises(TimeloopSpecError) as err:
        read_arch(path)
    assert says in str(err.value)
    assert "\n" not in str(err.value)
