"""Lesson 12, the bandwidth lens: pressure (MBU at HBM) along a real optimisation trajectory.

Every step of :data:`workbench.platform.trajectory.TRAJECTORY` is mapped on the same model and
hardware; pressure is achieved bandwidth at a memory level over that level's sustained rate
(:func:`workbench.report.charts.bandwidth_lens_points`), and the serving simulation's verdict at
one offered rate says where the p99 is unstable.
"""

from __future__ import annotations

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._check import FIGURE, CheckResult, compare
from workbench.exercises._claims import Claim, gated
from workbench.exercises._figures import Figure
from workbench.exercises._moves import ControlMove, phrase_move
from workbench.exercises._text import LessonText
from workbench.mapper import ModelMapping
from workbench.platform.trajectory import (
    TRAJECTORY,
    serving_verdicts,
    trajectory,
    trajectory_refusal,
)
from workbench.report.charts import bandwidth_lens, bandwidth_lens_points

__all__ = [
    "PANEL",
    "SATURATION",
    "SETTINGS",
    "check_headroom",
    "check_pressure_prediction",
    "check_speedup",
    "check_zone_step_ms",
    "headroom_claim",
    "lens_chart",
    "lens_figure",
    "pitfall_claim",
    "pressure_claim",
    "queue_claim",
    "serving_claim",
    "trajectory_claim",
    "trajectory_table",
    "variants",
    "widget_claim",
    "widget_moves",
    "zone_claim",
    "zone_step_s",
]

_TEXT = LessonText("lesson12")

#: Pressure (fraction of the level's sustained bandwidth) where the saturation zone starts. An
#: assumption of this lesson, not a published figure: past ~80 % of what a well-tuned kernel
#: sustains, requests queue at the level (the review pack's lens uses the same default).
SATURATION = 0.8

#: Defaults every cell and the widget share: decode, 8 sequences at a 1,024-token context; the
#: serving replay offers 6 requests/s against a 15 s p99 SLA.
SETTINGS: dict[str, float] = {"batch": 8, "seq": 1024, "rate_per_s": 6.0, "sla_s": 15.0}

#: The LensPanel's controls as the lesson builds it.
PANEL: dict[str, str] = {"model": "llama2-7b", "hardware": "h100-sxm", "level": "hbm"}


def variants(model: str, hardware_name: str) -> list[tuple[str, ModelMapping]]:
    """``(step name, mapping)`` pairs of the trajectory at the lesson's settings."""
    steps = trajectory(model, hardware_name, batch=int(SETTINGS["batch"]), seq=int(SETTINGS["seq"]))
    return [(s.step.name, s.mapping) for s in steps]


def _unstable(model: str, hardware_name: str) -> dict[str, tuple[float, str]]:
    verdicts = serving_verdicts(
        model, hardware_name, rate_per_s=SETTINGS["rate_per_s"], sla_s=SETTINGS["sla_s"]
    )
    return {name: (p99, status) for name, p99, status in verdicts}


def trajectory_table(model: str, hardware_name: str, level: str | None = None) -> pd.DataFrame:
    """One row per step: decode step time, pressure at ``level``, p99 and the serving verdict.

    Returns:
        Index ``step``; columns step_ms, pressure_pct (% of sustained bandwidth at ``level``,
        default off-chip), saturated (pressure >= :data:`SATURATION`), p99_s, serving
        (``ok``/``sla``/``saturated``), gb (bytes moved at ``level`` per step, 1e9 bytes).
    """
    rows = bandwidth_lens_points(
        variants(model, hardware_name),
        level,
        SATURATION,
        against="sustained",
    )
    serve = _unstable(model, hardware_name)
    return pd.DataFrame(
        [
            {
                "step": r["variant"],
                "step_ms": round(r["time_s"] * 1e3, 3),
                "pressure_pct": round(r["pressure"] * 100, 1),
                "saturated": bool(r["saturated"]),
                "p99_s": round(serve[r["variant"]][0], 2),
                "serving": serve[r["variant"]][1],
                "gb": round(r["bytes"] / 1e9, 2),
            }
            for r in rows
        ]
    ).set_index("step")


