"""Lesson 11, choosing a platform: the fit matrix, perf per watt, risk, and the synthetic-GEMM trap.

The trap: rank platforms by one large square GEMM (the benchmark slide), then rank them by
serving a production-like trace at a latency SLA. The mapper and the serving simulator compute
both; nothing here is a hand-entered figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim, gated
from workbench.exercises._decode import decode_expected_s, decode_floor_s
from workbench.exercises._moves import ControlMove
from workbench.exercises._shared import hardware, mapping
from workbench.exercises._text import LessonText
from workbench.exercises.lesson10 import panel_claim, panel_moves, panel_sweep
from workbench.ir import Graph, Linear
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.platform.compare import RATE_FRACTIONS, PlatformRow, compare_platforms, shortlist
from workbench.platform.fit import FitReport, fit_check, memory_reserve
from workbench.serving import find_knee

__all__ = [
    "PANEL",
    "SERVING_STACK",
    "bound_claim",
    "check_decode_expected",
    "check_fit_headroom",
    "check_gemm_prediction",
    "check_scores",
    "decode_inputs_table",
    "expected_claim",
    "fit_claim",
    "fit_compare_claim",
    "fit_table",
    "gemm_table",
    "matrix",
    "matrix_table",
    "memory_table",
    "risk_inputs_table",
    "shortlist_claim",
    "trace_gap_claim",
    "trace_gap_table",
    "trap_claim",
    "trap_table",
    "widget_claim",
    "widget_moves",
]

_TEXT = LessonText("lesson11")

#: The LatencyPanel's controls as the lesson builds it (1,000 requests a rate at the fit
#: matrix's rate fractions).
PANEL: dict[str, object] = {
    "model": "llama2-7b",
    "hardware": "gaudi3",
    "trace": "production-chat",
    "max_batch": 16,
    "sla_ms": 20000.0,
}


def gemm_table(platforms: Sequence[str], n: int = 8192, dtype: str = "bf16") -> pd.DataFrame:
    """One square ``n x n x n`` GEMM mapped on each platform: TFLOP/s achieved and rank."""
    op = Linear(name="gemm", inputs=("x",), tokens=(n,), in_features=n, out_features=n, dtype=dtype)
    graph = Graph(name=f"gemm {n}", ops=(op,), meta=(("phase", "inference"), ("batch", n)))
    rows = []
    for p in platforms:
        m = map_model(graph, hardware(p))
        rows.append(
            {
                "platform": p,
                "gemm_ms": round(m.time_s * 1e3, 3),
                "tflops": round(m.model_flops / m.time_s / 1e12, 1),
            }
        )
    df = pd.DataFrame(rows).set_index("platform")
    df["gemm_rank"] = df["tflops"].rank(ascending=False).astype(int)
    return df


def matrix(
    models: Sequence[str],
    platforms: Sequence[str],
    *,
    sla_s: float = 20.0,
    trace: str = "production-chat",
    n_requests: int = 1000,
    max_batch: int = 16,
) -> tuple[PlatformRow, ...]:
    """The fit matrix on named platforms (see :func:`workbench.platform.compare_platforms`)."""
    return compare_platforms(
        models,
        [hardware(p) for p in platforms],
        sla_s=sla_s,
        trace=trace,
        n_requests=n_requests,
        max_batch=max_batch,
    )


def matrix_table(rows: Sequence[PlatformRow]) -> pd.DataFrame:
    """The matrix as a frame (rounded): the inputs of the shortlist's score, not its ranks.

    The ranks answer Exercise 2: :func:`shortlist_claim` shows them after its check.
    """
    out = []
    for r in rows:
        out.append(
            {
                "model": r.model,
                "platform": r.hardware,
                "fits": r.fits,
                "gib_per_chip": round(r.memory_bytes / 2**30, 1),
                "largest": r.dominant,
                "mfu": round(r.mfu, 2),
                "req_per_s_at_sla": round(r.throughput_at_sla, 2),
                "j_per_item": round(r.energy_per_item_j, 3),
                "items_per_j": round(r.perf_per_watt, 2),
                "risk": round(r.risk, 2),
            }
        )
    return pd.DataFrame(out).set_index(["model", "platform"])


def risk_inputs_table(platforms: Sequence[str]) -> pd.DataFrame:
    """What the risk figure and the tail read from each profile: software block and variance.

    Returns:
        A frame with one column per platform and the rows ``maturity`` (0..1),
        ``fused_attention``, ``graph_capture``, ``attention_kernel``, ``launch_jitter_us`` (µs),
        ``slow_step_probability`` and ``slow_step_factor``.
    """
    rows = []
    for p in platforms:
        hw = hardware(p)
        sw, rv = hw.software, hw.runtime_variance
        rows.append(
            {
                "platform": p,
                "maturity": sw.maturity,
                "fused_attention": sw.fused_attention,
                "graph_capture": sw.graph_capture,
                "attention_kernel": getattr(sw, "attention_kernel", ""),
                "launch_jitter_us": round(rv.launch_jitter_s * 1e6, 2) if rv else "n/a",
                "slow_step_probability": rv.slow_step_probability if rv else "n/a",
                "slow_step_factor": rv.slow_step_factor if rv else "n/a",
            }
        )
    # NOTE: one column per platform: seven inputs side by side would not fit a laptop's cell.
    return pd.DataFrame(rows).set_index("platform").T


def trap_table(gemm: pd.DataFrame, rows: Sequence[PlatformRow]) -> pd.DataFrame:
    """Side by side: rank on the synthetic GEMM against rank serving the trace at the SLA."""
    serve = pd.DataFrame(
        [
            {
                "platform": r.hardware,
                "req_per_s_at_sla": round(r.throughput_at_sla, 2),
                "p99_at_sla_s": round(r.p99_at_sla_s or 0.0, 2),
            }
            for r in rows
        ]
    ).set_index("platform")
    out = gemm.join(serve)
    out["serving_rank"] = out["req_per_s_at_sla"].rank(ascending=False, method="min").astype(int)
    return out


def trace_gap_table(
    model: str,
    platforms: Sequence[str],
    *,
    sla_s: float = 20.0,
    max_batch: int = 16,
    n_requests: int = 1000,
) -> pd.DataFrame:
    """The knee (offered requests/s at the p99 SLA) per platform and trace, as the panel runs it.

    The sweep is the LatencyPanel's (:func:`workbench.exercises.lesson10.panel_sweep` at the
    fit matrix's rate fractions), so the table, the panel and the claim agree.

    Returns:
        Rows indexed by platform; columns ``production-chat`` and ``synthetic-fixed``
        (requests/s at the knee, 0 when every rate breaks the SLA).
    """
    rows = []
    for p in platforms:
        row: dict[str, object] = {"platform": p}
        for trace in ("production-chat", "synthetic-fixed"):
            pts = panel_sweep(
                model, p, trace=trace, max_batch=max_batch, n=n_requests, fractions=RATE_FRACTIONS
            )
            ok = find_knee(pts, sla_s=sla_s).last_ok
            row[trace] = round(ok.offered_rate_per_s, 2) if ok else 0.0
        rows.append(row)
    return pd.DataFrame(rows).set_index("platform")


def trace_gap_claim(table: pd.DataFrame, a: str, b: str) -> Claim:
    """Does the synthetic trace narrow or widen the gap between two platforms' knees?

    Args:
        table: A :func:`trace_gap_table` frame.
        a: The platform compared against.
        b: The other platform.

    Returns:
        A Markdown sentence with both ratios (knee of ``b`` over knee of ``a``).
    """
    prod = table.loc[b, "production-chat"] / max(table.loc[a, "production-chat"], 1e-9)
    syn = table.loc[b, "synthetic-fixed"] / max(table.loc[a, "synthetic-fixed"], 1e-9)
    if abs(syn - prod) <= 0.05 * prod:
        change = "same"
    else:
        change = "narrower" if abs(syn - 1) < abs(prod - 1) else "wider"
    return _TEXT.claim("trace_gap", a=a, b=b, production=prod, synthetic=syn, change=change)


def trap_claim(table: pd.DataFrame) -> Claim:
    """The synthetic-GEMM trap, read from :func:`trap_table`.

    Returns:
        Markdown: the GEMM winner and its serving rank, and the serving winner and its GEMM
        rank.
    """
    g = table["gemm_rank"].idxmin()
    s = table["serving_rank"].idxmin()
    if g == s:
        return _TEXT.claim("trap_none", winner=g)
    return _TEXT.claim(
        "trap",
        gemm=g,
        tflops=table.loc[g, "tflops"],
        gemm_serving_rank=table.loc[g, "serving_rank"],
        serving=s,
        requests=table.loc[s, "req_per_s_at_sla"],
        serving_gemm_rank=table.loc[s, "gemm_rank"],
    )


#: The serving stack whose memory reserve the fit check holds back (``stacks/vllm.yaml``).
SERVING_STACK = "vllm"


def fit_table(
    model: str,
    platform: str,
    chips: Sequence[int],
    *,
    batch: int = 16,
    context: int = 4096,
    stack: str = SERVING_STACK,
) -> pd.DataFrame:
    """The memory fit of ``model`` on 1..N chips of tensor parallel (GiB = 2**30 bytes per chip).

    Returns:
        One row per chip count: weights, KV cache, activations and their total (``need_gib``),
        the capacity, the serving stack's reserve (``reserve_gib``), the headroom left after it
        (negative: short by that much) and whether it fits.
    """
    rows = []
    for n in chips:
        f = fit_check(
            model, hardware(platform), batch=batch, context=context, tensor_parallel=n, stack=stack
        )
        rows.append(
            {
                "chips": n,
                "weights_gib": round(f.weights_bytes / 2**30, 1),
                "kv_gib": round(f.kv_bytes / 2**30, 1),
                "activations_gib": round(f.activation_bytes / 2**30, 2),
                "need_gib": round(f.total_bytes / 2**30, 2),
                "capacity_gib": round(f.capacity_bytes / 2**30, 1),
                "reserve_gib": round(f.reserve_bytes / 2**30, 2),
                "headroom_gib": round(f.headroom_bytes / 2**30, 2),
                "fits": f.fits,
            }
        )
    return pd.DataFrame(rows).set_index("chips")


def fit_claim(
    model: str,
    platform: str,
    chips: Sequence[int],
    *,
    batch: int = 16,
    context: int = 4096,
    stack: str = SERVING_STACK,
) -> Claim:
    """The serving stack's reserve, and what it changes in :func:`fit_table`.

    Returns:
        Markdown: the reserve (share, GiB, source), the fewest chips that fit after it with
        their headroom, and the chip counts that fit only if nothing were reserved.
    """
    hw = hardware(platform)
    with_reserve = {
        n: fit_check(model, hw, batch=batch, context=context, tensor_parallel=n, stack=stack)
        for n in chips
    }
    first = next((n for n in chips if with_reserve[n].fits), None)
    # NOTE: what would fit with nothing reserved: the need against the whole capacity
    only_bare = [
        f for f in with_reserve.values() if not f.fits and f.total_bytes <= f.capacity_bytes
    ]
    r = with_reserve[chips[0]]
    return _TEXT.claim(
        "fit",
        stack=stack,
        share=r.reserve.fraction,
        reserve=r.reserve_bytes / 2**30,
        capacity=r.capacity_bytes / 2**30,
        usable=r.usable_bytes / 2**30,
        origin=r.reserve.origin,
        first=first,
        first_headroom=with_reserve[first].headroom_bytes / 2**30 if first else None,
        bare=[
            {
                "n": f.tensor_parallel,
                "need": f.total_bytes / 2**30,
                "left": (f.capacity_bytes - f.total_bytes) / 2**20,
                "over": -f.headroom_bytes / 2**30,
            }
            for f in only_bare
        ],
    )


def check_gemm_prediction(
    prediction: object,
    *,
    platforms: Sequence[str] = ("h200", "gaudi3"),
    n: int = 8192,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: which of ``platforms`` runs one square ``n x n x n`` bf16 GEMM fastest?

    The answer is the first-ranked row of :func:`gemm_table` (computed, not stored).
    """
    table = gemm_table(platforms, n=n)
    return compare(
        f"fastest on the {n} GEMM (of {', '.join(platforms)})",
        prediction,
        str(table["gemm_ms"].idxmin()),
        **_TEXT.hints("gemm_prediction"),
        strict=strict,
    )


