"""Release decision and rollback: run records, triage, owners, debug branches, closure, scenarios.

Example:
    >>> from workbench.review import build_scenario, triage
    >>> base, cand = build_scenario("eager-launch")
    >>> report = triage(base, cand, changed="runtime", simulate=False)
    >>> report.first_failing.mechanism, report.owner.role
    ('launch_sync_overhead', 'runtime systems engineer')
"""

from workbench.review.decision.closure import (
    Guardrail,
    GuardrailCheck,
    Guardrails,
    decide,
    evaluate_guardrails,
    load_guardrails,
    validation_matrix,
)
from workbench.review.decision.owners import OwnerRole, OwnershipTable, load_owners
from workbench.review.decision.verdict import (
    JSON_KEYS,
    TriageReport,
    compare_tags,
    triage,
    triage_files,
)
from workbench.review.diagnosis.attribution import (
    Attribution,
    counterfactual,
    declared_changes,
    diff_table,
)
from workbench.review.diagnosis.branches import BranchNode, debug_branches, simulate_sla
from workbench.review.diagnosis.first_failing import (
    MECHANISMS,
    FirstFailing,
    align,
    find_first_failing,
)
from workbench.review.join._match_score import MIN_MATCH_SCORE, MatchRefused, MatchScore
from workbench.review.join.from_trace import match_trace, record_from_trace
from workbench.review.pack.content import ComparisonPack, comparison_pack
from workbench.review.records.store import (
    SCHEMA_VERSION,
    KernelResult,
    Measurement,
    ModelResult,
    RecordError,
    RunRecord,
    load_record,
    record_from_mapping,
    save_record,
)
from workbench.review.records.tags import TAG_GROUPS, RunTags
from workbench.review.scenarios.build import SCENARIOS, Scenario, build_scenario, write_scenario
from workbench.review.scenarios.synthetic import (
    synthetic_kernels,
    synthetic_scenario_traces,
    write_synthetic_trace,
)

__all__ = [
    "JSON_KEYS",
    "MECHANISMS",
    "MIN_MATCH_SCORE",
    "SCENARIOS",
    "SCHEMA_VERSION",
    "TAG_GROUPS",
    "Attribution",
    "BranchNode",
    "ComparisonPack",
    "FirstFailing",
    "Guardrail",
    "GuardrailCheck",
    "Guardrails",
    "KernelResult",
    "MatchRefused",
    "MatchScore",
    "Measurement",
    "ModelResult",
    "OwnerRole",
    "OwnershipTable",
    "RecordError",
    "RunRecord",
    "RunTags",
    "Scenario",
    "TriageReport",
    "align",
    "build_scenario",
    "compare_tags",
    "comparison_pack",
    "counterfactual",
    "debug_branches",
    "decide",
    "declared_changes",
    "diff_table",
    "evaluate_guardrails",
    "find_first_failing",
    "load_guardrails",
    "load_owners",
    "load_record",
    "match_trace",
    "record_from_mapping",
    "record_from_trace",
    "save_record",
    "simulate_sla",
    "synthetic_kernels",
    "synthetic_scenario_traces",
    "triage",
    "triage_files",
    "validation_matrix",
    "write_scenario",
    "write_synthetic_trace",
]