def lens_chart(
    model: str, hardware_name: str, level: str | None = None, *, serving: bool = True
) -> object:
    """The lens chart: pressure per step and per layer type, the zone, the unstable steps.

    Args:
        model: Decoder preset.
        hardware_name: Hardware profile name, name.
        level: Memory level (None: off-chip).
        serving: Mark the steps the serving replay finds unstable (False: skip the replay, the
            slow part for a model and hardware not seen before; no rings, and each point's
            reading follows its pressure alone, as :func:`bandwidth_lens_points` documents).
    """
    unstable = (
        [n for n, (_, status) in _unstable(model, hardware_name).items() if status != "ok"]
        if serving
        else None
    )
    return bandwidth_lens(
        variants(model, hardware_name),
        level,
        SATURATION,
        against="sustained",
        unstable=unstable,
        by_layer_type=True,
    )


def lens_figure(model: str, hardware_name: str, level: str | None = None) -> Figure:
    """:func:`lens_chart` as a static figure."""
    return Figure(lens_chart(model, hardware_name, level))


def trajectory_claim(table: pd.DataFrame, level: str) -> Claim:
    """What the trajectory does to time and pressure, read from :func:`trajectory_table`."""
    first, last = table.iloc[0], table.iloc[-1]
    sat = [s for s in table.index if table.loc[s, "saturated"]]
    flat = [
        table.index[i]
        for i in range(1, len(table))
        if table.iloc[i]["step_ms"] == table.iloc[i - 1]["step_ms"]
    ]
    peak = table["pressure_pct"].idxmax()
    return _TEXT.claim(
        "trajectory",
        steps=len(table),
        first_ms=first["step_ms"],
        last_ms=last["step_ms"],
        speedup=first["step_ms"] / last["step_ms"],
        level=level,
        first_pct=first["pressure_pct"],
        last_pct=last["pressure_pct"],
        peak=peak,
        peak_pct=table.loc[peak, "pressure_pct"],
        saturated=len(sat),
        threshold=SATURATION,
        flat=flat,
    )


def serving_claim(table: pd.DataFrame) -> Claim:
    """Which steps the serving replay finds unstable at the lesson's offered rate."""
    bad = [s for s in table.index if table.loc[s, "serving"] != "ok"]
    rate, sla = SETTINGS["rate_per_s"], SETTINGS["sla_s"]
    if not bad:
        return _TEXT.claim("serving_stable", rate=rate, sla=sla)
    good = [s for s in table.index if s not in bad]
    return _TEXT.claim(
        "serving",
        rate=rate,
        sla=sla,
        bad=bad,
        good=good[0] if good else None,
        first_p99=table.loc[bad[0], "p99_s"],
        last_p99=table.iloc[-1]["p99_s"],
    )


def check_speedup(
    answer: object,
    *,
    model: str,
    hardware_name: str,
    before: str = "searched tiles",
    after: str = "int8 weights",
) -> CheckResult:
    """Step time at step ``before`` over step time at step ``after`` (within 1 %)."""
    times = {name: m.time_s for name, m in variants(model, hardware_name)}
    expected = times[before] / times[after]
    return compare(
        "step speedup",
        answer,
        expected,
        rel_tol=0.01,
        hint=_TEXT.render("speedup_hint", before=repr(before), after=repr(after)),
        hint2=_TEXT.render("speedup_hint2"),
    )


def _zone_name(step: str, level: str) -> str:
    """The name :func:`check_zone_step_ms` reports (:func:`zone_claim` is gated behind it)."""
    return f"step time at which {step} enters the {level} saturation zone (ms)"


