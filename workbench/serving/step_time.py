"""Step-time models: how long one prefill or one decode iteration of a batch takes.

The simulator asks a :class:`StepTimeModel` two questions, both in seconds:

- ``prefill_time(batch, prompt_tokens)``: one prefill iteration of ``batch`` sequences of
  ``prompt_tokens`` tokens each (the group's mean when their lengths differ). ``prompt_tokens``
  may be an integer array; the answer then has the same shape.
- ``decode_time(batch, context)``: one decode iteration producing one token for each of ``batch``
  sequences whose KV cache holds ``context`` tokens each (the batch's mean). ``context`` may be an
  integer array; the answer then has the same shape.

Array support is for speed: the simulator builds one curve per batch size with one call. A model
that only takes scalars still works (one call per token count, slower).

:class:`TableStepTime` is how the mapper plugs in: it maps a few (batch, tokens) grid points, and
the table interpolates between them (bilinear, flat below the grid, linear above it).
:class:`AnalyticStepTime` is a closed-form model for tests and examples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from workbench.serving._errors import ServingError

__all__ = ["AnalyticStepTime", "StepTimeModel", "TableStepTime"]


@runtime_checkable
class StepTimeModel(Protocol):
    """Times of one prefill and one decode iteration, seconds."""

    def prefill_time(self, batch: int, prompt_tokens: np.ndarray | int) -> np.ndarray | float:
        """One prefill iteration: ``batch`` sequences of ``prompt_tokens`` tokens, seconds."""
        ...

    def decode_time(self, batch: int, context: np.ndarray | int) -> np.ndarray | float:
        """One decode iteration: ``batch`` sequences with ``context`` cached tokens, seconds."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalyticStepTime:
    """A closed-form step-time model (illustrative defaults, not a measured platform).

    ``prefill = step_overhead_s + batch * prompt_tokens * prefill_s_per_token`` and
    ``decode = step_overhead_s + decode_base_s + batch * (decode_s_per_seq +
    context * decode_s_per_context_token)``.

    The defaults are an assumption sized like a 7B-parameter bf16 model on one H100-class chip:
    weights 13.5 GB / 3.35 TB/s = 4 ms per decode step, KV 0.5 MB per token / 3.35 TB/s = 0.16 us
    per context token, 14 GFLOP per prompt token at ~50 % of 989 TFLOP/s = 28 us per token.

    Example:
        >>> m = AnalyticStepTime()
        >>> round(m.decode_time(1, 1000) * 1e3, 2)
        4.21
    """

    step_overhead_s: float = 50e-6
    prefill_s_per_token: float = 28e-6
    decode_base_s: float = 4.0e-3
    decode_s_per_seq: float = 2e-6
    decode_s_per_context_token: float = 0.16e-6

    def prefill_time(self, batch: int, prompt_tokens: np.ndarray | int) -> np.ndarray | float:
        """One prefill iteration, seconds (array in, array out)."""
        out = self.step_overhead_s + batch * np.asarray(prompt_tokens) * self.prefill_s_per_token
        return out if out.ndim else float(out)

    def decode_time(self, batch: int, context: np.ndarray | int) -> np.ndarray | float:
        """One decode iteration, seconds (array in, array out)."""
        per_seq = self.decode_s_per_seq + np.asarray(context) * self.decode_s_per_context_token
        out = self.step_overhead_s + self.decode_base_s + batch * per_seq
        return out if out.ndim else float(out)


