"""Step times from the mapper: fill a :class:`TableStepTime` (LLMs) or a batch-time table (images).

Each grid point is one :func:`workbench.mapper.map_model` call on a preset graph: a prefill graph
at ``(batch, prompt bucket)`` and a decode graph at ``(batch, context bucket)``. Results are cached
by ``(model, hardware hash, options, phase, batch, tokens, tensor_parallel)`` for the process, so a
sweep over rates, SLAs or traces maps each grid point once. The grid is coarse on purpose: the
table interpolates between points (bilinear; linear above the grid).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from workbench.hw.loader import hardware_hash
from workbench.hw.schema import Hardware
from workbench.ir import Graph
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.models.presets import PRESETS
from workbench.options import MapOptions
from workbench.serving._errors import ServingError
from workbench.serving.step_time import StepTimeModel, TableStepTime
from workbench.serving.workload import Workload

__all__ = [
    "DEFAULT_BATCHES",
    "DEFAULT_CONTEXTS",
    "DEFAULT_PROMPTS",
    "BatchTimeTable",
    "StepGrid",
    "batcher_grid",
    "clear_step_cache",
    "mapper_batch_time",
    "mapper_step_time",
    "saturation_rate",
    "step_seconds",
]

#: Default grids (coarse; the table interpolates).
DEFAULT_BATCHES: tuple[int, ...] = (1, 8, 32, 64)
DEFAULT_PROMPTS: tuple[int, ...] = (128, 512, 2048)
DEFAULT_CONTEXTS: tuple[int, ...] = (128, 1024, 4096)

_CACHE: dict[tuple[object, ...], float] = {}


class StepGrid(TypedDict):
    """Grid axes of a step-time table (keyword arguments of :func:`mapper_step_time`)."""

    batches: tuple[int, ...]
    prompt_tokens: tuple[int, ...]
    contexts: tuple[int, ...]


def batcher_grid(max_batch: int, max_seq: int) -> StepGrid:
    """The coarse grid for a batcher of at most ``max_batch`` on a model of ``max_seq`` tokens.

    Batches 1, a quarter and the whole of ``max_batch``; the default prompt and context buckets
    capped at the model's context. Every axis is strictly increasing (points that coincide at
    small limits or short contexts appear once). Keyword arguments of :func:`mapper_step_time`.

    >>> batcher_grid(4, 1024)
    {'batches': (1, 4), 'prompt_tokens': (128, 512, 1024), 'contexts': (128, 1024)}
    """
    return StepGrid(
        batches=tuple(sorted({1, max(1, max_batch // 4), max_batch})),
        prompt_tokens=tuple(sorted({min(v, max_seq) for v in DEFAULT_PROMPTS})),
        contexts=tuple(sorted({min(v, max_seq) for v in DEFAULT_CONTEXTS})),
    )


def clear_step_cache() -> None:
    """Forget every cached grid point (and the graphs built for them)."""
    _CACHE.clear()
    _graph.cache_clear()


def step_seconds(
    model: str,
    hw: Hardware,
    options: MapOptions,
    *,
    phase: str,
    batch: int,
    tokens: int,
    tensor_parallel: int = 1,
) -> float:
    """Predicted time of one step of a preset model, seconds (cached).

    Args:
        model: Preset name (see :func:`workbench.models.list_models`).
        hw: Target hardware.
        options: Mapping overrides (``options.dtype`` picks the graph dtype, default bf16).
        phase: ``"prefill"`` (``tokens`` = prompt length), ``"decode"`` (``tokens`` = cached
            context) or ``"inference"`` (image models; ``tokens`` ignored).
        batch: Sequences or images in the step.
        tokens: Prompt or context length, tokens (a decode context is clamped to the model's
            positions minus the new token).
        tensor_parallel: Chips one replica is split over (decoder presets).

    Returns:
        Seconds for one step on one replica.
    """
    if batch < 1 or tokens < 1:
        raise ServingError(f"step time: batch and tokens must be >= 1, got {batch}, {tokens}")
    key = (model, hardware_hash(hw), options, phase, batch, tokens, tensor_parallel)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    graph = _graph(model, phase, batch, tokens, options.dtype or "bf16", tensor_parallel)
    seconds = map_model(graph, hw, options).time_s
    _CACHE[key] = seconds
    return seconds


@functools.lru_cache(maxsize=128)
def _graph(model: str, phase: str, batch: int, tokens: int, dtype: str, tp: int) -> Graph:
    """The preset graph of one grid point (cached: it does not depend on the mapping options)."""
    # NOTE: graphs are frozen, so the steps of an optimisation trajectory (the same grid point
    # mapped with different options) share one graph instead of building it once per step.
    if phase == "decode":
        cfg = PRESETS.get(model)
        tokens = min(tokens, cfg.max_seq - 1) if cfg else tokens
        return build_graph(model, "decode", batch=batch, seq=tokens, context=tokens, dtype=dtype,
                           tensor_parallel=tp)  # fmt: skip
    return build_graph(model, "prefill", batch=batch, seq=tokens, dtype=dtype, tensor_parallel=tp)


def mapper_step_time(
    model: str,
    hw: Hardware,
    options: MapOptions | None = None,
    *,
    batches: Sequence[int] = DEFAULT_BATCHES,
    prompt_tokens: Sequence[int] = DEFAULT_PROMPTS,
    contexts: Sequence[int] = DEFAULT_CONTEXTS,
    tensor_parallel: int = 1,
) -> TableStepTime:
    """Prefill and decode step times of an LLM preset on a platform, from the mapper.

    Args:
        model: Decoder preset name (e.g. ``"llama2-7b"``).
        hw: Target hardware (pass ``hw.runtime_variance`` to the simulator for its noise).
        options: Mapping overrides, or None for the defaults.
        batches: Batch sizes of the grid (increasing).
        prompt_tokens: Prompt-length buckets, tokens (increasing).
        contexts: Context-length buckets, tokens (increasing, >= 1).
        tensor_parallel: Chips one replica is split over.

    Returns:
        The table: ``len(batches) * (len(prompt_tokens) + len(contexts))`` mapper calls at most.

    Example:
        >>> from workbench.hw import load_hardware
        >>> t = mapper_step_time("gpt2", load_hardware("h100-sxm"), batches=(1, 4),
        ...                      prompt_tokens=(64, 256), contexts=(64, 256))
        >>> t.decode_time(1, 64) < t.prefill_time(4, 256)
        True
    """
    opts = options or MapOptions()

    def prefill(b: int, p: int) -> float:
        return step_seconds(model, hw, opts, phase="prefill", batch=b, tokens=p,
                            tensor_parallel=tensor_parallel)  # fmt: skip

    def decode(b: int, c: int) -> float:
        return step_seconds(model, hw, opts, phase="decode", batch=b, tokens=c,
                            tensor_parallel=tensor_parallel)  # fmt: skip

    return TableStepTime.from_functions(
        prefill, decode, batches=batches, prompt_tokens=prompt_tokens, contexts=contexts
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchTimeTable:
    """Seconds per batch of images at a few batch sizes, linear in between and above.

    Attributes:
        batches: Batch sizes mapped (increasing).
        seconds: Time of one batch at each size, seconds.
    """

    batches: tuple[int, ...]
    seconds: tuple[float, ...]

    def __call__(self, batch: int) -> float:
        """Seconds for one batch of ``batch`` images (flat below the grid, linear above)."""
        xs = np.asarray(self.batches, dtype=np.float64)
        ys = np.asarray(self.seconds, dtype=np.float64)
        if xs.size == 1:
            return float(ys[0] * max(batch, 1) / xs[0]) if batch > xs[0] else float(ys[0])
        if batch <= xs[-1]:
            return float(np.interp(batch, xs, ys))
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return float(ys[-1] + slope * (batch - xs[-1]))


def mapper_batch_time(
    model: str,
    hw: Hardware,
    options: MapOptions | None = None,
    batches: Sequence[int] = (1, 8, 32),
) -> BatchTimeTable:
    """Batch times of a non-LLM preset (e.g. ``"resnet50"``) from the mapper.

    Args:
        model: Preset name.
        hw: Target hardware.
        options: Mapping overrides, or None.
        batches: Batch sizes to map (increasing).

    Returns:
        A callable ``batch -> seconds`` for :func:`workbench.serving.simulate_batches`.
    """
    bs = tuple(int(b) for b in batches)
    if not bs or any(b < 1 for b in bs) or any(b2 <= b1 for b1, b2 in itertools.pairwise(bs)):
        raise ServingError(f"mapper_batch_time: batches must be increasing and >= 1, got {batches}")
    opts = options or MapOptions()
    secs = tuple(step_seconds(model, hw, opts, phase="inference", batch=b, tokens=1) for b in bs)
    return BatchTimeTable(batches=bs, seconds=secs)


def saturation_rate(step_time: StepTimeModel, workload: Workload, max_batch: int) -> float:
    """Rough saturation rate of an LLM replica, requests/s (for choosing sweep rates).

    One request costs its mean output tokens x a full batch's decode step / ``max_batch`` plus a
    batch-1 prefill of the mean prompt; the rate is the inverse.
    """
    prompt = float(workload.prompt_tokens.mean())
    ctx = prompt + float(workload.output_tokens.mean()) / 2
    decode = float(step_time.decode_time(max_batch, int(ctx)))
    per_req = float(workload.output_tokens.mean()) * decode / max_batch
    return 1.0 / (per_req + float(step_time.prefill_time(1, int(prompt))))