def zone_step_s(model: str, hardware_name: str, level: str, step: str) -> float:
    """The longest step time at which ``step``'s bytes put ``level`` in the saturation zone, s.

    Pressure is bytes / (step time x sustained rate); keeping the bytes, it reaches
    :data:`SATURATION` when the step takes ``bytes / (SATURATION x sustained rate)``.

    Raises:
        WorkbenchError: When the step moves no bytes at ``level`` (no time saturates it).
    """
    mapping = dict(variants(model, hardware_name))[step]
    moved = mapping.total.bytes_at(level)
    if moved <= 0:
        raise WorkbenchError(f"zone_step_s: {step} moves no bytes at {level}: no zone to enter")
    return moved / (SATURATION * mapping.hardware.level(level).sustained_bytes_per_s)


def check_zone_step_ms(
    answer: object, *, model: str, hardware_name: str, level: str, step: str = "fusion"
) -> CheckResult:
    """The step time (ms) at which ``step``'s bytes would enter the saturation zone (1 %).

    Computed from the pressure model (:func:`zone_step_s`), for a step time no row shows.
    """
    zone_ms = zone_step_s(model, hardware_name, level, step) * 1e3
    hints = _TEXT.hints("zone_step")
    return compare(_zone_name(step, level), answer, zone_ms, rel_tol=0.01, **hints)


def zone_claim(table: pd.DataFrame, model: str, hardware_name: str, level: str, step: str) -> Claim:
    """Exercise 2's step time against the trajectory's first saturated step (gated behind it).

    Args:
        table: :func:`trajectory_table` at ``level``.
        model: Decoder preset.
        hardware_name: Hardware profile name.
        level: Memory level.
        step: Exercise 2's step.

    Returns:
        Markdown: the step time at which ``step``'s bytes enter the zone, its speedup over the
        step's own time, and the first step of the trajectory inside the zone.
    """
    zone_ms = zone_step_s(model, hardware_name, level, step) * 1e3
    first = next((s for s in table.index if table.loc[s, "saturated"]), None)
    rows = {"own": table.loc[step], "row": table.loc[first] if first is not None else None}
    claim = _TEXT.claim(
        "zone", step=step, level=level, zone_ms=zone_ms, threshold=SATURATION, first=first, **rows
    )
    return gated(claim, after=_zone_name(step, level), label="Exercise 2")


def check_headroom(
    answer: object,
    *,
    model: str,
    hardware_name: str,
    level: str,
    step: str = "searched tiles",
    strict: bool | None = None,
) -> CheckResult:
    """The largest speedup a change that keeps ``step``'s bytes at ``level`` could still give.

    From first principles: the step cannot take less than bytes / sustained bandwidth, and it
    takes ``bytes / (pressure x sustained)``, so the bound is ``1 / pressure`` (within 1 %).
    """
    rows = bandwidth_lens_points(
        variants(model, hardware_name), level, SATURATION, against="sustained"
    )
    pressure = next(r["pressure"] for r in rows if r["variant"] == step)
    if pressure <= 0:
        raise WorkbenchError(f"check_headroom: {step} moves no bytes at {level}: no bound")
    return compare(
        f"byte-preserving headroom at {step}",
        answer,
        1 / pressure,
        rel_tol=0.01,
        **_TEXT.hints("headroom"),
        strict=strict,
    )


assert len(TRAJECTORY) >= 5  # the lesson promises a trajectory of at least five steps


#: Two steps "keep the bytes" when their bytes at the level differ by less than this fraction.
SAME_BYTES = 0.02


def _kept_bytes(table: pd.DataFrame) -> list[tuple[str, float, float]]:
    """Each step that kept the bytes and got faster.

    Returns:
        ``(step, speedup over the step before, bound 1/pressure of the step before)`` tuples.
    """
    out = []
    for i in range(1, len(table)):
        prev, row = table.iloc[i - 1], table.iloc[i]
        same = abs(row["gb"] / prev["gb"] - 1) < SAME_BYTES if prev["gb"] else False
        if same and 0 < row["step_ms"] < prev["step_ms"]:
            out.append(
                (table.index[i], prev["step_ms"] / row["step_ms"], 100 / prev["pressure_pct"])
            )
    return out


