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

from workbench.errors import WorkbenchError
from workbench.evidence import MeasuredRun, read_trace_and_operators
from workbench.evidence.launches import launch_stats
from workbench.evidence.operators import RecordedOps
from workbench.exercises._claims import Claim
from workbench.exercises._shared import DATA
from workbench.exercises._text import LessonText
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

_TEXT = LessonText("lesson06")

#: Where the lesson's real measured pair lives: Holistic Trace Analysis's public test data.
HTA_DATA = DATA / "hta"
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


def measured_headline_claim() -> Claim:
    """The headline the tool's own triage gives the real pair, with what backs it."""
    r = measured_triage()
    ff = r.first_failing
    h = r.headline()
    if ff is None:
        return _TEXT.claim(
            "headline_none", change=h["change"], noise=h["noise"], decision=r.decision
        )
    fa = _gemm_formats(read_pair_trace(A100_TRACE)[0])
    fv = _gemm_formats(read_pair_trace(V100_TRACE)[0])
    formats = ff.kernel == "gemm kernels" and bool(fa) and bool(fv)
    ta = fa.get("tf32", 0.0) / sum(fa.values()) if formats else 0.0
    tv = fv.get("fp32", 0.0) / sum(fv.values()) if formats else 0.0
    return _TEXT.claim(
        "headline",
        change=h["change"],
        mechanism=ff.mechanism,
        kernel=ff.kernel,
        share=ff.share,
        delta=ff.total_delta_s,
        others=r.mechanisms[1:3],
        owner=r.owner.role if r.owner else "none",
        decision=r.decision,
        formats=formats,
        tf32=ta,
        tf32_all=ta >= 0.995,  # NOTE: a share that rounds to 100 % reads "all"
        fp32=tv,
        fp32_all=tv >= 0.995,
    )


def pair_differences_claim() -> Claim:
    """What differs between the two runs besides the GPU, from the traces themselves."""
    (a, ops_a), (b, ops_b) = read_pair_trace(A100_TRACE), read_pair_trace(V100_TRACE)
    parts = []
    for tag in ("world_size", "rank"):
        if a.tag(tag) != b.tag(tag):
            parts.append(
                _TEXT.render(
                    "difference_tag", tag=tag.replace("_", " "), a=a.tag(tag), b=b.tag(tag)
                )
            )
    sharded = template_differences(a, ops_a, b, ops_b)
    if sharded:
        d = sharded[0]
        a_args, b_args = d.baseline[0], d.candidate[0]
        same_arity = len(a_args) == len(b_args)
        moved = [i for i in range(len(a_args)) if same_arity and a_args[i] != b_args[i]]
        parts.append(
            _TEXT.render(
                "difference_sharding",
                count=len(sharded),
                template=d.template,
                moved=bool(moved),
                a=a_args[moved[0]] if moved else None,
                b=b_args[moved[0]] if moved else None,
            )
        )
    compiled_a = {op.name for op in ops_a.ops if op.name.startswith("CompiledFunction")}
    compiled_b = {op.name for op in ops_b.ops if op.name.startswith("CompiledFunction")}
    if compiled_b and not compiled_a:
        parts.append(_TEXT.render("difference_compiled", compiled="V100", eager="A100"))
    elif compiled_a and not compiled_b:
        parts.append(_TEXT.render("difference_compiled", compiled="A100", eager="V100"))
    if not parts:
        return _TEXT.claim("pair_same")
    return _TEXT.claim("pair_differences", parts=parts)


def launch_lag_claim() -> Claim:
    """How far the GPU runs behind the host on each trace's main stream (launch statistics)."""
    rows = []
    for label, name in (("A100", A100_TRACE), ("V100", V100_TRACE)):
        stats = launch_stats(read_pair_trace(name)[0])
        main = max(stats, key=lambda s: s.launches)
        rows.append((label, main))
    parts = [
        _TEXT.render(
            "launch_part",
            label=label,
            stream=s.stream,
            delay=s.delay.median,
            queued=s.queue.mean,
            queued_max=s.queue.maximum,
        )
        for label, s in rows
    ]
    lag = rows[1][1].delay.median / rows[0][1].delay.median if rows[0][1].delay.median else 0
    return _TEXT.claim("launch_lag", parts=parts, lag=lag)


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