def memory_table(platforms: Sequence[str], stack: str = SERVING_STACK) -> pd.DataFrame:
    """What each platform's chip holds, and the share the serving stack keeps back of it.

    Returns:
        One row per platform: ``capacity_gib`` (the profile's off-chip memory, GiB = 2**30 bytes)
        and ``reserve_share`` (the fraction of it ``stack`` reserves).
    """
    share = memory_reserve(stack).fraction
    return pd.DataFrame(
        [
            {
                "platform": p,
                "capacity_gib": round(hardware(p).offchip.capacity_bytes / 2**30, 1),
                "reserve_share": share,
            }
            for p in platforms
        ]
    ).set_index("platform")


def _served_fit(model: str, platform: str, chips: int, *, batch: int, context: int) -> FitReport:
    """:func:`fit_check` of ``model`` on ``chips`` chips of ``platform`` under the serving stack."""
    hw = hardware(platform)
    return fit_check(
        model, hw, batch=batch, context=context, tensor_parallel=chips, stack=SERVING_STACK
    )


def _headroom_name(model: str, platform: str, chips: int) -> str:
    """The name :func:`check_fit_headroom` reports (its gated claim uses it)."""
    return f"fit headroom of {model} on {chips} x {platform} (GiB per chip)"


def check_fit_headroom(
    answer: object,
    *,
    model: str,
    platform: str,
    chips: int,
    batch: int = 16,
    context: int = 4096,
    strict: bool | None = None,
) -> CheckResult:
    """Check the per-chip headroom (GiB) of ``model`` on ``chips`` chips of ``platform`` (1 %).

    From the quantities the fit uses: the need per chip (weights, KV cache and activations of
    one tensor-parallel slice, the same on any platform) against what the serving stack
    (:data:`SERVING_STACK`) leaves of the chip's capacity after its reserve. Negative: short.
    """
    f = _served_fit(model, platform, chips, batch=batch, context=context)
    return compare(
        _headroom_name(model, platform, chips),
        answer,
        f.headroom_bytes / 2**30,
        rel_tol=0.01,
        **_TEXT.hints("fit_headroom"),
        strict=strict,
    )


