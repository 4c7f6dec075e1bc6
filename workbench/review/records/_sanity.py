"""Physical plausibility of a run record, checked whatever its lock hashes say.

The record's SHA-256 locks are unkeyed: they prove *integrity* (the file was not edited by
accident or by a tool that forgot to re-lock it), not *authenticity* (anyone can recompute them
for a forged record). So a record that is physically impossible is refused on read even when its
hashes match: negative, zero, NaN or infinite times, MFU, HFU or MBU outside 0..1, HFU below MFU,
stall fractions outside 0..1, latency percentiles out of order, a negative quality error. Tags
are checked as strictly: no tag text holds a control, bidi or other non-printable character
(what the tool writes never does), and a tensor-parallel degree is a plain decimal count.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

__all__ = ["physical_problems", "tag_problems"]

_REL = 1e-6  # rounding slack for ratios written as JSON floats
#: A tensor-parallel degree as the tool writes it: a plain decimal 1..65536.
_DEGREE = re.compile(r"[1-9][0-9]{0,4}")
_MAX_DEGREE = 65536


def _text_problems(value: Any, where: str) -> list[str]:
    """Tag text with a non-printable character, by its path (the first of each field)."""
    if isinstance(value, str):
        return [] if value.isprintable() else [f"{where} holds a control or bidi character"]
    if dataclasses.is_dataclass(value):
        out: list[str] = []
        for f in dataclasses.fields(value):
            out += _text_problems(getattr(value, f.name), f"{where}.{f.name}")
        return out
    if isinstance(value, tuple):
        return [p for i, v in enumerate(value) for p in _text_problems(v, f"{where}[{i}]")]
    return []


def tag_problems(tags: Any) -> list[str]:
    """Tag text holding a non-printable character, a tensor-parallel degree that is no count.

    Args:
        tags: A record's :class:`~workbench.review.records.tags.RunTags`.

    Returns:
        One phrase per problem (empty: the tags are as the tool writes them).
    """
    out = _text_problems(tags, "tags")
    for key, value in tags.workload.extra:
        if key != "tensor_parallel":
            continue
        if not _DEGREE.fullmatch(value) or int(value) > _MAX_DEGREE:
            shown = value[:20].encode("unicode_escape").decode("ascii")
            out.append(f"tags.workload.extra tensor_parallel = {shown!r} is no degree 1..65536")
    return out


def _bad_time(value: float | None, *, zero_ok: bool = False) -> bool:
    if value is None:
        return False
    if not math.isfinite(value):
        return True
    return value < 0 or (value == 0 and not zero_ok)


def _kernel_problems(k: Any, i: int) -> list[str]:
    out = []
    # NOTE: a measured kernel with no sheet row has no prediction (predicted_s 0).
    unpredicted = k.measured_s is not None
    for field in ("predicted_s", "compute_s", "stall_s", "launch_s", "sync_s"):
        if _bad_time(getattr(k, field), zero_ok=field != "predicted_s" or unpredicted):
            out.append(f"kernels[{i}].{field} = {getattr(k, field)!r} s is not a positive time")
    if _bad_time(k.measured_s):
        out.append(f"kernels[{i}].measured_s = {k.measured_s!r} s is not a positive time")
    for field in ("flops", "model_flops", "sram_bytes", "barriers"):
        if getattr(k, field) < 0:
            out.append(f"kernels[{i}].{field} = {getattr(k, field)} is negative")
    if not math.isfinite(k.spill_bytes) or k.spill_bytes < 0:
        out.append(f"kernels[{i}].spill_bytes = {k.spill_bytes!r} is not a byte count")
    for level, b in k.traffic:
        if not math.isfinite(b) or b < 0:
            out.append(f"kernels[{i}].traffic[{level}] = {b!r} is not a byte count")
    return out


def _model_problems(m: Any) -> list[str]:
    out = []
    if _bad_time(m.time_s):
        out.append(f"model.time_s = {m.time_s!r} s is not a positive time")
    if _bad_time(m.measured_time_s):
        out.append(f"model.measured_time_s = {m.measured_time_s!r} s is not a positive time")
    for field in ("mfu", "hfu", "mbu"):
        v = getattr(m, field)
        if v is not None and (not math.isfinite(v) or v < 0 or v > 1 + _REL):
            out.append(f"model.{field} = {v!r} is outside 0..1")
    if m.hfu is not None and m.hfu + _REL < m.mfu:
        out.append(f"model.hfu = {m.hfu!r} is below model.mfu = {m.mfu!r} (HFU >= MFU always)")
    if not math.isfinite(m.peak_flops) or m.peak_flops < 0 or (m.mfu > 0 and m.peak_flops == 0):
        out.append(f"model.peak_flops = {m.peak_flops!r} FLOP/s is not a positive rate")
    if not math.isfinite(m.tokens_per_s) or m.tokens_per_s < 0:
        out.append(f"model.tokens_per_s = {m.tokens_per_s!r} is not a rate")
    if m.model_flops < 0:
        out.append(f"model.model_flops = {m.model_flops} is negative")
    if m.kernel_count is not None and m.kernel_count < 0:
        out.append(f"model.kernel_count = {m.kernel_count} is negative")
    if _bad_time(m.step_overhead_s, zero_ok=True):
        out.append(f"model.step_overhead_s = {m.step_overhead_s!r} s is not a time")
    for name, v in m.stall_fraction_by_layer_type:
        if not math.isfinite(v) or v < 0 or v > 1 + _REL:
            out.append(f"model.stall_fraction_by_layer_type[{name}] = {v!r} is outside 0..1")
    for name, v in m.time_by_layer_type:
        if _bad_time(v, zero_ok=True):
            out.append(f"model.time_by_layer_type[{name}] = {v!r} s is not a time")
    lat = dict(m.latency)
    for name, v in m.latency:
        if _bad_time(v, zero_ok=name == "throughput"):
            out.append(f"model.latency[{name}] = {v!r} is not a positive figure")
    order = [lat[p] for p in ("p50_s", "p95_s", "p99_s") if p in lat]
    if all(math.isfinite(v) for v in order) and order != sorted(order):
        out.append(f"model.latency percentiles out of order (p50 <= p95 <= p99): {order}")
    iv = m.time_interval_s
    if iv and (len(iv) != 2 or any(_bad_time(v) for v in iv) or iv[0] > iv[1]):
        out.append(f"model.time_interval_s = {list(iv)!r} is not a (low <= high) interval")
    if any(_bad_time(v) for v in m.step_times_s):
        out.append("model.step_times_s holds a step time that is not a positive time")
    if m.step_times_s and len(m.step_times_s) > MAX_STEPS:
        out.append(f"model.step_times_s lists {len(m.step_times_s)} steps (at most {MAX_STEPS})")
    if m.quality_error is not None and (not math.isfinite(m.quality_error) or m.quality_error < 0):
        out.append(f"model.quality_error = {m.quality_error!r} is not a non-negative error")
    return out


#: Most steady steps a record lists (a profiler trace holds a handful to a few hundred).
MAX_STEPS = 100_000


def physical_problems(record: Any) -> list[str]:
    """Everything physically impossible in a run record, one phrase each (empty: plausible).

    Args:
        record: A :class:`~workbench.review.records.store.RunRecord`.

    Returns:
        Phrases such as ``"model.time_s = -1.0 s is not a positive time"``.
    """
    out = _model_problems(record.model)
    for i, k in enumerate(record.kernels):
        out += _kernel_problems(k, i)
    if not record.kernels:
        out.append("kernels: a run record needs at least one kernel")
    w = record.tags.workload
    if w.batch <= 0 or (w.seq is not None and w.seq <= 0) or (w.context or 0) < 0:
        out.append(f"tags.workload: batch {w.batch}, seq {w.seq}, context {w.context} impossible")
    return out
