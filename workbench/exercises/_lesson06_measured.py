"""Lesson 06's real measured pair, triaged by the tool: the DLRM A100 -> V100 traces.

The two public PyTorch-profiler traces of Holistic Trace Analysis's test data (MIT licence;
source, commit and files in ``tests/data/hta/README.md``) become run records exactly as
``workbench run --from-trace T --record R`` writes them (no model given: the rows name the
operators that launched them) and go through :func:`workbench.review.decision.verdict` with the
hardware declared changed, as ``workbench triage a100.json v100.json --changed hardware`` would.
Every sentence here is computed from those reports and the traces.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from workbench._format import fmt_time
from workbench.errors import WorkbenchError
from workbench.evidence import MeasuredRun, read_trace_and_operators
from workbench.evidence.launches import launch_stats
from workbench.evidence.operators import RecordedOps
from workbench.exercises._claims import Claim
from workbench.models.from_trace import gemm_format
from workbench.review import RunRecord, TriageReport, record_from_trace, triage
from workbench.review.join._templates import template_differences

__all__ = [
    "A100_TRACE",
    "HTA_DATA",
    "V100_TRACE",
    "host_windows",
    "launch_lag_claim",
    "measured_headline_claim",
    "measured_records",
    "measured_triage",
    "pair_differences_claim",
    "read_pair_trace",
]

#: Where the lesson's real measured pair lives: Holistic Trace Analysis's public test data.
HTA_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "hta"
A100_TRACE, V100_TRACE = "dlrm_a100.json.gz", "dlrm_v100_rank1.json.gz"


def _trace(name: str) -> Path:
    path = HTA_DATA / name
    if not path.is_file():
        raise WorkbenchError(f"lesson 06: {path} is missing (run the lesson from a checkout)")
    return path


@lru_cache(maxsize=2)
def read_pair_trace(name: str) -> tuple[MeasuredRun, RecordedOps]:
    """One trace's run and operators, read once (both frozen; several cells use them)."""
    path = _trace(name)
    return read_trace_and_operators(path)


@lru_cache(maxsize=1)
def measured_records() -> tuple[RunRecord, RunRecord]:
    """The A100 and V100 traces as run records (``run --from-trace``, no model)."""
    (a, ops_a), (b, ops_b) = read_pair_trace(A100_TRACE), read_pair_trace(V100_TRACE)
    return record_from_trace(a, operators=ops_a), record_from_trace(b, operators=ops_b)


@lru_cache(maxsize=1)
def measured_triage() -> TriageReport:
    """The tool's triage of the pair, the hardware declared changed (no serving simulation)."""
    base, cand = measured_records()
    return triage(base, cand, changed="hardware", simulate=False)


def _gemm_formats(run: MeasuredRun) -> dict[str, float]:
    """Steady-state GEMM kernel time per step by the format its kernels ran in, s."""
    steady = {it.index for it in run.steady_iterations}
    out: dict[str, float] = defaultdict(float)
    for k in run.kernels:
        if k.category == "gemm" and k.iteration in steady:
            out[gemm_format("fp32", [k.name])] += k.duration_s
    return {f: t / max(len(steady), 1) for f, t in out.items()}


def _share_phrase(share: float) -> str:
    return "all" if share >= 0.995 else f"{share:.0%}"


def measured_headline_claim() -> Claim:
    """The headline the tool's own triage gives the real pair, with what backs it."""
    r = measured_triage()
    ff = r.first_failing
    h = r.headline()
    if ff is None:
        return Claim(
            f"Triage of the real pair finds no material regression (step time "
            f"{h['change']:+.1%}, noise ±{h['noise']:.1%}); decision: **{r.decision}**."
        )
    others = ", ".join(f"{m.kernel} {m.share:.0%}" for m in r.mechanisms[1:3])
    text = (
        f"The tool's triage of the real pair (`workbench triage a100.json v100.json --changed "
        f"hardware`): step time **{h['change']:+.1%}**, first failing mechanism "
        f"**{ff.mechanism} at {ff.kernel}**, {ff.share:.1%} of the "
        f"+{fmt_time(ff.total_delta_s)} regression"
        + (f" (then {others})" if others else "")
        + f"; owner: {r.owner.role if r.owner else 'none'}; decision: **{r.decision}**."
    )
    fa = _gemm_formats(read_pair_trace(A100_TRACE)[0])
    fv = _gemm_formats(read_pair_trace(V100_TRACE)[0])
    if ff.kernel == "gemm kernels" and fa and fv:
        ta, tv = fa.get("tf32", 0.0) / sum(fa.values()), fv.get("fp32", 0.0) / sum(fv.values())
        text += (
            f" The A100 ran {_share_phrase(ta)} of its GEMM time in TF32 on its tensor cores; "
            f"the V100, whose tensor cores take no FP32 data, ran {_share_phrase(tv)} of its "
            "GEMM time as FP32 on its CUDA cores."
        )
    return Claim(text)


