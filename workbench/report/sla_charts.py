"""Charts of the serving and platform views: latency against throughput, platform trade-offs.

Inputs are the library's own records (:class:`workbench.serving.LoadPoint`,
:class:`workbench.platform.compare.PlatformRow`); seconds are shown as milliseconds here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import altair as alt
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.serving import UNSTABLE_NOTE

__all__ = ["latency_throughput_chart", "perf_per_watt_dashboard", "platform_trade_chart"]

_PCTS = (("p50", "p50_e2e_s"), ("p95", "p95_e2e_s"), ("p99", "p99_e2e_s"))


def latency_throughput_chart(
    points: Sequence[Any], sla_s: float, *, metric: str = "e2e", title: str | None = None
) -> alt.LayerChart:
    """Achieved throughput against p50/p95/p99 latency, with the SLA line and the knee.

    A load the replica cannot keep up with (``LoadPoint.stable`` False) has no steady latency:
    it is left off the percentile lines and drawn as a hollow cross labelled ``unstable``, its
    tooltip saying that the figure is one replay's and grows with the replay's length.

    Args:
        points: Load points of one sweep (``LoadPoint``).
        sla_s: The SLA, seconds (a horizontal rule).
        metric: ``"e2e"``, ``"ttft"`` or ``"tpot"``.
        title: Chart title.

    Returns:
        A layered Altair chart; the knee (the last stable point whose p99 meets the SLA) is a
        diamond labelled ``knee``.
    """
    if not points:
        raise WorkbenchError("latency_throughput_chart: no load points")
    df = _latency_frame(points, metric)
    x = alt.X("throughput:Q", title="achieved throughput (requests/s)")
    y = alt.Y("latency_ms:Q", title=f"{metric} latency (ms)", scale=alt.Scale(type="log"))
    color = alt.Color("percentile:N", sort=["p50", "p95", "p99"])
    lines = (
        alt.Chart(df[df["stable"]])
        .mark_line(point=True)
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=["offered:Q", "throughput:Q", "percentile:N", "latency_ms:Q"],
        )
    )
    sla = (
        alt.Chart(pd.DataFrame({"sla_ms": [sla_s * 1e3]}))
        .mark_rule(strokeDash=[6, 4])
        .encode(y="sla_ms:Q")
    )
    layers: list[Any] = [lines, sla]
    unstable = df[~df["stable"]]
    if len(unstable):
        layers.append(
            alt.Chart(unstable)
            .mark_point(shape="cross", size=90, filled=False)
            .encode(x=x, y=y, color=color, tooltip=["offered:Q", "throughput:Q",
                                                    "percentile:N", "latency_ms:Q", "note:N"])
        )  # fmt: skip
        tag = unstable[unstable["percentile"] == "p99"]
        layers.append(
            alt.Chart(tag).mark_text(dy=14, fontStyle="italic").encode(x=x, y=y, text="label:N")
        )
    ok = [p for p in points if p.stable and getattr(p, f"p99_{metric}_s") <= sla_s]
    if ok:
        knee = max(ok, key=lambda p: p.offered_rate_per_s)
        # NOTE: a sweep whose every load meets the SLA has no knee: its last point is marked as
        # the highest load swept, not as a knee.
        label = "knee" if len(ok) < len(points) else "highest swept (no knee)"
        kdf = pd.DataFrame([{"throughput": knee.achieved_rate_per_s,
                             "latency_ms": getattr(knee, f"p99_{metric}_s") * 1e3,
                             "label": label}])  # fmt: skip
        base = alt.Chart(kdf).encode(x="throughput:Q", y="latency_ms:Q")
        layers += [base.mark_point(shape="diamond", size=160, filled=True, color="black"),
                   base.mark_text(dy=-14, fontWeight="bold").encode(text="label:N")]  # fmt: skip
    chart = alt.layer(
        *layers,
        title=title or f"latency against throughput (SLA {sla_s * 1e3:g} ms, p99 {metric})",
        width=460,
        height=280,
    )
    return cast("alt.LayerChart", chart)


def _latency_frame(points: Sequence[Any], metric: str) -> pd.DataFrame:
    """One row per point and percentile: throughput, latency (ms), stable, label and note."""
    rows = []
    for p in points:
        for name, _ in _PCTS:
            value = getattr(p, f"{name}_{metric}_s")
            if value is None:
                raise WorkbenchError(f"latency_throughput_chart: {metric} not measured")
            rows.append({"throughput": p.achieved_rate_per_s, "offered": p.offered_rate_per_s,
                         "percentile": name, "latency_ms": value * 1e3, "stable": p.stable,
                         "label": "" if p.stable else "unstable",
                         "note": "" if p.stable else UNSTABLE_NOTE})  # fmt: skip
    return pd.DataFrame(rows)


def _rows_frame(rows: Sequence[Any]) -> pd.DataFrame:
    if not rows:
        raise WorkbenchError("platform chart: no rows")
    data = []
    for r in rows:
        d = r.to_dict()
        d["label"] = f"{r.hardware} ({r.plan})" if r.chips > 1 else r.hardware
        d["p99_ms"] = (r.p99_at_sla_s or 0.0) * 1e3
        d["throughput_per_chip"] = r.throughput_at_sla / r.chips
        data.append(d)
    return pd.DataFrame(data)


def platform_trade_chart(rows: Sequence[Any]) -> alt.Chart:
    """Platform trade curve: throughput at the SLA against p99 latency there, per platform.

    Point size is energy per item, colour is engineering risk; rows that do not fit are left out.

    Args:
        rows: ``PlatformRow`` records (one model).

    Returns:
        An Altair chart.
    """
    df = _rows_frame([r for r in rows if r.fits and r.throughput_at_sla > 0])
    return alt.Chart(df).mark_circle(opacity=0.85).encode(
        x=alt.X("throughput_at_sla:Q", title="throughput at SLA (requests or images / s)"),
        y=alt.Y("p99_ms:Q", title="p99 latency at that load (ms)"),
        size=alt.Size("energy_per_item_j:Q", title="J per item"),
        color=alt.Color("risk:Q", scale=alt.Scale(scheme="orangered", domain=[0, 1])),
        tooltip=[
            "label:N",
            "throughput_at_sla:Q",
            "p99_ms:Q",
            "energy_per_item_j:Q",
            "risk:Q",
            "mfu:Q",
        ],
    ).properties(title="platform trade-off", width=420, height=280) + alt.Chart(df).mark_text(
        dy=-12
    ).encode(x="throughput_at_sla:Q", y="p99_ms:Q", text="label:N")


def perf_per_watt_dashboard(rows: Sequence[Any]) -> alt.HConcatChart:
    """Three bars per platform: perf per watt, throughput per chip at the SLA, risk.

    Args:
        rows: ``PlatformRow`` records.

    Returns:
        A horizontally concatenated Altair chart.
    """
    df = _rows_frame(rows)
    y = alt.Y("label:N", title=None, sort="-x")

    def bar(field: str, title: str) -> alt.Chart:
        return (
            alt.Chart(df)
            .mark_bar()
            .encode(
                x=alt.X(f"{field}:Q", title=title),
                y=y,
                color=alt.Color("fits:N"),
                tooltip=["label:N", f"{field}:Q"],
            )
            .properties(width=200, height=22 * len(df))
        )

    return alt.hconcat(
        bar("perf_per_watt", "items per joule"),
        bar("throughput_per_chip", "throughput at SLA per chip"),
        bar("risk", "engineering risk (0..1)"),
    ).properties(title="perf per watt dashboard")