def fit_compare_claim(
    model: str,
    platforms: Sequence[str],
    chips: Sequence[int],
    *,
    exercise: tuple[str, int],
    batch: int = 16,
    context: int = 4096,
) -> Claim:
    """The fewest chips that fit on each platform, and Exercise 1's headroom (gated behind it).

    Args:
        model: Decoder preset.
        platforms: Profile names.
        chips: Tensor-parallel chip counts tried.
        exercise: Exercise 1's ``(platform, chips)``.
        batch: Sequences.
        context: Tokens per sequence.

    Returns:
        Markdown: the need per chip at the exercise's split, its headroom, and per platform the
        fewest chips that fit after the stack's reserve.
    """
    platform, n = exercise
    fits = {p: [_served_fit(model, p, c, batch=batch, context=context) for c in chips]
            for p in platforms}  # fmt: skip
    f = _served_fit(model, platform, n, batch=batch, context=context)
    claim = _TEXT.claim(
        "fit_compare",
        model=model,
        platform=platform,
        chips=n,
        need=f.total_bytes / 2**30,
        headroom=f.headroom_bytes / 2**30,
        fewest=[
            {"platform": p, "chips": next((x.tensor_parallel for x in fs if x.fits), None)}
            for p, fs in fits.items()
        ],
        largest=max(chips),
    )
    return gated(claim, after=_headroom_name(model, platform, n), label="Exercise 1")