def headroom_claim(table: pd.DataFrame, level: str) -> Claim:
    """What the pressure bounds: a change that keeps the bytes wins at most ``1 / pressure``.

    The step time cannot fall below bytes / sustained bandwidth, so at pressure ``p`` a change
    that moves the same bytes shortens the step by at most ``x 1/p``. Read from
    :func:`trajectory_table`: the byte-preserving steps of the trajectory, their wins against
    that bound, and the headroom the last step leaves.
    """
    kept = _kept_bytes(table)
    last = table.iloc[-1]
    if last["pressure_pct"] <= 0:
        return _TEXT.claim("headroom_none", level=level)
    return _TEXT.claim(
        "headroom",
        level=level,
        wins=[_TEXT.render("headroom_win", step=s, speedup=w) for s, w, _ in kept],
        bounds=[_TEXT.render("headroom_bound", bound=b) for *_, b in kept],
        within=all(w <= b for _, w, b in kept),
        last=table.index[-1],
        last_pct=last["pressure_pct"],
        left=100 / last["pressure_pct"],
    )


def queue_claim(table: pd.DataFrame) -> Claim:
    """Whether the serving verdict follows the step time (the queue) or the pressure."""
    bad = table[table["serving"] != "ok"]
    good = table[table["serving"] == "ok"]
    rate = SETTINGS["rate_per_s"]
    if bad.empty or good.empty:
        return _TEXT.claim("queue_none", rate=rate, all_bad=good.empty)
    most = table["pressure_pct"].idxmax()
    return _TEXT.claim(
        "queue",
        by_time=bad["step_ms"].min() > good["step_ms"].max(),
        bad_ms=bad["step_ms"].min(),
        good_ms=good["step_ms"].max(),
        most=most,
        most_pct=table.loc[most, "pressure_pct"],
        most_unstable=most in bad.index,
    )


