"""Serving simulation: latency against throughput for one replica, with tails.

A discrete-event, seeded, deterministic simulator of LLM serving (continuous or static batching)
and of image serving (dynamic batching), driven by Poisson, bursty or replayed-trace arrivals and
by step times from a :class:`StepTimeModel` (the mapper fills a :class:`TableStepTime`). Outputs
throughput and p50/p95/p99 of time to first token, time per output token and end-to-end latency
per load level, and the knee where the tail breaks an SLA. A level the replica cannot keep up
with is unstable (``LoadPoint.stable``): its queue grows through the replay, so it has no steady
mean or percentile (``LoadPoint.steady`` returns None for it).

Example:
    >>> from workbench.serving import AnalyticStepTime, find_knee, poisson_arrivals, sweep_load
    >>> pts = sweep_load([2, 8, 40], lambda r: poisson_arrivals(r, 400, seed=0), AnalyticStepTime())
    >>> find_knee(pts, sla_s=2.0).first_break.offered_rate_per_s
    40.0
"""

from workbench.serving._errors import ServingError
from workbench.serving.images import simulate_batches
from workbench.serving.llm import simulate
from workbench.serving.mapper_steps import (
    BatchTimeTable,
    batcher_grid,
    clear_step_cache,
    mapper_batch_time,
    mapper_step_time,
    saturation_rate,
    step_seconds,
)
from workbench.serving.result import LatencyStats, SimResult
from workbench.serving.step_time import AnalyticStepTime, StepTimeModel, TableStepTime
from workbench.serving.sweep import (
    LATENCY_FIELDS,
    TAIL_KNEE_FACTOR,
    UNSTABLE_NOTE,
    Knee,
    LoadPoint,
    find_knee,
    sweep_image_load,
    sweep_load,
    tail_knee,
)
from workbench.serving.traces import (
    TRACE_SCHEMA_VERSION,
    list_traces,
    load_builtin_trace,
    load_trace,
    save_trace,
)
from workbench.serving.workload import (
    LengthDistribution,
    LogNormalLengths,
    Workload,
    gamma_arrivals,
    poisson_arrivals,
)

__all__ = [
    "LATENCY_FIELDS",
    "TAIL_KNEE_FACTOR",
    "TRACE_SCHEMA_VERSION",
    "UNSTABLE_NOTE",
    "AnalyticStepTime",
    "BatchTimeTable",
    "Knee",
    "LatencyStats",
    "LengthDistribution",
    "LoadPoint",
    "LogNormalLengths",
    "ServingError",
    "SimResult",
    "StepTimeModel",
    "TableStepTime",
    "Workload",
    "batcher_grid",
    "clear_step_cache",
    "find_knee",
    "gamma_arrivals",
    "list_traces",
    "load_builtin_trace",
    "load_trace",
    "mapper_batch_time",
    "mapper_step_time",
    "poisson_arrivals",
    "saturation_rate",
    "save_trace",
    "simulate",
    "simulate_batches",
    "step_seconds",
    "sweep_image_load",
    "sweep_load",
    "tail_knee",
]
