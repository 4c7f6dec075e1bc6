"""Timeloop's own spec files (arch, problem, mapping, constraints; Accelergy's ERT and ART).

Read strictly (:mod:`._yaml`), modelled by the loop-nest evaluator
(:mod:`workbench.scheduling.nest_eval`) and searched (:mod:`.search`). The public face::

    arch = read_arch("arch.yaml"); prob = read_problem("prob.yaml")
    result = model(arch, prob, read_mapping("map.yaml", arch, prob), read_ert("ERT.yaml"))
    best = search(arch, prob, constraints, "edp", read_ert("ERT.yaml"))
"""

from workbench.scheduling.timeloop._yaml import TimeloopSpecError
from workbench.scheduling.timeloop.arch import Arch, Fanout, Storage, read_arch
from workbench.scheduling.timeloop.constraints import Constraint, read_constraints
from workbench.scheduling.timeloop.mapping import (
    Mapping,
    mapping_from_directives,
    mapping_from_text,
    read_mapping,
)
from workbench.scheduling.timeloop.model import LevelStats, ModelResult, levels_of, model
from workbench.scheduling.timeloop.problem import read_problem
from workbench.scheduling.timeloop.tables import read_art, read_ert

__all__ = [
    "Arch",
    "Constraint",
    "Fanout",
    "LevelStats",
    "Mapping",
    "ModelResult",
    "Storage",
    "TimeloopSpecError",
    "levels_of",
    "mapping_from_directives",
    "mapping_from_text",
    "model",
    "read_arch",
    "read_art",
    "read_constraints",
    "read_ert",
    "read_mapping",
    "read_problem",
]