def pair_differences_claim() -> Claim:
    """What differs between the two runs besides the GPU, from the traces themselves."""
    (a, ops_a), (b, ops_b) = read_pair_trace(A100_TRACE), read_pair_trace(V100_TRACE)
    parts = []
    for tag in ("world_size", "rank"):
        if a.tag(tag) != b.tag(tag):
            parts.append(f"{tag.replace('_', ' ')} {a.tag(tag)} vs {b.tag(tag)}")
    sharded = template_differences(a, ops_a, b, ops_b)
    if sharded:
        d = sharded[0]
        a_args, b_args = d.baseline[0], d.candidate[0]
        same_arity = len(a_args) == len(b_args)
        moved = [i for i in range(len(a_args)) if same_arity and a_args[i] != b_args[i]]
        arg = f"`{a_args[moved[0]]}` vs `{b_args[moved[0]]}`" if moved else "other arguments"
        parts.append(
            f"sharding: {len(sharded)} kernel template(s) run with other template arguments "
            f"from the same operator (`{d.template}`: {arg})"
        )
    compiled_a = {op.name for op in ops_a.ops if op.name.startswith("CompiledFunction")}
    compiled_b = {op.name for op in ops_b.ops if op.name.startswith("CompiledFunction")}
    if compiled_b and not compiled_a:
        parts.append("the V100 run was compiled (`CompiledFunction` operators), the A100 one eager")
    elif compiled_a and not compiled_b:
        parts.append("the A100 run was compiled (`CompiledFunction` operators), the V100 one eager")
    if not parts:
        return Claim("Besides the GPU, the two traces run the same thing.")
    return Claim(
        "Besides the GPU, the two traces differ in: " + "; ".join(parts) + ". So the change in "
        "step time is not the GPU generation alone."
    )


def launch_lag_claim() -> Claim:
    """How far the GPU runs behind the host on each trace's main stream (launch statistics)."""
    rows = []
    for label, name in (("A100", A100_TRACE), ("V100", V100_TRACE)):
        stats = launch_stats(read_pair_trace(name)[0])
        main = max(stats, key=lambda s: s.launches)
        rows.append((label, main))
    parts = [
        f"{label} stream {s.stream}: launch delay median {fmt_time(s.delay.median)}, "
        f"{s.queue.mean:.0f} operations queued on average (at most {s.queue.maximum:.0f})"
        for label, s in rows
    ]
    lag = rows[1][1].delay.median / rows[0][1].delay.median if rows[0][1].delay.median else 0
    verdict = (
        f"The V100's work waits x{lag:.0f} longer after its launch: its GPU lags the host"
        if lag > 1
        else "The V100's GPU does not lag the host more than the A100's"
    )
    return Claim(
        "Host-side launches on the main stream (HTA's definitions: delay = kernel start minus "
        "the end of its launch call): " + "; ".join(parts) + f". {verdict}."
    )


def host_windows(run: MeasuredRun) -> dict[int, tuple[float, float]]:
    """Per step: first-to-last GPU activity of the kernels its host-side step launched, s.

    The window a naive reading takes for a step (issue 17's defect): when the GPU lags the host,
    consecutive windows overlap.
    """
    out: dict[int, tuple[float, float]] = {}
    for k in run.kernels:
        if k.iteration is None:
            continue
        s, e = out.get(k.iteration, (k.start_s, k.end_s))
        out[k.iteration] = (min(s, k.start_s), max(e, k.end_s))
    return dict(sorted(out.items()))


def naive_step_s(run: MeasuredRun) -> float:
    """The median steady-state host-window length (:func:`host_windows`), s."""
    w = host_windows(run)
    steady = list(w.values())[1:] or list(w.values())
    return statistics.median(e - s for s, e in steady)