def check_pressure_prediction(
    answer: object,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    level: str = "hbm",
    before: str = "searched tiles",
    after: str = "int8 weights",
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: is ``level``'s pressure higher or lower at ``after`` than at ``before``?"""
    rows = bandwidth_lens_points(
        variants(model, hardware_name), level, SATURATION, against="sustained"
    )
    p = {r["variant"]: r["pressure"] for r in rows}
    return FIGURE.check(
        f"{level} pressure, {before} -> {after}",
        answer,
        p[before],
        p[after],
        hint=_TEXT.render("pressure_prediction_hint"),
        strict=strict,
    )


def _changes(table: pd.DataFrame) -> list[tuple[str, str, float, float, float]]:
    """Each step against the one before: ``(step, bytes kept/removed/added, d bytes, p0, p1)``."""
    out = []
    for i in range(1, len(table)):
        prev, row = table.iloc[i - 1], table.iloc[i]
        if not prev["gb"] or row["step_ms"] == prev["step_ms"]:
            continue  # no bytes, or a step that changed nothing
        d = row["gb"] / prev["gb"] - 1
        kind = "kept" if abs(d) < SAME_BYTES else ("removed" if d < 0 else "added")
        out.append((table.index[i], kind, d, prev["pressure_pct"], row["pressure_pct"]))
    return out


def pressure_claim(table: pd.DataFrame, level: str) -> Claim:
    """What each kind of step did to the pressure, read from :func:`trajectory_table`.

    A step "keeps" the bytes when they change by less than :data:`SAME_BYTES`; it "removes"
    (or "adds") them otherwise. Steps that changed nothing are left out.

    Returns:
        Markdown: per kind, the steps and the direction their pressure moved.
    """
    parts = []
    for kind in ("kept", "removed", "added"):
        steps = [c for c in _changes(table) if c[1] == kind]
        if not steps:
            continue
        parts.append(
            _TEXT.render(
                "pressure_part",
                kind=kind,
                level=level,
                steps=[
                    _TEXT.render("pressure_step", step=n, change=d, before=p0, after=p1)
                    for n, _, d, p0, p1 in steps
                ],
                up=sum(1 for c in steps if c[4] > c[3]),
                down=sum(1 for c in steps if c[4] < c[3]),
                count=len(steps),
            )
        )
    if not parts:
        return _TEXT.claim("pressure_none", level=level)
    return _TEXT.claim("pressure", parts=parts)


def pitfall_claim(table: pd.DataFrame, model: str, hardware_name: str, level: str) -> Claim:
    """The lesson's pitfalls that state a direction, computed from the trajectory.

    Returns:
        Markdown bullets: pressure against the datasheet peak against the sustained rate (and
        the fastest kernel's share of the peak); the steps that changed nothing; a step that
        lowered the pressure and was still faster.
    """
    v = variants(model, hardware_name)
    peak = {r["variant"]: r["pressure"] for r in bandwidth_lens_points(v, level, against="peak")}
    top = table["pressure_pct"].idxmax()
    lvl = v[0][1].hardware.level(level)
    fastest = max(
        (k.cost.bytes_at(level) / k.cost.total_s for _, m in v for k in m.kernels
         if k.cost.total_s > 0),
        default=0.0,
    )  # fmt: skip
    lines = [
        _TEXT.render(
            "pitfall_peak",
            top=top,
            level=level,
            peak=peak[top],
            sustained_pct=table.loc[top, "pressure_pct"],
            share=fastest / lvl.bandwidth_bytes_per_s,
        )
    ]
    flat = [
        table.index[i]
        for i in range(1, len(table))
        if table.iloc[i]["step_ms"] == table.iloc[i - 1]["step_ms"]
    ]
    if flat:
        lines.append(_TEXT.render("pitfall_flat", flat=flat))
    both = [c for c in _changes(table) if c[4] < c[3]]
    if both:
        n, _, d, p0, p1 = both[0]
        i = list(table.index).index(n)
        t0, t1 = table.iloc[i - 1]["step_ms"], table.iloc[i]["step_ms"]
        lines.append(
            _TEXT.render(
                "pitfall_time",
                step=n,
                before=p0,
                after=p1,
                ms_before=t0,
                ms_after=t1,
                change=d,
            )
        )
    return Claim("\n".join(lines))


def widget_moves() -> tuple[ControlMove, ...]:
    """The instructions of lesson 12's panel, as data: another level, platform, and refusal.

    The last move picks a platform the model does not fit: the refusal is what it teaches.
    """

    def move(control: str, end: str, refused: bool = False) -> ControlMove:
        setting = tuple((k, v) for k, v in PANEL.items() if k != control)
        return ControlMove(widget="LensPanel", control=control, start=PANEL[control], end=end,
                           setting=setting, refused=refused)  # fmt: skip

    return (move("level", "l2"), move("hardware", "h200"), move("hardware", "tpu-v5e", True))


def widget_claim() -> Claim:
    """What each instructed move shows, computed with the lens's own trajectory and check.

    Returns:
        Markdown bullets: per move, the pressure range and saturated steps at the new setting
        (from :func:`trajectory_table`), or the refusal the panel shows instead.
    """
    lines = []
    for m in widget_moves():
        st = m.state(after=True)
        model, hardware_name, level = str(st["model"]), str(st["hardware"]), str(st["level"])
        why = trajectory_refusal(model, hardware_name, batch=int(SETTINGS["batch"]),
                                 seq=int(SETTINGS["seq"]))  # fmt: skip
        if why:
            lines.append(_TEXT.render("widget_refused", move=phrase_move(m), why=why))
            continue
        t = trajectory_table(model, hardware_name, level)
        lines.append(
            _TEXT.render(
                "widget",
                move=phrase_move(m),
                level=level,
                low=t["pressure_pct"].min(),
                high=t["pressure_pct"].max(),
                saturated=int(t["saturated"].sum()),
                steps=len(t),
                first_ms=t.iloc[0]["step_ms"],
                last_ms=t.iloc[-1]["step_ms"],
            )
        )
    return Claim("\n".join(lines))
