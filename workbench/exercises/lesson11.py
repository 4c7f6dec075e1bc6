"""Lesson 11, choosing a platform: the fit matrix, perf per watt, risk, and the synthetic-GEMM trap.

The trap: rank platforms by one large square GEMM (the benchmark slide), then rank them by
serving a production-like trace at a latency SLA. The mapper and the serving simulator compute
both; nothing here is a hand-entered figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware
from workbench.exercises.lesson10 import panel_sweep
from workbench.ir import Graph, Linear
from workbench.mapper import map_model
from workbench.platform.compare import RATE_FRACTIONS, PlatformRow, compare_platforms, shortlist
from workbench.platform.fit import fit_check
from workbench.serving import find_knee

__all__ = [
    "check_fits",
    "check_gemm_prediction",
    "check_winner",
    "fit_table",
    "gemm_table",
    "matrix",
    "matrix_table",
    "risk_inputs_table",
    "trace_gap_claim",
    "trace_gap_table",
    "trap_claim",
    "trap_table",
]


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
    """The matrix as a frame (rounded), plus each row's shortlist rank (0: not shortlisted)."""
    best = {(r.model, r.hardware): i + 1 for i, r in enumerate(shortlist(rows, k=len(rows)))}
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
                "rank": best.get((r.model, r.hardware), 0),
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
        verb = "barely changes"
    else:
        verb = "narrows" if abs(syn - 1) < abs(prod - 1) else "widens"
    return Claim(
        f"At the knee, `{b}` serves x{prod:.2f} the requests/s of `{a}` on the production mix "
        f"and x{syn:.2f} on the synthetic trace: the synthetic trace **{verb}** the gap."
    )


def trap_claim(table: pd.DataFrame) -> Claim:
    """The synthetic-GEMM trap, read from :func:`trap_table`.

    Returns:
        Markdown: the GEMM winner and its serving rank, and the serving winner and its GEMM
        rank.
    """
    g = table["gemm_rank"].idxmin()
    s = table["serving_rank"].idxmin()
    if g == s:
        return Claim(f"`{g}` wins both the GEMM and serving at the SLA: no trap here.")
    return Claim(
        f"`{g}` wins the {table.loc[g, 'tflops']:g} TFLOP/s GEMM but ranks "
        f"{table.loc[g, 'serving_rank']} serving the trace at the SLA; `{s}` serves best "
        f"({table.loc[s, 'req_per_s_at_sla']:g} requests/s) and ranks {table.loc[s, 'gemm_rank']} "
        "on the GEMM. Serving is decode-bound: every token reads the weights and the KV cache, "
        "and runtime variance and software maturity move the tail."
    )


def fit_table(
    model: str, platform: str, chips: Sequence[int], *, batch: int = 16, context: int = 4096
) -> pd.DataFrame:
    """The memory fit of ``model`` on 1..N chips of tensor parallel (GiB = 2**30 bytes per chip)."""
    rows = []
    for n in chips:
        f = fit_check(model, hardware(platform), batch=batch, context=context, tensor_parallel=n)
        rows.append(
            {
                "chips": n,
                "weights_gib": round(f.weights_bytes / 2**30, 1),
                "kv_gib": round(f.kv_bytes / 2**30, 1),
                "activations_gib": round(f.activation_bytes / 2**30, 2),
                "capacity_gib": round(f.capacity_bytes / 2**30, 1),
                "fits": f.fits,
            }
        )
    return pd.DataFrame(rows).set_index("chips")


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
        hint="a large square GEMM is compute-bound: compare the profiles' dense bf16 peaks, "
        "not their memory",
        hint2="one of the platform names given; a serving trace is not what this asks about",
        strict=strict,
    )


def check_fits(
    answer: int,
    *,
    model: str,
    platform: str,
    batch: int = 16,
    context: int = 4096,
    strict: bool | None = None,
) -> CheckResult:
    """Check the fewest tensor-parallel chips (1, 2, 4 or 8) on which ``model`` fits."""
    expected = next(
        (
            n
            for n in (1, 2, 4, 8)
            if fit_check(
                model, hardware(platform), batch=batch, context=context, tensor_parallel=n
            ).fits
        ),
        0,
    )
    return compare(
        "fewest_chips",
        answer,
        expected,
        hint="weights split N ways; compare the per-chip total with capacity",
        hint2="read the fits column of the fit table: the first row that says True",
        strict=strict,
    )


def check_winner(
    answer: str, *, rows: Sequence[PlatformRow], strict: bool | None = None
) -> CheckResult:
    """Check the first platform of the shortlist."""
    best = shortlist(rows)
    return compare(
        "shortlist_winner",
        answer,
        best[0].hardware if best else "",
        hint="the rank rule: throughput at SLA per chip x (1 - risk)",
        hint2="the platform in the first row of the ranked shortlist table",
        strict=strict,
    )
