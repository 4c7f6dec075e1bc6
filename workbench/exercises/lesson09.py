"""Lesson 09, compile-time scheduling against runtime autotuning: tables and self-checks.

The cost model's best plan (tile) for one kernel at many (batch, sequence) points and model
variants, and a measured autotune of a small kernel on the execution engine (NumPy here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from workbench.cost.model import Cost
from workbench.cost.search import rank
from workbench.errors import WorkbenchError
from workbench.execution.backend import resolve_backend
from workbench.execution.measure import measure
from workbench.execution.run import make_inputs
from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware, mapping
from workbench.exercises._text import LessonText
from workbench.mapper import KernelMapping
from workbench.options import MapOptions, TileOverride
from workbench.report.charts.tiles import forced_tile
from workbench.scheduling.tiling import Tiling
from workbench.tuning import TuneResult, sweep_best_plan
from workbench.tuning.autotune import tune_result

__all__ = [
    "LAB",
    "LAB_MOVES",
    "LabSetting",
    "LabStep",
    "autotune_kernel",
    "candidates_claim",
    "candidates_table",
    "check_distinct_plans",
    "check_model_pick_rank",
    "check_plan_prediction",
    "check_waves",
    "lab_claim",
    "lab_prediction",
    "lab_steps",
    "measured_pitfall_claim",
    "numpy_claim",
    "plan_claim",
    "plan_table",
    "shape_takeaway_claim",
    "static_plan_claim",
    "variant_claim",
    "variant_table",
]


_TEXT = LessonText("lesson09")


@dataclass(frozen=True, slots=True, kw_only=True)
class LabSetting:
    """The tiling lab's constructor arguments (prefill, batch 1, bf16: the lab's defaults).

    Attributes:
        model: Preset name.
        kernel: The GEMM kernel under study.
        hardware: Hardware profile name.
        seq: Tokens (the GEMM's M).
    """

    model: str
    kernel: str
    hardware: str
    seq: int


#: The tiling lab as the lesson builds it (``TilingLab(model=..., kernel=..., ...)``).
LAB = LabSetting(model="gpt2", kernel="layers.0.mlp.up_proj", hardware="h100-sxm", seq=64)
#: The slider moves the lesson instructs, in order, each from where the previous one left.
LAB_MOVES: tuple[tuple[str, int], ...] = (("tile_n", 128), ("tile_n", 32))
#: The lab's sliders: a setting is ``(tile_m, tile_n, tile_k, stages, split_k)``.
_LAB_CONTROLS = ("tile_m", "tile_n", "tile_k", "stages", "split_k")


def plan_table(
    model: str,
    hardware_name: str,
    *,
    batches: Sequence[int],
    seqs: Sequence[int],
    kernel: str = "layers.0.mlp.up_proj",
) -> pd.DataFrame:
    """The cost model's best tile of ``kernel`` at every (batch, seq) (compile-time plan)."""
    rows = sweep_best_plan(
        model, batches, seqs, hardware(hardware_name), kernel_name=kernel, progress=False
    )
    return pd.DataFrame(
        [
            {
                "batch": r.batch,
                "seq": r.seq,
                "best_tile": r.best_tile,
                "predicted_us": round(r.predicted_s * 1e6, 2),
            }
            for r in rows
        ]
    ).set_index(["batch", "seq"])


def variant_table(
    models: Sequence[str],
    hardware_name: str,
    *,
    seq: int = 512,
    kernel: str = "layers.0.mlp.up_proj",
) -> pd.DataFrame:
    """The best tile of the same layer in different model variants at one shape."""
    rows = []
    for m in models:
        km = mapping(m, hardware_name, seq=seq).kernel(kernel)
        g = km.kernel.gemm
        rows.append(
            {
                "model": m,
                "gemm": f"{g.m}x{g.n}x{g.k}" if g else "",
                "best_tile": km.tiling.shape,
                "waves": km.tiling.waves,
                "wave_efficiency": round(km.tiling.wave_efficiency, 3),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def autotune_kernel(
    model: str,
    hardware_name: str,
    *,
    seq: int = 64,
    kernel: str = "layers.0.mlp.up_proj",
    k: int = 3,
    repeats: int = 3,
) -> TuneResult:
    """Measure the cost model's best ``k`` tile shapes of one kernel on the execution engine.

    Candidates differ in ``(tile_m, tile_n, tile_k)``: the mapspace's runners-up that differ
    only in raster order or stages run the same NumPy calls, so timing them would rank noise.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name, the cost model ranks on.
        seq: Tokens (the GEMM's M).
        kernel: Kernel name.
        k: Tile shapes to time.
        repeats: Timed runs per candidate (median kept), after one warm-up.

    Returns:
        The :class:`TuneResult` (candidates in predicted order).
    """
    km = mapping(model, hardware_name, seq=seq).kernel(kernel)
    seen: set[tuple[int, int, int]] = set()
    ranked = []
    for tiling, cost in rank(km.kernel, hardware(hardware_name), MapOptions(), k=64):
        shape = (tiling.tile_m, tiling.tile_n, tiling.tile_k)
        if shape not in seen and tiling.fits:
            seen.add(shape)
            ranked.append((tiling, cost))
    ranked = ranked[:k]
    bk = resolve_backend(None)
    inputs = make_inputs(km.kernel, 0, bk)
    times = [measure(km.kernel, t, backend=bk, inputs=inputs, repeats=repeats) for t, _ in ranked]
    return tune_result(km.kernel.name, bk.name, ranked, times)


def candidates_table(result: TuneResult) -> pd.DataFrame:
    """The timed candidates: tile, split-K, predicted and measured time and rank."""
    return pd.DataFrame(
        [
            {
                "tile": c.tiling.shape,
                "split_k": c.tiling.split_k,
                "predicted_us": round(c.predicted_s * 1e6, 2),
                "measured_ms": round(c.measured.median_s * 1e3, 3),
                "predicted_rank": c.predicted_rank,
                "measured_rank": c.measured_rank,
            }
            for c in result.candidates
        ]
    )


def plan_claim(table: pd.DataFrame) -> Claim:
    """What the best tile does as M (batch x seq) grows, read from :func:`plan_table`.

    Args:
        table: A :func:`plan_table` frame.

    Returns:
        A Markdown sentence: the tile at the smallest and the largest M, and how many distinct
        tiles the table holds.
    """
    rows = sorted(((b * s, str(t)) for (b, s), t in table["best_tile"].items()), key=lambda r: r[0])
    (m_lo, t_lo), (m_hi, t_hi) = rows[0], rows[-1]
    lo = [int(v) for v in t_lo.split("x")]
    hi = [int(v) for v in t_hi.split("x")]
    return _TEXT.claim(
        "plan",
        m_lo=m_lo,
        tile_lo=t_lo,
        rows_lo=lo[0],
        rows_hi=hi[0],
        cols_lo=lo[1],
        cols_hi=hi[1],
        m_hi=m_hi,
        tile_hi=t_hi,
        distinct=table["best_tile"].nunique(),
    )


def candidates_claim(result: TuneResult, hardware_name: str) -> Claim:
    """How the timed candidates differ and whether the model's pick won, from ``result``.

    Args:
        result: An :func:`autotune_kernel` result.
        hardware_name: The profile the cost model predicted for.

    Returns:
        A Markdown sentence: the shapes, the spread of predicted times (µs on ``hardware_name``) and
        whether the predicted first was the measured first.
    """
    cs = result.candidates
    p = [c.predicted_s * 1e6 for c in cs]
    first = next(c for c in cs if c.predicted_rank == 1)
    return _TEXT.claim(
        "candidates",
        shapes=[c.tiling.shape for c in cs],
        alike=max(p) <= 1.01 * min(p),
        first_us=p[0],
        hardware=hardware_name,
        min_us=min(p),
        max_us=max(p),
        backend=result.backend,
        won=first.measured_rank == 1,
    )


def check_distinct_plans(
    answer: int, *, table: pd.DataFrame, strict: bool | None = None
) -> CheckResult:
    """Check how many different best tiles a plan table holds."""
    return compare(
        "distinct_plans",
        answer,
        int(table["best_tile"].nunique()),
        **_TEXT.hints("distinct_plans"),
        strict=strict,
    )


def check_model_pick_rank(
    answer: float, *, result: TuneResult, strict: bool | None = None
) -> CheckResult:
    """Check the measured rank of the cost model's first choice (1 = it was fastest)."""
    expected = result.candidates[0].measured_rank if result.candidates else 1.0
    return compare(
        "model_pick_rank",
        answer,
        expected,
        **_TEXT.hints("model_pick"),
        strict=strict,
    )


def check_plan_prediction(
    prediction: object,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    first: tuple[int, int] = (1, 128),
    second: tuple[int, int] = (8, 16),
    kernel: str = "layers.0.mlp.up_proj",
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: is the cost model's best tile of ``kernel`` the same at two shapes?

    The answer is ``same`` or ``different`` for the two (batch, sequence) points.

    Args:
        prediction: ``"same"`` or ``"different"`` (or a synonym).
        model: Preset name.
        hardware_name: Hardware profile name.
        first: The first (batch, sequence length in tokens) point.
        second: The second point.
        kernel: The kernel followed.
        strict: Raise on a wrong answer.
    """
    tiles = [
        sweep_best_plan(
            model, (b,), (s,), hardware(hardware_name), kernel_name=kernel, progress=False
        )[0]
        for b, s in (first, second)
    ]
    return compare(
        f"best tile at batch x seq {first[0]}x{first[1]} and {second[0]}x{second[1]}",
        prediction,
        "same" if tiles[0].best_tile == tiles[1].best_tile else "different",
        synonyms={
            "same": ("equal", "identical", "unchanged", "yes"),
            "different": ("differs", "changes", "changed", "no"),
        },
        **_TEXT.hints("plan_prediction"),
        strict=strict,
    )


# --- the tiling lab's instructions, predicted as the lab predicts ------------------------------


@dataclass(frozen=True, slots=True)
class LabStep:
    """One lab instruction: set slider ``control`` to ``value``, from ``before`` to ``after``.

    ``before`` and ``after`` are the sliders' values ``(tile_m, tile_n, tile_k, stages,
    split_k)``.
    """

    control: str
    value: int
    before: tuple[int, int, int, int, int]
    after: tuple[int, int, int, int, int]

    @property
    def instruction(self) -> str:
        """The instruction as the lesson says it (Markdown)."""
        return _TEXT.render("lab_instruction", control=self.control, value=self.value)


def _lab_kernel(lab: LabSetting) -> KernelMapping:
    # NOTE: the lab maps build_graph(model, phase="prefill", batch=1, seq=seq) with no options.
    return mapping(lab.model, lab.hardware, seq=lab.seq).kernel(lab.kernel)


def lab_prediction(
    setting: tuple[int, int, int, int, int], *, lab: LabSetting = LAB
) -> tuple[Tiling, Cost]:
    """The lab's prediction at slider values ``setting`` (its own forced-tile ranking)."""
    m, n, k, stages, split_k = setting
    km = _lab_kernel(lab)
    forced = forced_tile(km.kernel.name, m, n, k, split_k=split_k, stages=stages)
    return rank(km.kernel, hardware(lab.hardware), MapOptions(tiles=(forced,)), k=1)[0]


def lab_steps(
    moves: tuple[tuple[str, int], ...] = LAB_MOVES, *, lab: LabSetting = LAB
) -> tuple[LabStep, ...]:
    """The lab instructions as data, from the searched tiling the lab starts at.

    Raises:
        WorkbenchError: An unknown slider, or a move that changes nothing.
    """
    t = _lab_kernel(lab).tiling
    at: tuple[int, int, int, int, int] = (t.tile_m, t.tile_n, t.tile_k, t.stages, t.split_k)
    steps = []
    for control, value in moves:
        if control not in _LAB_CONTROLS:
            raise WorkbenchError(f"the tiling lab has no slider {control!r}")
        i = _LAB_CONTROLS.index(control)
        values = list(at)
        values[i] = value
        nxt = (values[0], values[1], values[2], values[3], values[4])
        if nxt == at:
            raise WorkbenchError(f"the instruction {control} -> {value} changes nothing")
        steps.append(LabStep(control, value, at, nxt))
        at = nxt
    return tuple(steps)


def _binding_bytes(t: Tiling, c: Cost) -> tuple[str, float]:
    level = c.bottleneck.split(":")[1] if c.bottleneck.startswith("bandwidth:") else ""
    return level, dict(t.traffic).get(level, 0.0)


def lab_claim(moves: tuple[tuple[str, int], ...] = LAB_MOVES, *, lab: LabSetting = LAB) -> Claim:
    """What each of :func:`lab_steps` does to the lab's tiles, SRAM use and predicted time.

    Returns:
        A Markdown list: per step, tiles on the cores, SRAM (KiB of capacity), predicted time
        (µs) before and after, and the reason read from the numbers (fewer tiles than cores, or
        more traffic at the binding level); then what **Measure** does.
    """
    lines = []
    cores = hardware(lab.hardware).matrix_engine.cores
    for step in lab_steps(moves, lab=lab):
        (ta, ca), (tb, cb) = (
            lab_prediction(step.before, lab=lab),
            lab_prediction(step.after, lab=lab),
        )
        slower = cb.total_s > ca.total_s
        level, bytes_a = _binding_bytes(ta, ca)
        _, bytes_b = _binding_bytes(tb, cb)
        busy_a, busy_b = min(ta.tiles, cores), min(tb.tiles, cores)
        if busy_b != busy_a and (busy_b < busy_a) == slower:
            why = "cores"
        elif level and bytes_b != bytes_a and (bytes_b > bytes_a) == slower:
            why = "traffic"
        else:
            why = "unknown"
        lines.append(
            _TEXT.render(
                "lab_step",
                instruction=f"{step.instruction[0].upper()}{step.instruction[1:]}",
                tiles_after=tb.tiles,
                cores=cores,
                tiles_before=ta.tiles,
                sram_after=tb.sram_bytes / 1024,
                sram_capacity=tb.sram_capacity_bytes / 1024,
                sram_before=ta.sram_bytes / 1024,
                us_after=cb.total_s * 1e6,
                us_before=ca.total_s * 1e6,
                slower=slower,
                why=why,
                level=level,
                traffic_ratio=bytes_b / bytes_a if why == "traffic" else None,
            )
        )
    steps = lab_steps(moves, lab=lab)
    start_s = lab_prediction(steps[0].before, lab=lab)[1].total_s
    ends = [lab_prediction(st.after, lab=lab)[1].total_s for st in steps]
    if start_s < min(ends):
        lines.append(_TEXT.render("lab_no_gain", us=start_s * 1e6))
    lines.append(_TEXT.render("lab_measure"))
    return Claim("\n".join(lines))


# --- claims on the plan tables -----------------------------------------------------------------


def variant_claim(table: pd.DataFrame) -> Claim:
    """What the model variants change, read from :func:`variant_table`.

    Returns:
        Markdown: whether the best tile differs between variants, and the range of waves and
        wave efficiency.
    """
    tiles = table["best_tile"].unique()
    w, e = table["waves"], table["wave_efficiency"]
    return _TEXT.claim(
        "variant",
        tiles=list(tiles),
        variants=len(table),
        waves_min=w.min(),
        waves_max=w.max(),
        efficiency_min=e.min(),
        efficiency_max=e.max(),
    )


def _tiles_by(table: pd.DataFrame, fixed: str) -> list[str]:
    """For each value of ``fixed`` (``batch`` or ``seq``), the tiles along the other axis."""
    other = "batch" if fixed == "seq" else "seq"
    out = []
    for value, g in table["best_tile"].groupby(level=fixed):
        if g.nunique() > 1:
            out.append(
                _TEXT.render(
                    "tiles_by",
                    fixed=fixed,
                    value=value,
                    other=other,
                    along=[str(v) for v in g.index.get_level_values(other)],
                    tiles=list(g),
                )
            )
    return out


def shape_takeaway_claim(plans: pd.DataFrame, variants: pd.DataFrame) -> Claim:
    """Which of batch, sequence and model width move the best tile, read from the tables.

    Returns:
        A Markdown bullet: the rows where batch (at a fixed sequence) and sequence (at a fixed
        batch) change the tile, and whether the variants' tiles differ.
    """
    by_batch = _tiles_by(plans, "seq")  # the tile along batch, at one sequence length
    by_seq = _tiles_by(plans, "batch")  # the tile along the sequence, at one batch
    moved = [name for name, rows in (("batch", by_batch), ("sequence", by_seq)) if rows]
    return _TEXT.claim(
        "shape_takeaway",
        moved=moved,
        where=[rows[0] for rows in (by_batch, by_seq) if rows],
        width_moves=variants["best_tile"].nunique() > 1,
    )


def _forced_ratio(
    model: str, hardware_name: str, kernel: str, tile: Tiling, batch: int, seq: int
) -> float:
    """Predicted time of ``kernel`` at (batch, seq) with ``tile``'s shape forced, over its best."""
    own = mapping(model, hardware_name, batch=batch, seq=seq).kernel(kernel)
    forced = TileOverride(pattern=kernel, m=tile.tile_m, n=tile.tile_n, k=tile.tile_k)
    _, cost = rank(own.kernel, hardware(hardware_name), MapOptions(tiles=(forced,)), k=1)[0]
    return cost.total_s / own.cost.total_s


def static_plan_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    tuned_at: tuple[int, int] = (1, 16),
    shapes: tuple[tuple[int, int], ...] = ((8, 128), (1, 2048), (64, 2048)),
    kernel: str = "layers.0.mlp.up_proj",
) -> Claim:
    """The cost of shipping the tile tuned at one shape for every shape, predicted.

    The best tile at ``tuned_at`` (batch, tokens) is forced at each of ``shapes`` (stages and
    split-K still searched) and set against that shape's own best; and the other way round, the
    best tile of the last shape forced at ``tuned_at``.

    Returns:
        A Markdown bullet: per shape, the shipped tile's predicted time over the best tile's,
        and the reverse ratio.
    """
    tile = mapping(model, hardware_name, batch=tuned_at[0], seq=tuned_at[1]).kernel(kernel).tiling
    parts = [
        _TEXT.render(
            "static_part",
            ratio=_forced_ratio(model, hardware_name, kernel, tile, b, s),
            batch=b,
            seq=s,
        )
        for b, s in shapes
    ]
    last = (
        mapping(model, hardware_name, batch=shapes[-1][0], seq=shapes[-1][1]).kernel(kernel).tiling
    )
    back = _forced_ratio(model, hardware_name, kernel, last, *tuned_at)
    cls = (
        mapping(model, hardware_name, batch=tuned_at[0], seq=tuned_at[1])
        .kernel(kernel)
        .cost.bottleneck
    )
    return _TEXT.claim(
        "static_plan",
        batch=tuned_at[0],
        seq=tuned_at[1],
        tile=tile.shape,
        parts=parts,
        last_batch=shapes[-1][0],
        last_seq=shapes[-1][1],
        last_tile=last.shape,
        free=back < 1.005,  # NOTE: within half a percent the tile costs nothing
        back=back,
        bottleneck=cls,
    )


# --- claims on a measured run (not checked by nbval: times differ between runs) ---------------


def numpy_claim(
    result: TuneResult,
    model: str,
    hardware_name: str,
    *,
    seq: int = 64,
    kernel: str = "layers.0.mlp.up_proj",
) -> Claim:
    """Whether the measured order follows the number of tile products NumPy runs.

    The execution engine runs ``ceil(M / tile_m) x ceil(N / tile_n) x ceil(K / tile_k)``
    small matrix products for a GEMM (``workbench.execution.gemm``); on a host that count, not
    on-chip reuse, is what a tile changes.

    Args:
        result: An :func:`autotune_kernel` result of ``kernel`` (``model`` at ``seq`` tokens).
        model: Preset name.
        hardware_name: The profile the cost model ranked for.
        seq: Tokens.
        kernel: Kernel name.

    Returns:
        A Markdown sentence: each candidate's product count and measured rank, and whether the
        fewest products was the fastest and the model's pick won.
    """
    cs = result.candidates
    if not cs:
        return _TEXT.claim("numpy_none")
    g = mapping(model, hardware_name, seq=seq).kernel(kernel).kernel.gemm
    if g is None:
        raise WorkbenchError(f"numpy_claim: {kernel} is not a GEMM")
    calls = {
        c.tiling.shape: math.ceil(g.m / c.tiling.tile_m)
        * math.ceil(g.n / c.tiling.tile_n)
        * math.ceil(g.k / c.tiling.tile_k)
        for c in cs
    }
    parts = [
        _TEXT.render(
            "numpy_part",
            shape=c.tiling.shape,
            products=calls[c.tiling.shape],
            rank=int(c.measured_rank),
        )
        for c in cs
    ]
    fewest = min(cs, key=lambda c: calls[c.tiling.shape])
    pick = next(c for c in cs if c.predicted_rank == 1)
    return _TEXT.claim(
        "numpy",
        backend=result.backend,
        parts=parts,
        follows=fewest.measured_rank == 1,
        hardware=hardware_name,
        won=pick.measured_rank == 1,
    )


def measured_pitfall_claim(result: TuneResult, hardware_name: str) -> Claim:
    """The run-to-run spread and the host-to-device gap of a measured run.

    Returns:
        Markdown bullets: the spread of the model's pick's timed runs (slowest over fastest),
        and its measured time against the cost model's prediction for ``hardware_name``.
    """
    pick = next(c for c in result.candidates if c.predicted_rank == 1)
    samples = pick.measured.samples
    spread = max(samples) / min(samples) if samples and min(samples) > 0 else 1.0
    gap = pick.measured.median_s / pick.predicted_s if pick.predicted_s else 0.0
    return _TEXT.claim(
        "measured_pitfall",
        runs=len(samples),
        spread=spread,
        backend=result.backend,
        gap=gap,
        hardware=hardware_name,
    )


# --- exercise 3: tiles and waves from first principles ----------------------------------------


def check_waves(
    answer: tuple[int, int],
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    batch: int = 1,
    seq: int = 2048,
    kernel: str = "layers.0.mlp.up_proj",
    strict: bool | None = None,
) -> CheckResult:
    """Check ``(tiles, waves)`` of ``kernel``'s searched tiling at one shape.

    The expected values are the mapper's (``tiling.tiles``, ``tiling.waves``); the learner
    derives them from the GEMM's shape, the tile in the plan table and the core count.
    """
    t = mapping(model, hardware_name, batch=batch, seq=seq).kernel(kernel).tiling
    return compare(
        f"tiles_and_waves[{kernel},b{batch},s{seq}]",
        answer,
        (t.tiles, t.waves),
        **_TEXT.hints("waves"),
        strict=strict,
    )
