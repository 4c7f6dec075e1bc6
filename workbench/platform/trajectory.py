"""An optimisation trajectory: the same model and hardware mapped with cumulative overrides.

Each step switches on one more optimisation a performance engineer applies, in the usual order:
eager unfused kernels with the default tiles -> fusion -> searched tiles -> weight quantization
(int8 weight-only) -> layout (the matrix engine's preferred layout, propagated) -> graph launch
(captured graph replay, the last autotune/launch step). Every step is a real mapper run
(:func:`workbench.mapper.map_model` with :class:`~workbench.options.MapOptions` overrides), so
the bandwidth lens reads each step's bytes and time from the cost model, not from a sketch.
The serving verdict per step (:func:`serving_verdicts`) replays a trace on the same model and
hardware with that step's options.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph
from workbench.models.presets import PRESETS
from workbench.options import FUSION_RULES, MapOptions
from workbench.platform.fit import setting_refusal
from workbench.serving import (
    batcher_grid,
    find_knee,
    load_builtin_trace,
    mapper_step_time,
    sweep_load,
)

__all__ = [
    "TRAJECTORY",
    "Step",
    "TrajectoryStep",
    "serving_verdicts",
    "trajectory",
    "trajectory_refusal",
]


@dataclass(frozen=True, slots=True)
class Step:
    """One optimisation step: a short name and the cumulative mapping options.

    Attributes:
        name: Axis label (``"fusion"``...).
        options: Every override in force at this step.
    """

    name: str
    options: MapOptions


_EAGER = MapOptions(
    launch="eager",
    disabled_fusion=tuple(FUSION_RULES),
    search="heuristic",
    layout="NCHW",
    layout_propagation=False,
)
_FUSED = MapOptions(launch="eager", search="heuristic", layout="NCHW", layout_propagation=False)
_TILED = MapOptions(launch="eager", layout="NCHW", layout_propagation=False)
_QUANT = MapOptions(launch="eager", layout="NCHW", layout_propagation=False, weight_dtype="int8")
_LAYOUT = MapOptions(launch="eager", weight_dtype="int8")
_GRAPH = MapOptions(weight_dtype="int8")

#: The six steps, in order; each keeps the previous step's overrides.
TRAJECTORY: tuple[Step, ...] = (
    Step("eager unfused", _EAGER),
    Step("fusion", _FUSED),
    Step("searched tiles", _TILED),
    Step("int8 weights", _QUANT),
    Step("layout", _LAYOUT),
    Step("graph launch", _GRAPH),
)


@dataclass(frozen=True, slots=True)
class TrajectoryStep:
    """A step and its mapping.

    Attributes:
        step: The optimisation step.
        mapping: The mapper's result with the step's options.
    """

    step: Step
    mapping: ModelMapping


def _mapped_seq(model: str, phase: str, seq: int) -> int:
    """The context the trajectory maps: a decode context leaves a position for the new token."""
    cfg = PRESETS.get(model)
    if cfg is not None and phase == "decode":
        return min(seq, cfg.max_seq - 1)
    return seq


def trajectory_refusal(
    model: str, hardware: str, *, phase: str = "decode", batch: int = 8, seq: int = 1024
) -> str:
    """Why :func:`trajectory` has no meaningful steps for this setting ('' when it has).

    The check of ``workbench map`` and the explorer
    (:func:`workbench.platform.fit.setting_refusal`) at the setting the trajectory maps (its
    first step, the largest footprint: unfused, bf16 weights).

    Args:
        model: Preset name.
        hardware: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        batch: Sequences per step.
        seq: Prompt length or decode context, tokens (clamped as :func:`trajectory` does).

    Returns:
        One line naming the limit and the numbers, or ''.
    """
    seq = _mapped_seq(model, phase, seq)
    return setting_refusal(model, load_hardware(hardware), phase=phase, batch=batch, seq=seq)


@lru_cache(maxsize=32)
def trajectory(
    model: str, hardware: str, *, phase: str = "decode", batch: int = 8, seq: int = 1024
) -> tuple[TrajectoryStep, ...]:
    """Map ``model`` on ``hardware`` once per step of :data:`TRAJECTORY` (cached).

    Args:
        model: Preset name.
        hardware: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        batch: Sequences per step.
        seq: Prompt length (prefill) or context length (decode), tokens (a decode context is
            clamped to the model's positions minus the new token).

    Returns:
        One :class:`TrajectoryStep` per step, in order.

    Raises:
        WorkbenchError: Unknown model, hardware or phase (from the loaders).
    """
    if batch < 1 or seq < 1:
        raise WorkbenchError(f"trajectory: batch and seq must be >= 1, got {batch}, {seq}")
    hw = load_hardware(hardware)
    graph = build_graph(model, phase=phase, batch=batch, seq=_mapped_seq(model, phase, seq))
    return tuple(TrajectoryStep(s, map_model(graph, hw, s.options)) for s in TRAJECTORY)


@lru_cache(maxsize=32)
def serving_verdicts(
    model: str,
    hardware: str,
    *,
    rate_per_s: float,
    sla_s: float,
    trace: str = "production-chat",
    n: int = 400,
    max_batch: int = 16,
) -> tuple[tuple[str, float, str], ...]:
    """Replay a trace at one offered rate with each step's options; p99 and its verdict.

    Args:
        model: Decoder preset.
        hardware: Hardware profile name.
        rate_per_s: Offered load, requests/s (the same for every step).
        sla_s: p99 end-to-end SLA, seconds.
        trace: Built-in trace name.
        n: Requests replayed.
        max_batch: Largest batch of the continuous batcher.

    Returns:
        ``(step name, p99 seconds, status)`` per step; status is ``"ok"``, ``"sla"`` (p99 over
        the SLA) or ``"saturated"`` (completions fall behind arrivals): the last two are an
        unstable tail.
    """
    if model not in PRESETS:
        raise WorkbenchError(f"serving verdicts: {model!r} is not a decoder preset")
    hw = load_hardware(hardware)
    grid = batcher_grid(max_batch, PRESETS[model].max_seq)
    work = load_builtin_trace(trace).head(n)
    out = []
    for s in TRAJECTORY:
        table = mapper_step_time(model, hw, s.options, **grid)
        (point,) = sweep_load(
            [rate_per_s], work, table, max_batch=max_batch, variance=hw.runtime_variance, seed=0
        )
        status = find_knee([point], sla_s).status(point)
        out.append((s.name, point.p99_e2e_s, status))
    return tuple(out)
