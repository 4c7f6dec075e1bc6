"""The runtime-variance model: launch jitter and occasional slow steps, drawn per step index.

Step ``g`` of a stream takes ``base * mult[g] + add[g]`` seconds, where ``mult[g]`` is
``slow_step_factor`` with probability ``slow_step_probability`` (else 1) and ``add[g]`` is a
launch delay ``|N(0, launch_jitter_s)|`` (half-normal: a late launch only adds time; its mean is
``launch_jitter_s * sqrt(2 / pi)``). Draws are indexed by step number and made in fixed-size
chunks, so a run is deterministic for a seed however the simulator groups its steps.
"""

from __future__ import annotations

import numpy as np

from workbench.hw.schema import RuntimeVariance
from workbench.serving._errors import ServingError

__all__ = ["StepNoise", "coerce_variance"]

_CHUNK = 1 << 16


def coerce_variance(variance: object | None) -> RuntimeVariance:
    """Accept a ``RuntimeVariance`` (or anything with its three fields, or None for none)."""
    if variance is None:
        return RuntimeVariance()
    if isinstance(variance, RuntimeVariance):
        return variance
    try:
        return RuntimeVariance(
            launch_jitter_s=variance.launch_jitter_s,  # type: ignore[attr-defined]
            slow_step_probability=variance.slow_step_probability,  # type: ignore[attr-defined]
            slow_step_factor=variance.slow_step_factor,  # type: ignore[attr-defined]
        )
    except (AttributeError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise ServingError(f"variance: not a valid RuntimeVariance ({first})") from None


class StepNoise:
    """Per-step multiplicative and additive noise for one stream of steps (mutable, internal)."""

    __slots__ = ("_add", "_mult", "_rng", "_var", "active")

    def __init__(self, variance: RuntimeVariance, rng: np.random.Generator) -> None:
        self._var = variance
        self._rng = rng
        self.active = variance.launch_jitter_s > 0 or (
            variance.slow_step_probability > 0 and variance.slow_step_factor > 1
        )
        self._mult = np.ones(0)
        self._add = np.zeros(0)

    def _grow(self, n: int) -> None:
        var = self._var
        while self._mult.size < n:
            slow = self._rng.random(_CHUNK) < var.slow_step_probability
            mult = np.where(slow, var.slow_step_factor, 1.0)
            add = np.abs(self._rng.standard_normal(_CHUNK)) * var.launch_jitter_s
            self._mult = np.concatenate((self._mult, mult))
            self._add = np.concatenate((self._add, add))

    def apply(self, base: np.ndarray, g: int) -> np.ndarray:
        """Durations of steps ``g .. g + len(base) - 1`` given their noiseless times, seconds."""
        if not self.active:
            return base
        k = base.size
        if g + k > self._mult.size:
            self._grow(g + k)
        return base * self._mult[g : g + k] + self._add[g : g + k]

    def one(self, base: float, g: int) -> float:
        """Duration of step ``g`` given its noiseless time, seconds."""
        if not self.active:
            return base
        if g >= self._mult.size:
            self._grow(g + 1)
        return float(base * self._mult[g] + self._add[g])
