"""The training mapping sheet: every kernel of one optimizer step, by phase, with MFU and HFU.

Rows are the busiest chip's kernels (:attr:`TrainingStep.kernels`): forward, backward
(``.dgrad`` / ``.wgrad`` GEMMs, ``.bwd`` of fused attention and vector kernels), recompute,
optimizer and communication, each with its calls per step, seconds per call and seconds per
step. Collectives are listed at their full time; the step's parts below the table say how much
of them is exposed. Units are converted here only (seconds in, ms/us out).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from workbench._doc import pick
from workbench._format import fmt_time
from workbench.platform._training_parts import PHASES
from workbench.platform.training import StepKernel, TrainingStep, TrainingUtilisation

__all__ = ["training_sheet_json", "training_sheet_text"]

_PARTS = (
    ("compute", "compute_s"),
    ("tensor-parallel collectives (exposed)", "tp_comm_s"),
    ("pipeline sends (exposed)", "pp_comm_s"),
    ("pipeline bubble", "bubble_s"),
    ("data-parallel collectives (exposed)", "dp_comm_s"),
    ("compute slowed under hidden collectives", "overlap_s"),
    ("optimizer", "optimizer_s"),
)


def _name(k: StepKernel) -> str:
    return re.sub(r"^layers\.\d+\.", "layers.*.", k.name)


def _rows(step: TrainingStep) -> list[StepKernel]:
    order = {p: i for i, p in enumerate(PHASES)}
    return sorted(step.kernels, key=lambda k: (order.get(k.phase, len(PHASES)), -k.total_s))


def training_sheet_text(step: TrainingStep, util: TrainingUtilisation, title: str) -> str:
    """The sheet as a fixed-width table.

    Args:
        step: The predicted step.
        util: Its MFU and HFU.
        title: First line (model, chip, recipe, stack).
    """
    total = step.step_s
    head = (
        f"{'phase':<14} {'kernel':<40} {'calls':>8} {'per call':>10} {'per step':>10} {'share':>6}"
    )
    out = [title, "", head, "-" * len(head)]
    by_phase: dict[str, float] = defaultdict(float)
    for k in _rows(step):
        by_phase[k.phase] += k.total_s
        out.append(
            f"{k.phase:<14} {_name(k)[:40]:<40} {k.calls:>8.4g} {fmt_time(k.time_s):>10} "
            f"{fmt_time(k.total_s):>10} {k.total_s / total:>6.1%}"
        )
    out += ["", "per phase (communication at full time, hidden or not):"]
    out += [f"  {p:<14} {fmt_time(by_phase[p]):>10}" for p in PHASES if p in by_phase]
    out += ["", "step (busiest chip):"]
    for label, attr in _PARTS:
        v = getattr(step, attr)
        out.append(f"  {label:<42} {fmt_time(v):>10} {v / total:>6.1%}")
    out.append(f"  {'step':<42} {fmt_time(total):>10}")
    out += [
        "",
        f"tokens/s per chip {util.tokens_per_s_per_chip:,.0f}",
        f"MFU {util.mfu:.1%}   HFU {util.hfu:.1%}   (peak: {util.peak_name})",
        f"  model FLOPs/token {util.model_flops_per_token:.4g}, "
        f"hardware FLOPs/token {util.hardware_flops_per_token:.4g}",
        f"convention: {util.convention}",
    ]
    return "\n".join(out) + "\n"


def _kernel(k: StepKernel) -> dict[str, Any]:
    return pick(k, "phase", "name", "calls", "time_s", "total_s", "flops")


def training_sheet_json(step: TrainingStep, util: TrainingUtilisation, meta: dict[str, Any]) -> str:
    """The sheet as JSON (seconds, FLOP/s; schema_version 1)."""
    doc = {
        "schema_version": 1,
        **meta,
        "kernels": [_kernel(k) for k in _rows(step)],
        "step": {attr: getattr(step, attr) for _, attr in _PARTS} | {"step_s": step.step_s},
        "utilisation": {
            "mfu": util.mfu,
            "hfu": util.hfu,
            "model_flops_per_token": util.model_flops_per_token,
            "hardware_flops_per_token": util.hardware_flops_per_token,
            "tokens_per_s_per_chip": util.tokens_per_s_per_chip,
            "peak_flops_per_s": util.peak_flops_per_s,
            "peak": util.peak_name,
            "convention": util.convention,
        },
    }
    return json.dumps(doc, indent=2) + "\n"
