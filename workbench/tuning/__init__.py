"""Runtime autotuning: top-k from the cost model, measured, ranked, cached; validation."""

from workbench.tuning._rank import average_ranks, spearman
from workbench.tuning.autotune import Candidate, TuneResult, autotune
from workbench.tuning.cache import CACHE_SCHEMA_VERSION, PlanCache, plan_key
from workbench.tuning.sweep import SweepRow, sweep_best_plan

__all__ = [
    "CACHE_SCHEMA_VERSION",
    "Candidate",
    "PlanCache",
    "SweepRow",
    "TuneResult",
    "autotune",
    "average_ranks",
    "plan_key",
    "spearman",
    "sweep_best_plan",
]
