"""Text for a terminal: ``workbench trace DIR`` on a job folder, and on a pair of job folders.

The documents are built in :mod:`workbench.review.join.job_summary`; this module only lays them
out (times formatted here, seconds in the documents; text from a trace escaped).
"""

from __future__ import annotations

from typing import Any

from workbench._format import fmt_delta, fmt_time
from workbench.errors import printable

__all__ = ["job_pair_text", "job_text"]


def job_text(doc: dict[str, Any]) -> str:
    """Render :func:`~workbench.review.join.job_summary.job_document` for a terminal."""
    world = doc["world_size"] if doc["world_size"] is not None else "unknown"
    job = doc["job"]
    lines = [
        f"job: {doc['ranks_read']} rank(s) read of world size {world} ({doc['backend']}), "
        f"{len(doc['steps'])} steady step(s)",
        f"job step time {fmt_time(job['step_s'])} (median; each step set by its slowest rank)",
        printable(doc["headline"]),
        "per rank (medians over the steady steps)",
        f"  {'rank':>5} {'step':>9} {'coll. wait':>10} {'own work':>9} {'idle':>6} "
        f"{'compute':>8}  top own category",
    ]
    for r in doc["ranks"]:
        own = {k: v for k, v in r["own_s"].items() if k != "idle"}
        top = max(own, key=own.__getitem__) if own else "-"
        b = r["breakdown"]
        lines.append(
            f"  {r['rank']:>5} {fmt_time(r['step_s']):>9} {fmt_time(r['collective_wait_s']):>10} "
            f"{fmt_time(r['work_s']):>9} {b['idle_pct']:>5.1f}% {b['compute_pct']:>7.1f}%  {top}"
        )
    for s in doc["stragglers"]:
        lines.append(
            f"straggler: rank {s['rank']}, {s['category']}, "
            f"{fmt_time(s['lost_s_per_step'])} lost per step"
        )
    lines += [f"skipped: {printable(s['reason'])}" for s in doc["skipped"]]
    lines += [f"warning: {printable(w)}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"


def _shift(s: dict[str, Any] | None) -> str:
    if s is None:
        return "fewer than 2 steady steps on a side: no shift"
    noise = "beyond the noise" if s["beyond_noise"] else "within the noise"
    return (
        f"{fmt_delta(s['estimate_s'])} per step (95% {fmt_delta(s['low_s'])}.."
        f"{fmt_delta(s['high_s'])}, {s['method']}, {noise})"
    )


def job_pair_text(doc: dict[str, Any]) -> str:
    """Render :func:`~workbench.review.join.job_summary.job_pair_document` for a terminal."""
    b, c = doc["baseline"]["job"], doc["candidate"]["job"]
    lines = [
        f"job step time {fmt_time(b['step_s'])} -> {fmt_time(c['step_s'])}: "
        + _shift(doc["job_shift"]),
        "candidate: " + printable(doc["headline"]),
        "per rank, steps paired in order",
    ]
    for r in doc["ranks"]:
        lines.append(
            f"  rank {r['rank']:>4}: {fmt_time(r['baseline_step_s'])} -> "
            f"{fmt_time(r['candidate_step_s'])}, wait {fmt_time(r['baseline_wait_s'])} -> "
            f"{fmt_time(r['candidate_wait_s'])}: " + _shift(r["shift"])
        )
    for side in ("baseline", "candidate"):
        lines += [f"{side} skipped: {printable(s['reason'])}" for s in doc[side]["skipped"]]
        lines += [f"{side} warning: {printable(w)}" for w in doc[side]["warnings"]]
    return "\n".join(lines) + "\n"