#: The name :func:`check_scores` reports (:func:`shortlist_claim` is gated behind it).
SCORES_EXERCISE = "shortlist scores"


def check_scores(
    answer: object,
    *,
    rows: Sequence[PlatformRow],
    platforms: tuple[str, str],
    strict: bool | None = None,
) -> CheckResult:
    """Check the shortlist scores of two platforms, as a pair in the order given (1 % each).

    The shortlist's rule (:func:`workbench.platform.compare.shortlist`): requests/s at the SLA
    per chip x (1 - risk), from the fit matrix's own columns.
    """
    by_name = {r.hardware: r for r in rows}
    return compare(
        SCORES_EXERCISE,
        answer,
        tuple(by_name[p].score for p in platforms),
        rel_tol=0.01,
        **_TEXT.hints("scores"),
        strict=strict,
    )


def shortlist_claim(rows: Sequence[PlatformRow], platforms: tuple[str, str]) -> Claim:
    """The ranked shortlist, and whether its score reorders Exercise 2's two platforms (gated).

    Args:
        rows: The fit matrix.
        platforms: Exercise 2's two platforms.

    Returns:
        Markdown: each shortlisted platform with its score in rank order, and the two
        platforms' order by throughput at the SLA against their order by score.
    """
    ranked = shortlist(rows, k=len(rows))
    by_name = {r.hardware: r for r in rows}
    a, b = (by_name[p] for p in platforms)
    hi_score, lo_score = (a, b) if a.score >= b.score else (b, a)
    claim = _TEXT.claim(
        "shortlist",
        ranked=[{"platform": r.hardware, "score": r.score} for r in ranked],
        left_out=[r.hardware for r in rows if r not in ranked],
        first=hi_score.hardware,
        second=lo_score.hardware,
        first_rate=hi_score.throughput_at_sla,
        second_rate=lo_score.throughput_at_sla,
        first_risk=hi_score.risk,
        second_risk=lo_score.risk,
    )
    return gated(claim, after=SCORES_EXERCISE, label="Exercise 2")


