"""Internal consistency of a run record: its kernel list agrees with its own totals.

The lock hashes are unkeyed (:mod:`workbench.review.records.store`), so a record edited and
re-locked passes them. A tool-written record is consistent by construction; an edited one usually
is not:

* every kernel name appears once (a kernel duplicated to inflate or dilute a group is refused);
* the kernel list is as long as ``model.kernel_count`` (version 3), and every kernel named in
  ``measurement.kernels`` of a run measured on this host is listed (missing kernels refused);
* the per-kernel sums agree with the recorded totals within :data:`SUM_REL_TOL`: model FLOPs;
  for predicted runs, each layer type's predicted seconds against ``time_by_layer_type`` and the
  step (kernels + ``step_overhead_s``) against ``time_s``; for measured runs, the kernels'
  measured seconds against ``time_by_layer_type`` in total;
* the chip count is plausible: at least 1, at most :data:`~workbench.models.config.MAX_SYSTEM_CHIPS`
  and, for a preset model, at most its attention heads.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from workbench.models.config import chips_problem
from workbench.models.presets import PRESETS

__all__ = ["SUM_REL_TOL", "consistency_problems"]

#: Relative tolerance of a per-kernel sum against its recorded total. The tool writes both from
#: the same float64 values, so they differ only by summation order (~1e-15 relative); 1e-6 leaves
#: room for that and for JSON round trips, and is far below one kernel of a real model.
SUM_REL_TOL = 1e-6
#: Absolute slack, seconds or FLOPs, for totals that are (nearly) zero.
_ABS = 1e-12


def _differs(total: float, parts: float) -> bool:
    return abs(total - parts) > SUM_REL_TOL * max(abs(total), abs(parts)) + _ABS


def _duplicates(record: Any) -> list[str]:
    counts = Counter(k.name for k in record.kernels)
    dup = [(n, c) for n, c in counts.items() if c > 1]
    if not dup:
        return []
    name, c = dup[0]
    return [
        f"kernels: {len(dup)} name(s) listed more than once ({name!r} {c} times); a run lists "
        "each kernel once"
    ]


def _missing(record: Any) -> list[str]:
    out = []
    m, names = record.model, {k.name for k in record.kernels}
    if m.kernel_count is not None and m.kernel_count != len(record.kernels):
        out.append(
            f"kernels: {len(record.kernels)} listed but the run had {m.kernel_count} "
            "(model.kernel_count)"
        )
    meas = record.measurement
    if meas is not None and not meas.backend.startswith("trace:"):
        lost = [n for n in meas.kernels if n not in names]
        if lost:
            out.append(
                f"kernels: {lost[0]!r} was measured (measurement.kernels) but is not listed"
                + (f" (and {len(lost) - 1} more)" if len(lost) > 1 else "")
            )
    return out


def _sums(record: Any) -> list[str]:
    out, m = [], record.model
    flops = sum(k.model_flops for k in record.kernels)
    if _differs(m.model_flops, flops):
        out.append(f"model.model_flops = {m.model_flops} but the kernels sum to {flops}")
    by_type = dict(m.time_by_layer_type)
    if record.tags.runtime.backend.startswith("trace:"):
        measured = sum(k.measured_s or 0.0 for k in record.kernels)
        recorded = sum(by_type.values())
        if _differs(recorded, measured):
            out.append(
                f"model.time_by_layer_type sums to {recorded!r} s but the kernels' measured "
                f"times sum to {measured!r} s"
            )
        return out
    parts: dict[str, float] = {}
    for k in record.kernels:
        parts[k.layer_type] = parts.get(k.layer_type, 0.0) + k.predicted_s
    for lt in sorted(set(parts) | set(by_type)):
        if _differs(by_type.get(lt, 0.0), parts.get(lt, 0.0)):
            out.append(
                f"model.time_by_layer_type[{lt}] = {by_type.get(lt, 0.0)!r} s but its kernels "
                f"sum to {parts.get(lt, 0.0)!r} s"
            )
            break
    kernels_s = sum(parts.values())
    if m.step_overhead_s is not None and _differs(m.time_s, kernels_s + m.step_overhead_s):
        out.append(
            f"model.time_s = {m.time_s!r} s but the kernels ({kernels_s!r} s) and the step "
            f"overhead ({m.step_overhead_s!r} s) sum to {kernels_s + m.step_overhead_s!r} s"
        )
    elif m.time_s < kernels_s and _differs(m.time_s, kernels_s):
        out.append(f"model.time_s = {m.time_s!r} s is less than its kernels' {kernels_s!r} s")
    return out


def _chips(record: Any) -> list[str]:
    chips, model = record.tags.runtime.chips, record.tags.workload.model
    cfg = PRESETS.get(model)
    problem = chips_problem(chips, model, cfg.heads if cfg is not None else None)
    return [f"tags.runtime.chips = {chips}: {problem}"] if problem else []


def consistency_problems(record: Any) -> list[str]:
    """Where a run record disagrees with itself, one phrase each (empty: consistent).

    Args:
        record: A :class:`~workbench.review.records.store.RunRecord`.

    Returns:
        Phrases such as ``"kernels: 'layers.0.mlp.up_proj' appears 2 times; ..."``.
    """
    return [*_duplicates(record), *_missing(record), *_sums(record), *_chips(record)]