def _axis(values: Sequence[int], name: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if out.ndim != 1 or out.size == 0 or np.any(np.diff(out) <= 0) or out[0] < 0:
        raise ServingError(
            f"TableStepTime: {name} must be a non-empty increasing list, got {values}"
        )
    return out


def _grid(values: Sequence[Sequence[float]], shape: tuple[int, int], name: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if out.shape != shape:
        raise ServingError(f"TableStepTime: {name} has shape {out.shape}, expected {shape}")
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ServingError(f"TableStepTime: {name} must hold positive finite seconds")
    return out


def _weights(x: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bracketing index and weight: flat below the grid, linear extrapolation above it."""
    if xs.size == 1:
        return np.zeros_like(x, dtype=np.intp), np.zeros_like(x, dtype=np.float64)
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, xs.size - 2)
    w = (np.maximum(x, xs[0]) - xs[i]) / (xs[i + 1] - xs[i])
    return i, w


def _bilinear(
    b: float, x: np.ndarray, bs: np.ndarray, xs: np.ndarray, grid: np.ndarray
) -> np.ndarray:
    bi, bw = _weights(np.asarray(float(b)), bs)
    row = grid[bi] if bs.size == 1 else grid[bi] * (1 - bw) + grid[bi + 1] * bw
    xi, xw = _weights(x, xs)
    if xs.size == 1:
        return np.broadcast_to(row[0], x.shape).copy()
    return row[xi] * (1 - xw) + row[xi + 1] * xw


@dataclass(frozen=True, slots=True, kw_only=True)
class TableStepTime:
    """Step times on a grid of batch sizes and token buckets, interpolated between points.

    Attributes:
        batches: Batch sizes of the grid rows (increasing).
        prompt_tokens: Prompt-length buckets of the prefill grid's columns, tokens (increasing).
        prefill_s: Prefill times, seconds, ``[len(batches)][len(prompt_tokens)]``.
        contexts: Context-length buckets of the decode grid's columns, tokens (increasing).
        decode_s: Decode-step times, seconds, ``[len(batches)][len(contexts)]``.

    Example:
        >>> t = TableStepTime(batches=(1, 8), prompt_tokens=(128, 1024),
        ...     prefill_s=((0.01, 0.05), (0.05, 0.4)), contexts=(0, 4096),
        ...     decode_s=((0.004, 0.005), (0.005, 0.012)))
        >>> round(t.decode_time(4, 2048), 6)
        0.006214
    """

    batches: tuple[int, ...]
    prompt_tokens: tuple[int, ...]
    prefill_s: tuple[tuple[float, ...], ...]
    contexts: tuple[int, ...]
    decode_s: tuple[tuple[float, ...], ...]
    _arrays: dict[str, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bs = _axis(self.batches, "batches")
        ps = _axis(self.prompt_tokens, "prompt_tokens")
        cs = _axis(self.contexts, "contexts")
        arrays = {
            "b": bs,
            "p": ps,
            "c": cs,
            "prefill": _grid(self.prefill_s, (bs.size, ps.size), "prefill_s"),
            "decode": _grid(self.decode_s, (bs.size, cs.size), "decode_s"),
        }
        object.__setattr__(self, "_arrays", arrays)

    @classmethod
    def from_functions(
        cls,
        prefill: Callable[[int, int], float],
        decode: Callable[[int, int], float],
        *,
        batches: Sequence[int],
        prompt_tokens: Sequence[int],
        contexts: Sequence[int],
    ) -> TableStepTime:
        """Fill the table by calling a step-time source (e.g. the mapper) at each grid point.

        Args:
            prefill: ``(batch, prompt_tokens) -> seconds`` for one prefill iteration.
            decode: ``(batch, context) -> seconds`` for one decode iteration.
            batches: Batch sizes to evaluate.
            prompt_tokens: Prompt-length buckets, tokens.
            contexts: Context-length buckets, tokens.

        Returns:
            The filled table; ``len(batches) * (len(prompt_tokens) + len(contexts))`` calls.
        """
        return cls(
            batches=tuple(batches),
            prompt_tokens=tuple(prompt_tokens),
            prefill_s=tuple(tuple(float(prefill(b, p)) for p in prompt_tokens) for b in batches),
            contexts=tuple(contexts),
            decode_s=tuple(tuple(float(decode(b, c)) for c in contexts) for b in batches),
        )

    def prefill_time(self, batch: int, prompt_tokens: np.ndarray | int) -> np.ndarray | float:
        """One prefill iteration, seconds (bilinear; an array of lengths gives an array)."""
        a = self._arrays
        x = np.asarray(prompt_tokens, dtype=np.float64)
        out = _bilinear(batch, x, a["b"], a["p"], a["prefill"])
        return out if out.ndim else float(out)

    def decode_time(self, batch: int, context: np.ndarray | int) -> np.ndarray | float:
        """One decode iteration, seconds (bilinear; an array of contexts gives an array)."""
        a = self._arrays
        x = np.asarray(context, dtype=np.float64)
        out = _bilinear(batch, x, a["b"], a["c"], a["decode"])
        return out if out.ndim else float(out)