def widget_moves() -> tuple[ControlMove, ...]:
    """The instructions of lesson 11's panel, as data: the other platform, then the trace."""
    return panel_moves(PANEL, (("hardware", "h200"), ("trace", "synthetic-fixed")))


def widget_claim(n: int = 1000) -> Claim:
    """Lesson 11's panel instructions and the knee each one moves to (the panel's own sweep)."""
    return panel_claim(widget_moves(), n=n, fractions=RATE_FRACTIONS)


def bound_claim(
    platforms: Sequence[str],
    trap: pd.DataFrame,
    model: str = "llama2-7b",
    *,
    batch: int = 16,
    context: int = 1024,
) -> Claim:
    """What bounds serving: a decode step's MBU and MFU, and which ranking serving follows.

    Args:
        platforms: Profile names.
        trap: A :func:`trap_table` frame of the same platforms (its ``serving_rank``).
        model: Decoder preset.
        batch: Sequences in the decode step (the panel's batch limit).
        context: Cached tokens of the decode step.

    Returns:
        Markdown: the decode step's MBU and MFU range over the platforms, and the rank
        correlation of the serving order with the sustained off-chip bandwidth and with the
        dense peak FLOP/s.
    """
    rows = []
    for p in platforms:
        m = mapping(model, p, phase="decode", batch=batch, seq=context)
        rows.append(
            {"platform": p, "mbu": m.mbu, "mfu": m.mfu, "peak": m.peak_flops,
             "bandwidth": hardware(p).offchip.sustained_bytes_per_s}
        )  # fmt: skip
    df = pd.DataFrame(rows).set_index("platform")
    serve = -trap.loc[df.index, "serving_rank"].astype(float)
    # NOTE: Spearman's rank correlation: Pearson's on the ranks (no scipy needed)
    corr_bw = float(serve.rank().corr(df["bandwidth"].rank()))
    corr_peak = float(serve.rank().corr(df["peak"].rank()))
    return _TEXT.claim(
        "bound",
        batch=batch,
        context=context,
        mbu_min=df["mbu"].min(),
        mbu_max=df["mbu"].max(),
        mfu_min=df["mfu"].min(),
        mfu_max=df["mfu"].max(),
        corr_bandwidth=corr_bw,
        corr_peak=corr_peak,
    )


def decode_inputs_table(platforms: Sequence[str], model: str = "llama2-7b") -> pd.DataFrame:
    """What the decode exercise needs: the model's parameters and each platform's two rates.

    Returns:
        One row per platform: ``params`` (the model's), ``bytes_per_weight`` (bf16),
        ``peak_bytes_per_s`` (the datasheet peak off-chip bandwidth: the floor's rate) and
        ``sustained_bytes_per_s`` (what a well-tuned kernel sustains: the expected rate).
    """
    params = build_graph(model, "decode", batch=1, seq=1).params
    return pd.DataFrame(
        [
            {
                "platform": p,
                "params": params,
                "bytes_per_weight": 2,
                "peak_bytes_per_s": f"{hardware(p).offchip.bandwidth_bytes_per_s:.4g}",
                "sustained_bytes_per_s": f"{hardware(p).offchip.sustained_bytes_per_s:.4g}",
            }
            for p in platforms
        ]
    ).set_index("platform")


def check_decode_expected(
    answer: object, *, model: str = "llama2-7b", platform: str = "h200", strict: bool | None = None
) -> CheckResult:
    """The tokens/s one sequence should expect on ``platform`` at the sustained rate (2 %).

    From first principles: each new token reads every weight once, so a step takes the weight
    bytes over the sustained off-chip rate (the course's *expected* step,
    :mod:`workbench.exercises._decode`); tokens/s is its inverse. The datasheet peak gives the
    *ceiling* (the floor's inverse), a different figure this check rejects.
    """
    return compare(
        _expected_name(platform),
        answer,
        1.0 / decode_expected_s(model, platform),
        rel_tol=0.02,
        **_TEXT.hints("decode_expected"),
        strict=strict,
    )


def _expected_name(platform: str) -> str:
    """The name :func:`check_decode_expected` reports for ``platform`` (its gated claim uses it)."""
    return f"expected decode on {platform} (tokens/s, batch 1, sustained rate)"


#: Exercise 3's (model, platform): the expected rate the lesson asks for.
EXERCISE3 = ("llama2-7b", "h200")


def expected_claim(model: str, platforms: Sequence[str], *, context: int = 1024) -> Claim:
    """Ceiling and expected decode tokens/s against the mapper's batch-1 step, per platform.

    Returns:
        Markdown: per platform, the ceiling (tokens/s at the datasheet peak, the floor's
        inverse), the expected tokens/s (sustained rate) and the mapper's tokens/s at batch 1
        with ``context`` cached tokens (the KV cache, launches and kernels' bandwidth losses
        are the gap).
    """
    parts, expected = [], []
    for p in platforms:
        exp = 1.0 / decode_expected_s(model, p)
        expected.append((p, exp))
        m = mapping(model, p, phase="decode", batch=1, seq=context)
        parts.append(
            _TEXT.render(
                "expected_part",
                platform=p,
                ceiling=1.0 / decode_floor_s(model, p),
                expected=exp,
                tokens=m.tokens_per_s,
                share=m.tokens_per_s / exp,
            )
        )
    (lo, e_lo), (hi, e_hi) = min(expected, key=lambda x: x[1]), max(expected, key=lambda x: x[1])
    claim = _TEXT.claim(
        "expected", model=model, context=context, parts=parts, hi=hi, ratio=e_hi / e_lo, lo=lo
    )
    # NOTE: Exercise 3's platform's expected rate is its answer: hidden until that check passes.
    if model == EXERCISE3[0] and EXERCISE3[1] in platforms:
        return gated(claim, after=_expected_name(EXERCISE3[1]), label="Exercise 3")
    return claim
